#pragma once
// SavepointObserver: whoever waits for a pipeline's savepoint (an operator's TriggerSavepoint
// stream) and wants its progress.
// Threading: OnSavepointUpdate runs on the pipeline's strand; it must not block.

#include <cstdint>
#include <string>

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
