#include "sdk/grpc_status_code.h"

namespace ckpt::sdk::internal {

// A switch rather than a cast: a status read off the wire may carry a number gRPC never defined,
// and such a number must not become a StatusCode value that no ToString or policy knows.
StatusCode FromGrpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return StatusCode::kOk;
    case grpc::StatusCode::CANCELLED: return StatusCode::kCancelled;
    case grpc::StatusCode::UNKNOWN: return StatusCode::kUnknown;
    case grpc::StatusCode::INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return StatusCode::kDeadlineExceeded;
    case grpc::StatusCode::NOT_FOUND: return StatusCode::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return StatusCode::kAlreadyExists;
    case grpc::StatusCode::PERMISSION_DENIED: return StatusCode::kPermissionDenied;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return StatusCode::kResourceExhausted;
    case grpc::StatusCode::FAILED_PRECONDITION: return StatusCode::kFailedPrecondition;
    case grpc::StatusCode::ABORTED: return StatusCode::kAborted;
    case grpc::StatusCode::OUT_OF_RANGE: return StatusCode::kOutOfRange;
    case grpc::StatusCode::UNIMPLEMENTED: return StatusCode::kUnimplemented;
    case grpc::StatusCode::INTERNAL: return StatusCode::kInternal;
    case grpc::StatusCode::UNAVAILABLE: return StatusCode::kUnavailable;
    case grpc::StatusCode::DATA_LOSS: return StatusCode::kDataLoss;
    case grpc::StatusCode::UNAUTHENTICATED: return StatusCode::kUnauthenticated;
    default: break;
  }
  return StatusCode::kUnknown;
}

}  // namespace ckpt::sdk::internal
