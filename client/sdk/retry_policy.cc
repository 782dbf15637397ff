#include "sdk/retry_policy.h"

namespace ckpt::sdk::internal {

StreamEndAction ClassifyStreamEnd(StatusCode code, std::string_view message) {
  if (code == StatusCode::kAborted &&
      message.substr(0, kRestoredPrefix.size()) == kRestoredPrefix) {
    return StreamEndAction::kRetry;
  }
  switch (code) {
    // The same hello cannot succeed: bad ids or task set, no credentials, no such service.
    case StatusCode::kInvalidArgument:
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
    case StatusCode::kUnimplemented:
    // Another stream took our tasks over: taking them back would make two workers fight.
    case StatusCode::kAborted: return StreamEndAction::kGiveUp;
    // No such pipeline: an operator may create it later.
    case StatusCode::kNotFound: return StreamEndAction::kRetrySlowly;
    // An UNREADABLE pipeline's hello: its stored record cannot be read until an operator deletes
    // and creates it again.
    case StatusCode::kFailedPrecondition: return StreamEndAction::kRetrySlowly;
    // UNAVAILABLE (daemon down or restarting), DEADLINE_EXCEEDED (lease expired), ALREADY_EXISTS
    // (our previous stream not yet seen dead), OK without our goodbye, and anything unexpected.
    default: return StreamEndAction::kRetry;
  }
}

}  // namespace ckpt::sdk::internal
