#pragma once
// Checks a PipelineSpec against itself. Used by the config loader and the admin API alike, so a
// pipeline is held to the same rules whichever way it arrives.

#include <string>

#include "common/status.h"
#include "core/types.h"

namespace ckpt {

// Limits on ids: printable, no control characters, not empty, at most this many bytes.
inline constexpr size_t kMaxIdBytes = 256;
inline constexpr size_t kMaxTasksPerPipeline = 100000;
inline constexpr int64_t kMinIntervalMs = 10;
inline constexpr int64_t kMaxDurationMs = 7LL * 24 * 3600 * 1000;  // a week
inline constexpr int32_t kMaxRetained = 100000;

// OK, or INVALID_ARGUMENT naming `what` ("job_id", "task_ids[3]") and why.
Status ValidateId(const std::string& id, const std::string& what);
Status ValidateSpec(const PipelineSpec& spec);

}  // namespace ckpt
