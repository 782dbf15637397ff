#pragma once
// Proto <-> domain conversions for the worker protocol.

#include "ckpt/v1/worker.pb.h"
#include "core/types.h"
#include "runtime/session_sink.h"

namespace ckpt {

v1::CheckpointKind ToProto(CheckpointKind kind);
v1::PipelineState ToProto(PipelineState state);
// Fills `out` with the proto form of a domain message to a worker.
void ToProto(const OutboundMessage& message, v1::CoordinatorMessage* out);
// Sets `leader_epoch` on a welcome or trigger (the messages that carry it); others are left alone.
void StampEpoch(int64_t epoch, v1::CoordinatorMessage* out);
void ToProto(const TaskState& state, v1::TaskState* out);
TaskState FromProto(const v1::TaskState& state);
// The ack's optional figures; a negative one (nonsense) counts as not reported.
AckFigures FiguresFromProto(const v1::Ack& ack);

}  // namespace ckpt
