#pragma once
// Checks a PipelineSpec against itself. Used by the config loader and the admin API alike, so a
// pipeline is held to the same rules whichever way it arrives.

#include <string>

#include "common/status.h"
#include "core/types.h"

namespace ckpt {

// Ids (job, pipeline, task, worker): valid UTF-8, 1 to kMaxIdBytes bytes, no control characters
// (C0, DEL, C1), no Unicode format characters (category Cf: U+200B, U+202E, ...), not "." or
// "..". Everything else is accepted (quotes, <, spaces) and escaped wherever it is printed.
inline constexpr size_t kMaxIdBytes = 256;
inline constexpr size_t kMaxTasksPerPipeline = 100000;
inline constexpr int64_t kMinIntervalMs = 10;
inline constexpr int64_t kMaxDurationMs = 7LL * 24 * 3600 * 1000;  // a week
inline constexpr int32_t kMaxRetained = 100000;

// OK, or INVALID_ARGUMENT naming `what` ("job_id", "task_ids[3]") and the rule broken.
Status ValidateId(const std::string& id, const std::string& what);
// A job or pipeline id: an id that also names paths (a savepoint's default location), so it has
// no "/" or "\" either.
Status ValidatePathId(const std::string& id, const std::string& what);

// Free text and URIs from workers and operators: bounded, so that one message copied to every
// stream of a pipeline (an abort's reason) or kept in the history stays small.
inline constexpr size_t kMaxReasonBytes = 1024;
inline constexpr size_t kMaxUriBytes = 4096;
// A savepoint target: empty (the default location) or at most kMaxUriBytes, no control characters.
Status ValidateSavepointTarget(const std::string& target);
// Cuts `text` to kMaxReasonBytes, saying so at the end.
std::string TruncateReason(std::string text);
// The rules of new input (the API, the config file). A spec read back from the store is held to
// the rules it was created under (`stored`): ids without control characters and of bounded
// length, but "/" and "." as the first release accepted them.
Status ValidateSpec(const PipelineSpec& spec, bool stored = false);
// An alignment group's: its name as a job id, its durations as a pipeline's, position_interval in
// [0, kMaxPosition].
Status ValidateGroupSpec(const AlignmentGroupSpec& spec);
// A group read back from the store: its spec, and its id counter and last round's id in
// 0..kMaxCheckpointId (a member's history could not hold an id above it).
Status ValidateStoredGroup(const StoredGroup& group);

// Checkpoint ids, generations and counters stay at or below this: far beyond any real use (a
// checkpoint a millisecond for a hundred million years), far enough below INT64_MAX that adding an
// id block or one more never overflows, and an id leaves two bits of an int64 free
// (PackedHistoryEntry).
inline constexpr int64_t kMaxCheckpointId = (int64_t{1} << 62) - 1;

// A pipeline read back from the store, held to the rules of API input: a valid spec, and ids,
// generation and counters in range. INVALID_ARGUMENT naming the field otherwise (the store reports
// it as damaged data).
Status ValidateStored(const StoredPipeline& stored);
// A checkpoint id of a stored history: in 1..kMaxCheckpointId. For a store that reads the
// histories after the records (ValidateStored checks those it is given).
Status ValidateHistoryId(int64_t checkpoint_id);

}  // namespace ckpt
