#include "api/proto_convert.h"

#include <algorithm>

namespace ckpt {

v1::CheckpointKind ToProto(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint: return v1::CHECKPOINT_KIND_CHECKPOINT;
    case CheckpointKind::kSavepoint: return v1::CHECKPOINT_KIND_SAVEPOINT;
    case CheckpointKind::kSavepointAndStop: return v1::CHECKPOINT_KIND_SAVEPOINT_AND_STOP;
  }
  return v1::CHECKPOINT_KIND_UNSPECIFIED;
}

v1::PipelineState ToProto(PipelineState state) {
  switch (state) {
    case PipelineState::kWaitingForTasks: return v1::PIPELINE_STATE_WAITING_FOR_TASKS;
    case PipelineState::kRunning: return v1::PIPELINE_STATE_RUNNING;
    case PipelineState::kPaused: return v1::PIPELINE_STATE_PAUSED;
    case PipelineState::kFailed: return v1::PIPELINE_STATE_FAILED;
    case PipelineState::kStopped: return v1::PIPELINE_STATE_STOPPED;
    case PipelineState::kUnreadable: return v1::PIPELINE_STATE_UNREADABLE;
  }
  return v1::PIPELINE_STATE_UNSPECIFIED;
}

void ToProto(const OutboundMessage& message, v1::CoordinatorMessage* out) {
  if (auto* m = std::get_if<WelcomeMessage>(&message)) {
    auto* w = out->mutable_welcome();
    w->set_session_id(std::to_string(m->session));
    w->set_generation(m->info.generation);
    w->set_state(ToProto(m->info.state));
    w->set_last_completed_checkpoint_id(m->info.last_completed_checkpoint_id);
    w->set_last_completed_kind(ToProto(m->info.last_completed_kind));
    w->set_heartbeat_interval_ms(m->heartbeat_interval_ms);
    w->set_lease_ttl_ms(m->lease_ttl_ms);
    const RestorePoint& point = m->info.restore;
    if (point.checkpoint_id > 0) {
      auto* r = w->mutable_restore();
      r->set_checkpoint_id(point.checkpoint_id);
      r->set_kind(ToProto(point.kind));
      r->set_location(point.location);
      r->set_source_job_id(point.source.job_id);
      r->set_source_pipeline_id(point.source.pipeline_id);
      r->set_rescaled(point.rescaled);
      r->set_operator_set(point.operator_set);
      r->set_position(point.position);
      r->set_commit_pending(point.commit_pending);
      auto& states = *r->mutable_task_states();
      for (const auto& [task, state] : point.task_states) ToProto(state, &states[task]);
    }
    w->mutable_retained_checkpoint_ids()->Add(m->info.retained_checkpoint_ids.begin(),
                                              m->info.retained_checkpoint_ids.end());
    w->set_last_committed_checkpoint_id(m->info.last_committed_checkpoint_id);
    w->set_restore_withheld(m->info.restore_withheld);
  } else if (auto* m = std::get_if<SendTrigger>(&message)) {
    auto* t = out->mutable_trigger();
    t->set_checkpoint_id(m->checkpoint_id);
    t->set_kind(ToProto(m->kind));
    t->set_timestamp_ms(m->timestamp_ms);
    t->set_generation(m->generation);
    t->set_target(m->target);
    t->set_position(m->position);
  } else if (auto* m = std::get_if<SendAbort>(&message)) {
    auto* a = out->mutable_abort();
    a->set_checkpoint_id(m->checkpoint_id);
    a->set_reason(m->reason);
  } else if (auto* m = std::get_if<SendComplete>(&message)) {
    auto* c = out->mutable_complete();
    c->set_checkpoint_id(m->checkpoint_id);
    c->set_kind(ToProto(m->kind));
    c->set_commit(m->commit);
  } else if (auto* m = std::get_if<SendRelease>(&message)) {
    out->mutable_release()->mutable_checkpoint_ids()->Add(m->checkpoint_ids.begin(),
                                                          m->checkpoint_ids.end());
  } else if (auto* m = std::get_if<SendState>(&message)) {
    auto* c = out->mutable_state();
    c->set_state(m->state ? ToProto(*m->state) : v1::PIPELINE_STATE_UNSPECIFIED);
    c->set_reason(m->reason);
  } else if (auto* m = std::get_if<SendSavepointRefused>(&message)) {
    out->mutable_savepoint_refused()->set_reason(m->reason);
  } else if (auto* m = std::get_if<SendAllCommitted>(&message)) {
    out->mutable_all_committed()->set_checkpoint_id(m->checkpoint_id);
  }
}

void ToProto(const TaskState& state, v1::TaskState* out) {
  out->set_uri(state.uri);
  out->set_size_bytes(state.size_bytes);
  out->set_checksum(state.checksum);
}

TaskState FromProto(const v1::TaskState& state) {
  return TaskState{state.uri(), state.size_bytes(), state.checksum()};
}

AckFigures FiguresFromProto(const v1::Ack& ack) {
  auto figure = [](int64_t value) { return std::max<int64_t>(value, 0); };
  return AckFigures{figure(ack.sync_duration_ms()), figure(ack.async_duration_ms()),
                    figure(ack.alignment_duration_ms()),
                    figure(ack.bytes_processed_during_alignment())};
}

void StampEpoch(int64_t epoch, v1::CoordinatorMessage* out) {
  if (epoch == 0) return;  // the embedded store: the field stays unset
  if (out->has_welcome()) out->mutable_welcome()->set_leader_epoch(epoch);
  if (out->has_trigger()) out->mutable_trigger()->set_leader_epoch(epoch);
}

}  // namespace ckpt
