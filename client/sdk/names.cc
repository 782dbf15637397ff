// Printable names of the SDK's enums (the names ckptctl and the docs use; status codes by gRPC's
// names).

#include "ckpt/worker.h"

namespace ckpt::sdk {

const char* ToString(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint: return "CHECKPOINT";
    case CheckpointKind::kSavepoint: return "SAVEPOINT";
    case CheckpointKind::kSavepointAndStop: return "SAVEPOINT_AND_STOP";
    case CheckpointKind::kUnspecified: break;
  }
  return "UNSPECIFIED";
}

const char* ToString(PipelineState state) {
  switch (state) {
    case PipelineState::kWaitingForTasks: return "WAITING_FOR_TASKS";
    case PipelineState::kRunning: return "RUNNING";
    case PipelineState::kPaused: return "PAUSED";
    case PipelineState::kFailed: return "FAILED";
    case PipelineState::kStopped: return "STOPPED";
    case PipelineState::kUnspecified: break;
  }
  return "UNSPECIFIED";
}

const char* ToString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: break;
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  // Also a value cast from a number no code has.
  return "UNKNOWN";
}

}  // namespace ckpt::sdk
