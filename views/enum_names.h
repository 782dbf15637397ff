#pragma once
// The short enum names ckptctl prints and the docs use ("RUNNING", "SAVEPOINT_AND_STOP",
// "COMPLETED"), for tables and JSON alike.

#include <string>

#include "ckpt/v1/admin.pb.h"
#include "ckpt/v1/common.pb.h"

namespace ckpt {

// Values this build does not know print as "UNKNOWN(<number>)".
std::string ShortName(v1::PipelineState state);
std::string ShortName(v1::CheckpointKind kind);
std::string ShortName(v1::CheckpointStatus status);
std::string ShortName(v1::CommitStatus status);
std::string ShortName(v1::SavepointStatus status);
std::string ShortName(v1::PipelineHoldup holdup);

// "single", "leader" or "standby" (lowercase, as the JSON of `ckptctl status` has it). A daemon
// older than the role field says UNSPECIFIED: it has no HA, so "single".
std::string RoleName(v1::DaemonRole role);

}  // namespace ckpt
