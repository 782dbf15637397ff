// Printable names of the SDK's enums (the names CONTRACT.md uses).

#include "ckpt/worker.h"
#include "common/grpc_code_name.h"

namespace ckpt::sdk {

const char* ToString(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint:
      return "CHECKPOINT";
    case CheckpointKind::kSavepoint:
      return "SAVEPOINT";
    case CheckpointKind::kSavepointAndStop:
      return "SAVEPOINT_AND_STOP";
    case CheckpointKind::kUnspecified:
      break;
  }
  return "UNSPECIFIED";
}

const char* ToString(PipelineState state) {
  switch (state) {
    case PipelineState::kWaitingForTasks:
      return "WAITING_FOR_TASKS";
    case PipelineState::kRunning:
      return "RUNNING";
    case PipelineState::kPaused:
      return "PAUSED";
    case PipelineState::kFailed:
      return "FAILED";
    case PipelineState::kStopped:
      return "STOPPED";
    case PipelineState::kUnspecified:
      break;
  }
  return "UNSPECIFIED";
}

const char* StatusCodeName(grpc::StatusCode code) { return cli::GrpcCodeName(code); }

}  // namespace ckpt::sdk
