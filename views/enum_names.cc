#include "views/enum_names.h"

namespace ckpt {
namespace {

// Protobuf's enum name without its type prefix; "" (unknown value) becomes "UNKNOWN(n)".
std::string Strip(const std::string& full_name, const std::string& prefix, int value) {
  if (full_name.empty()) return "UNKNOWN(" + std::to_string(value) + ")";
  if (full_name.compare(0, prefix.size(), prefix) == 0) return full_name.substr(prefix.size());
  return full_name;
}

}  // namespace

std::string ShortName(v1::PipelineState state) {
  return Strip(v1::PipelineState_Name(state), "PIPELINE_STATE_", state);
}

std::string ShortName(v1::CheckpointKind kind) {
  return Strip(v1::CheckpointKind_Name(kind), "CHECKPOINT_KIND_", kind);
}

std::string ShortName(v1::CheckpointStatus status) {
  return Strip(v1::CheckpointStatus_Name(status), "CHECKPOINT_STATUS_", status);
}

std::string ShortName(v1::CommitStatus status) {
  return Strip(v1::CommitStatus_Name(status), "COMMIT_STATUS_", status);
}

std::string ShortName(v1::PipelineHoldup holdup) {
  return Strip(v1::PipelineHoldup_Name(holdup), "PIPELINE_HOLDUP_", holdup);
}

std::string ShortName(v1::SavepointStatus status) {
  return Strip(v1::SavepointStatus_Name(status), "SAVEPOINT_STATUS_", status);
}

std::string RoleName(v1::DaemonRole role) {
  switch (role) {
    case v1::DAEMON_ROLE_UNSPECIFIED:
    case v1::DAEMON_ROLE_SINGLE: return "single";
    case v1::DAEMON_ROLE_LEADER: return "leader";
    case v1::DAEMON_ROLE_STANDBY: return "standby";
    default: return "unknown(" + std::to_string(static_cast<int>(role)) + ")";
  }
}

}  // namespace ckpt
