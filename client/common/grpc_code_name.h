#pragma once
// gRPC status codes by name ("NOT_FOUND"), for the SDK's and ckptctl's messages.

#include <grpcpp/support/status_code_enum.h>

namespace ckpt::cli {

const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace ckpt::cli
