#pragma once
// ckpt-worker-sim --create: the pipelines it serves are created through the AdminService first.

#include <string>

#include "ckpt/v1/admin.pb.h"
#include "sim/sim_options.h"

namespace ckpt::sim {

// Pipeline `index` as --create asks for it: job `options.job`, pipeline "p<index>", tasks
// "0" .. "<tasks_per_pipeline - 1>", interval and timeout only when given (else the daemon's
// defaults apply).
v1::PipelineSpec SimPipelineSpec(const SimOptions& options, int index);
// With --group-size K: the alignment group of pipeline `index`, "<job>-g<index / K>".
std::string SimGroupName(const SimOptions& options, int index);

// Creates p0 .. p<pipelines - 1>, one CreatePipeline each, logging a line per pipeline on stderr
// ("created" or, for ALREADY_EXISTS, "exists"), over a channel secured by `security` (what
// options.security's files hold). Waits for the daemon up to --connect-timeout (10s when that is
// 0) per call. With several daemons (an HA group) each call follows the leader: a standby's refusal
// goes to the leader it names, an unreachable daemon passes to the next of the list. Returns "" on
// success, else one line naming the pipeline, the address and the daemon's answer. With
// --group-size the groups are created first (PutAlignmentGroup, one daemon only).
std::string CreatePipelines(const SimOptions& options, const cli::ChannelSecurity& security);

}  // namespace ckpt::sim
