#pragma once
// Conversions between the worker protocol's protos and the SDK's public types.

#include <cstddef>
#include <map>
#include <string>

#include "ckpt/v1/worker.pb.h"
#include "ckpt/worker.h"

namespace ckpt::sdk::internal {

v1::WorkerMessage MakeHello(const PipelineWorkerOptions& options, bool takeover);
v1::WorkerMessage MakeAck(int64_t checkpoint_id, std::string task_id, TaskStateInfo state,
                          const AckFigures& figures, int64_t position);
v1::WorkerMessage MakeDecline(int64_t checkpoint_id, std::string task_id, std::string reason,
                              bool expired, int64_t position);
v1::WorkerMessage MakeSavepointRequest(std::string target, bool stop);
v1::WorkerMessage MakeCommitted(int64_t checkpoint_id, std::string task_id);
// A restore_result; `reason` goes as ReasonForTheWire(reason, kMaxRestoreReasonBytes).
v1::WorkerMessage MakeRestoreResult(int64_t checkpoint_id, std::string task_id, bool ok,
                                    const std::string& reason);
// What the daemon keeps of a restore_result's reason.
inline constexpr size_t kMaxRestoreReasonBytes = 1024;
// At most `max_bytes` of `text`, cut on a character boundary, each byte that is not part of a
// valid UTF-8 sequence replaced by '?'.
std::string ReasonForTheWire(const std::string& text, size_t max_bytes);
v1::WorkerMessage MakeHeartbeat(const std::map<std::string, int64_t>& positions,
                                bool backlog = false);
v1::WorkerMessage MakeGoodbye();

CheckpointKind FromProto(v1::CheckpointKind kind);
PipelineState FromProto(v1::PipelineState state);
Welcome FromProto(const v1::Welcome& welcome);
Trigger FromProto(const v1::Trigger& trigger);

}  // namespace ckpt::sdk::internal
