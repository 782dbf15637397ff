#pragma once
// PipelineMetrics: one pipeline's numbers as the per-pipeline series of /metrics show them
// (metrics.per_pipeline). Written by the pipeline's runner on its strand; read by a scrape from
// any thread, so a scrape never waits on a strand nor posts to one.
// Threading: safe for concurrent use without external synchronization (relaxed atomics; a scrape
// may see one counter a round ahead of another, which Prometheus tolerates).

#include <atomic>
#include <cstdint>

#include "core/types.h"

namespace ckpt {

struct PipelineMetrics {
  std::atomic<uint64_t> checkpoints_completed_total{0};
  std::atomic<uint64_t> checkpoints_failed_total{0};
  std::atomic<uint64_t> checkpoints_expired_total{0};
  std::atomic<int64_t> last_completed_at_ms{0};  // wall clock; 0 = none
  // Also for the web view's pipeline list, which reads them the same way (never a strand).
  std::atomic<int64_t> last_completed_id{0};  // 0 = none
  std::atomic<uint32_t> last_duration_ms{0};  // of that one; 0 when unknown (restarted)
  std::atomic<int> state{static_cast<int>(PipelineState::kWaitingForTasks)};
  std::atomic<bool> pending{false};
};

}  // namespace ckpt
