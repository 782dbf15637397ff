#pragma once
// The one table where domain statuses become gRPC statuses (and back, for clients in tests).

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace ckpt {

inline grpc::StatusCode ToGrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case StatusCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kAborted: return grpc::StatusCode::ABORTED;
    case StatusCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
    case StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kDataLoss: return grpc::StatusCode::DATA_LOSS;
    case StatusCode::kUnauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
    case StatusCode::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
  }
  return grpc::StatusCode::UNKNOWN;
}

inline grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), status.message());
}

}  // namespace ckpt
