#include "rpc/admin_methods.h"

namespace ckpt {

Access AdminMethodAccess(std::string_view method) {
  static constexpr std::string_view kReads[] = {
      "GetPipeline",   "ListPipelines",   "ListCheckpoints",   "GetDaemonStatus",
      "GetCheckpoint", "ExplainPipeline", "GetAlignmentGroup", "ListAlignmentGroups"};
  for (std::string_view read : kReads) {
    if (method == read) return Access::kRead;
  }
  return Access::kMutate;
}

std::string_view AdminMethodName(std::string_view full_method) {
  constexpr std::string_view kPrefix = "/ckpt.v1.AdminService/";
  if (full_method.substr(0, kPrefix.size()) != kPrefix) return {};
  return full_method.substr(kPrefix.size());
}

}  // namespace ckpt
