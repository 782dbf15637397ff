#include "core/types.h"

namespace ckpt {

const char* PipelineStateName(PipelineState s) {
  switch (s) {
    case PipelineState::kWaitingForTasks: return "WAITING_FOR_TASKS";
    case PipelineState::kRunning: return "RUNNING";
    case PipelineState::kPaused: return "PAUSED";
    case PipelineState::kFailed: return "FAILED";
    case PipelineState::kStopped: return "STOPPED";
  }
  return "UNKNOWN";
}

const char* CheckpointKindName(CheckpointKind k) {
  switch (k) {
    case CheckpointKind::kCheckpoint: return "CHECKPOINT";
    case CheckpointKind::kSavepoint: return "SAVEPOINT";
    case CheckpointKind::kSavepointAndStop: return "SAVEPOINT_AND_STOP";
  }
  return "UNKNOWN";
}

const char* CheckpointStatusName(CheckpointStatus s) {
  switch (s) {
    case CheckpointStatus::kPending: return "PENDING";
    case CheckpointStatus::kCompleted: return "COMPLETED";
    case CheckpointStatus::kFailed: return "FAILED";
    case CheckpointStatus::kExpired: return "EXPIRED";
  }
  return "UNKNOWN";
}

}  // namespace ckpt
