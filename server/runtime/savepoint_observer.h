#pragma once
// SavepointObserver: whoever waits for a pipeline's savepoint (an operator's TriggerSavepoint
// stream) and wants its progress.
// Threading: OnSavepointUpdate runs on the pipeline's strand; it must not block.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/types.h"

namespace ckpt {

enum class SavepointPhase { kQueued, kInProgress, kCompleted, kFailed };

struct SavepointUpdate {
  PipelineKey key;
  int64_t savepoint_id = 0;  // 0 while queued
  SavepointPhase phase = SavepointPhase::kQueued;
  int acked_tasks = 0;
  int expected_tasks = 0;
  std::string location;
  std::string failure_reason;
  // kFailed because the request itself was refused (not started): its code (RESOURCE_EXHAUSTED
  // at limits.max_savepoints_per_pipeline, FAILED_PRECONDITION, ...); kOk otherwise.
  StatusCode refusal = StatusCode::kOk;

  bool final() const {
    return phase == SavepointPhase::kCompleted || phase == SavepointPhase::kFailed;
  }
  bool operator==(const SavepointUpdate&) const = default;
};

class SavepointObserver {
 public:
  virtual ~SavepointObserver() = default;
  // Progress, then exactly one final update (completed or failed); nothing after it.
  virtual void OnSavepointUpdate(const SavepointUpdate& update) = 0;
};

}  // namespace ckpt
