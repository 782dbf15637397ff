#pragma once
// What a worker does when its stream ends without it asking: one table, at the edge.

#include "ckpt/worker.h"

namespace ckpt::sdk::internal {

enum class StreamEndAction {
  kRetry,        // exponential backoff
  kRetrySlowly,  // at the maximum backoff: the cause is not expected to clear soon
  kGiveUp,       // stop for good and report
};

StreamEndAction ClassifyStreamEnd(StatusCode code);

}  // namespace ckpt::sdk::internal
