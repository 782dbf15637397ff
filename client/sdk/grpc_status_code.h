#pragma once
// gRPC's status code to the SDK's own (ckpt/worker.h): the public header does not name gRPC's, so
// every status that reaches the user or the retry policy is converted here, once.

#include <grpcpp/support/status_code_enum.h>

#include "ckpt/worker.h"

namespace ckpt::sdk::internal {

// The same code under the SDK's name; a value gRPC does not define becomes kUnknown.
StatusCode FromGrpc(grpc::StatusCode code);

}  // namespace ckpt::sdk::internal
