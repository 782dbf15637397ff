#pragma once
// The AdminService methods and the access each needs: the one table the handlers (through the
// Gatekeeper) and the audit log read, so that what counts as a mutation is written once.

#include <string_view>

#include "auth/access_policy.h"

namespace ckpt {

// kRead for Get*, List* and GetDaemonStatus, kMutate for the rest (unknown names included: a
// method added without an entry here needs the admin role and is audited).
Access AdminMethodAccess(std::string_view method);

// "/ckpt.v1.AdminService/DeletePipeline" -> "DeletePipeline"; "" for another service's method.
std::string_view AdminMethodName(std::string_view full_method);

}  // namespace ckpt
