#pragma once
// What a worker does when its stream ends without it asking: one table, at the edge.

#include <string_view>

#include "ckpt/worker.h"

namespace ckpt::sdk::internal {

enum class StreamEndAction {
  kRetry,        // exponential backoff
  kRetrySlowly,  // at the maximum backoff: the cause is not expected to clear soon
  kGiveUp,       // stop for good and report
};

// `message`: the status's text. ABORTED is a takeover (give up) unless the daemon ended the
// stream because an operator restored the pipeline ("restored to checkpoint ..."): then the
// worker comes back at once for its new restore point.
StreamEndAction ClassifyStreamEnd(StatusCode code, std::string_view message = {});

// The start of the message of a stream ended by RestorePipeline (docs/PROTOCOL.md, "Restore and
// release").
inline constexpr std::string_view kRestoredPrefix = "restored to checkpoint";

}  // namespace ckpt::sdk::internal
