#include "sdk/retry_policy.h"

namespace ckpt::sdk::internal {

StreamEndAction ClassifyStreamEnd(grpc::StatusCode code) {
  switch (code) {
    // The same hello cannot succeed: bad ids or task set, no credentials, no such service.
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::UNIMPLEMENTED:
    // Another stream took our tasks over: taking them back would make two workers fight.
    case grpc::StatusCode::ABORTED:
      return StreamEndAction::kGiveUp;
    // No such pipeline: an operator may create it later.
    case grpc::StatusCode::NOT_FOUND:
      return StreamEndAction::kRetrySlowly;
    // UNAVAILABLE (daemon down or restarting), DEADLINE_EXCEEDED (lease expired), ALREADY_EXISTS
    // (our previous stream not yet seen dead), OK without our goodbye, and anything unexpected.
    default:
      return StreamEndAction::kRetry;
  }
}

}  // namespace ckpt::sdk::internal
