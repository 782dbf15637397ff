#include "api/admin_convert.h"

#include <map>

#include "api/proto_convert.h"

namespace ckpt {

namespace {

v1::CheckpointStatus ToProto(CheckpointStatus s) {
  switch (s) {
    case CheckpointStatus::kPending: return v1::CHECKPOINT_STATUS_PENDING;
    case CheckpointStatus::kCompleted: return v1::CHECKPOINT_STATUS_COMPLETED;
    case CheckpointStatus::kFailed: return v1::CHECKPOINT_STATUS_FAILED;
    case CheckpointStatus::kExpired: return v1::CHECKPOINT_STATUS_EXPIRED;
    case CheckpointStatus::kAborted: return v1::CHECKPOINT_STATUS_ABORTED;
  }
  return v1::CHECKPOINT_STATUS_UNSPECIFIED;
}

}  // namespace

PipelineSpec SpecFromCreate(const v1::PipelineSpec& proto, const PipelineDefaults& defaults) {
  PipelineSpec spec;
  spec.key = {proto.job_id(), proto.pipeline_id()};
  spec.task_ids.assign(proto.task_ids().begin(), proto.task_ids().end());
  spec.interval_ms = proto.has_interval_ms() ? proto.interval_ms() : defaults.interval_ms;
  spec.timeout_ms = proto.has_timeout_ms() ? proto.timeout_ms() : defaults.timeout_ms;
  spec.min_pause_ms = proto.has_min_pause_ms() ? proto.min_pause_ms() : defaults.min_pause_ms;
  spec.tolerable_failures =
      proto.has_tolerable_failures() ? proto.tolerable_failures() : defaults.tolerable_failures;
  spec.retained = proto.has_retained() ? proto.retained() : defaults.retained;
  spec.position_interval = proto.position_interval();  // no daemon default: 0, time alone
  spec.commit_timeout_ms = proto.commit_timeout_ms();  // no daemon default: 0, no commit phase
  spec.max_overhead = proto.max_overhead();            // 0: no adaptive interval
  spec.max_interval_ms = proto.max_interval_ms();
  spec.alignment_group = proto.alignment_group();
  return spec;
}

PipelineSpec SpecFromUpdate(const v1::PipelineSpec& proto, const PipelineSpec& current) {
  PipelineSpec spec = current;
  if (proto.task_ids_size() > 0)
    spec.task_ids.assign(proto.task_ids().begin(), proto.task_ids().end());
  if (proto.has_interval_ms()) spec.interval_ms = proto.interval_ms();
  if (proto.has_timeout_ms()) spec.timeout_ms = proto.timeout_ms();
  if (proto.has_min_pause_ms()) spec.min_pause_ms = proto.min_pause_ms();
  if (proto.has_tolerable_failures()) spec.tolerable_failures = proto.tolerable_failures();
  if (proto.has_retained()) spec.retained = proto.retained();
  if (proto.has_position_interval()) spec.position_interval = proto.position_interval();
  if (proto.has_commit_timeout_ms()) spec.commit_timeout_ms = proto.commit_timeout_ms();
  if (proto.has_max_overhead()) spec.max_overhead = proto.max_overhead();
  if (proto.has_max_interval_ms()) spec.max_interval_ms = proto.max_interval_ms();
  // An update leaves the group alone unless it names one (UpdateSpec refuses a different one).
  if (!proto.alignment_group().empty()) spec.alignment_group = proto.alignment_group();
  return spec;
}

void ToProto(const PipelineStatus& s, v1::Pipeline* out) {
  if (!s.state_reason.empty()) out->set_state_reason(s.state_reason);
  auto* spec = out->mutable_spec();
  spec->set_job_id(s.spec.key.job_id);
  spec->set_pipeline_id(s.spec.key.pipeline_id);
  for (const auto& t : s.spec.task_ids) spec->add_task_ids(t);
  out->set_task_ids_omitted(s.spec.task_ids.empty() && s.expected_tasks > 0);
  spec->set_interval_ms(s.spec.interval_ms);
  spec->set_timeout_ms(s.spec.timeout_ms);
  spec->set_min_pause_ms(s.spec.min_pause_ms);
  spec->set_tolerable_failures(s.spec.tolerable_failures);
  spec->set_retained(s.spec.retained);
  spec->set_position_interval(s.spec.position_interval);
  spec->set_alignment_group(s.spec.alignment_group);
  spec->set_commit_timeout_ms(s.spec.commit_timeout_ms);
  spec->set_max_overhead(s.spec.max_overhead);
  spec->set_max_interval_ms(s.spec.max_interval_ms);
  out->set_effective_interval_ms(s.effective_interval_ms);
  out->set_effective_interval_reason(s.effective_interval_reason);
  out->set_committing_checkpoint_id(s.committing_checkpoint_id);
  out->set_last_committed_checkpoint_id(s.last_committed_checkpoint_id);
  out->set_state(ckpt::ToProto(s.state));
  out->set_generation(s.generation);
  out->set_expected_tasks(s.expected_tasks);
  out->set_registered_tasks(s.registered_tasks);
  for (const auto& t : s.missing_tasks) out->add_missing_tasks(t);
  out->set_missing_tasks_total(s.missing_tasks_total);
  out->set_pending_checkpoint_id(s.pending_checkpoint_id);
  out->set_last_completed_checkpoint_id(s.last_completed_checkpoint_id);
  out->set_last_completed_at_ms(s.last_completed_at_ms);
  out->set_completed_count(s.counters.completed_count);
  out->set_failed_count(s.counters.failed_count);
  out->set_expired_count(s.counters.expired_count);
  out->set_consecutive_failures(s.counters.consecutive_failures);
  out->set_from_config(s.from_config);
  if (s.restore.checkpoint_id > 0) {
    auto* r = out->mutable_restore();
    r->set_checkpoint_id(s.restore.checkpoint_id);
    r->set_kind(ckpt::ToProto(s.restore.kind));
    r->set_location(s.restore.location);
    r->set_source_job_id(s.restore.source.job_id);
    r->set_source_pipeline_id(s.restore.source.pipeline_id);
    r->set_rescaled(s.restore.rescaled);
    r->set_operator_set(s.restore.operator_set);
    r->set_position(s.restore.position);
    r->set_commit_pending(s.restore.commit_pending);
  }
}

void UnreadableToProto(const UnreadableRecord& record, v1::Pipeline* out) {
  out->mutable_spec()->set_job_id(record.pipeline.job_id);
  out->mutable_spec()->set_pipeline_id(record.pipeline.pipeline_id);
  out->mutable_spec()->set_alignment_group(record.group);
  out->set_state(v1::PIPELINE_STATE_UNREADABLE);
  out->set_state_reason(record.reason);
}

Result<CheckpointRef> RefFromProto(const v1::CheckpointRef& proto, const std::string& field) {
  if (auto s = ValidateId(proto.job_id(), field + ".job_id"); !s.ok()) return s;
  if (auto s = ValidateId(proto.pipeline_id(), field + ".pipeline_id"); !s.ok()) return s;
  if (proto.checkpoint_id() < 0) {
    return Status::InvalidArgument(field + ".checkpoint_id cannot be negative");
  }
  return CheckpointRef{{proto.job_id(), proto.pipeline_id()}, proto.checkpoint_id()};
}

void ToProto(const CompletedCheckpoint& c, int expected_tasks, v1::CheckpointInfo* out,
             bool with_states) {
  out->set_checkpoint_id(c.checkpoint_id);
  out->set_kind(ckpt::ToProto(c.kind));
  out->set_status(v1::CHECKPOINT_STATUS_COMPLETED);
  out->set_triggered_at_ms(c.triggered_at_ms);
  out->set_finished_at_ms(c.finished_at_ms);
  out->set_acked_tasks(static_cast<int32_t>(c.task_states.size()));
  out->set_expected_tasks(expected_tasks);
  out->set_location(c.location);
  out->set_position(c.position);
  out->set_alignment_group(c.alignment_group);
  out->set_commit_status(ToProto(c.commit_status));
  out->set_committed_at_ms(c.committed_at_ms);
  out->set_unrestorable(c.unrestorable);
  if (!with_states) return;
  for (const auto& [task, state] : c.task_states)
    ckpt::ToProto(state, &(*out->mutable_state())[task]);
}

v1::CommitStatus ToProto(CommitStatus status) {
  switch (status) {
    case CommitStatus::kNone: return v1::COMMIT_STATUS_NONE;
    case CommitStatus::kCommitting: return v1::COMMIT_STATUS_COMMITTING;
    case CommitStatus::kCommitted: return v1::COMMIT_STATUS_COMMITTED;
  }
  return v1::COMMIT_STATUS_NONE;
}

void ToProto(const RoundSummary& r, v1::CheckpointInfo* out) {
  out->set_checkpoint_id(r.checkpoint_id);
  out->set_kind(ckpt::ToProto(r.kind));
  out->set_status(ToProto(r.status));
  out->set_triggered_at_ms(r.triggered_at_ms);
  out->set_finished_at_ms(r.finished_at_ms);
  out->set_acked_tasks(r.acked_tasks);
  out->set_expected_tasks(r.expected_tasks);
  out->set_failure_reason(r.failure_reason);
  out->set_position(r.position);
}

namespace {

void ToProto(const AckFigures& f, v1::TaskCheckpointInfo* out) {
  out->set_sync_duration_ms(f.sync_duration_ms);
  out->set_async_duration_ms(f.async_duration_ms);
  out->set_alignment_duration_ms(f.alignment_duration_ms);
  out->set_bytes_processed_during_alignment(f.bytes_processed_during_alignment);
}

}  // namespace

void ToProto(const CheckpointDetail& detail, v1::CheckpointInfo* out) {
  ToProto(detail.round, out);
  out->set_location(detail.location);
  out->mutable_tasks()->Reserve(static_cast<int>(detail.tasks.size()));
  int waiting = 0;
  for (const TaskDetail& t : detail.tasks) {
    v1::TaskCheckpointInfo* task = out->add_tasks();
    task->set_task_id(t.task_id);
    task->set_worker_id(t.worker_id);
    task->set_acked_at_ms(t.acked_at_ms);
    if (t.acked_at_ms > 0) {
      ckpt::ToProto(t.state, task->mutable_state());
      ToProto(t.reported, task);
    } else if (detail.round.status == CheckpointStatus::kPending) {
      if (++waiting <= static_cast<int>(kMaxListedTaskNames)) out->add_pending_tasks(t.task_id);
    }
  }
  if (detail.round.status == CheckpointStatus::kPending) out->set_pending_tasks_total(waiting);
}

void AddTasks(const CompletedCheckpoint& checkpoint, v1::CheckpointInfo* out) {
  out->mutable_tasks()->Reserve(static_cast<int>(checkpoint.task_states.size()));
  auto figures = checkpoint.task_figures.begin();  // by task id, as task_states
  for (const auto& [task_id, state] : checkpoint.task_states) {
    v1::TaskCheckpointInfo* task = out->add_tasks();
    task->set_task_id(task_id);
    ckpt::ToProto(state, task->mutable_state());
    while (figures != checkpoint.task_figures.end() && figures->task_id < task_id) ++figures;
    if (figures == checkpoint.task_figures.end() || figures->task_id != task_id) continue;
    task->set_worker_id(figures->worker_id);
    task->set_acked_at_ms(figures->acked_at_ms);
    ToProto(figures->reported, task);
  }
}

void AddTaskCommitTimes(const std::vector<std::pair<std::string, int64_t>>& times,
                        v1::CheckpointInfo* out) {
  if (times.empty()) return;
  std::map<std::string, int64_t> by_task(times.begin(), times.end());
  for (v1::TaskCheckpointInfo& task : *out->mutable_tasks()) {
    if (auto it = by_task.find(task.task_id()); it != by_task.end()) {
      task.set_committed_at_ms(it->second);
    }
  }
}

static_assert(
    static_cast<int>(Holdup::kWaitingForAdmission) == v1::PIPELINE_HOLDUP_WAITING_FOR_ADMISSION &&
        static_cast<int>(Holdup::kCommitOverdue) == v1::PIPELINE_HOLDUP_COMMIT_OVERDUE &&
        static_cast<int>(Holdup::kCommitting) == v1::PIPELINE_HOLDUP_COMMITTING &&
        static_cast<int>(Holdup::kWaitingForGroup) == v1::PIPELINE_HOLDUP_WAITING_FOR_GROUP &&
        static_cast<int>(Holdup::kWaitingForPositions) ==
            v1::PIPELINE_HOLDUP_WAITING_FOR_POSITIONS &&
        static_cast<int>(Holdup::kWaitingMinPause) == v1::PIPELINE_HOLDUP_WAITING_MIN_PAUSE &&
        static_cast<int>(Holdup::kRoundSlow) == v1::PIPELINE_HOLDUP_ROUND_SLOW,
    "Holdup and PipelineHoldup must keep the same order");

void ToProto(const Explanation& e, const std::string& summary, v1::PipelineExplanation* out) {
  out->set_summary(summary);
  // The enums share their order (explanation.h and admin.proto).
  out->set_holdup(static_cast<v1::PipelineHoldup>(static_cast<int>(e.holdup)));
  out->set_state(ckpt::ToProto(e.state));
  out->set_state_reason(e.state_reason);
  out->set_state_since_ms(e.state_since_ms);
  out->set_pending_checkpoint_id(e.pending_checkpoint_id);
  if (e.pending_checkpoint_id > 0) out->set_pending_kind(ckpt::ToProto(e.pending_kind));
  out->set_pending_age_ms(e.pending_age_ms);
  out->set_timeout_ms(e.timeout_ms);
  out->set_stuck_threshold_ms(e.stuck_threshold_ms);
  out->set_recent_p95_duration_ms(e.recent_p95_ms);
  out->set_recent_rounds(e.recent_rounds);
  out->mutable_tasks()->Reserve(static_cast<int>(e.tasks.size()));
  for (const TaskHoldup& t : e.tasks) {
    v1::TaskHoldup* task = out->add_tasks();
    task->set_task_id(t.task_id);
    task->set_worker_id(t.worker_id);
    task->set_session_id(t.session);
    task->set_since_ms(t.since_ms);
    task->set_last_message_at_ms(t.last_message_at_ms);
  }
  out->set_tasks_total(e.tasks_total);
  out->set_next_trigger_in_ms(e.next_trigger_in_ms);
  out->set_interval_ms(e.interval_ms);
  out->set_last_completed_checkpoint_id(e.last_completed_checkpoint_id);
  out->set_last_completed_at_ms(e.last_completed_at_ms);
  out->set_position_needed(e.position_needed);
  out->set_alignment_group(e.alignment_group);
  out->set_group_pending_checkpoint_id(e.group_pending_checkpoint_id);
  for (const auto& [member, why] : e.group_holding) {
    ToProto(member, why, out->add_group_holding());
  }
  out->set_committing_checkpoint_id(e.committing_checkpoint_id);
  out->set_commit_age_ms(e.commit_age_ms);
  out->set_admission_rounds_in_flight(e.admission_rounds_in_flight);
  out->set_admission_bytes_in_flight(e.admission_bytes_in_flight);
  out->set_admission_cap(e.admission_cap);
  out->set_admission_cap_value(e.admission_cap_value);
  out->set_admission_waiting_ahead(e.admission_waiting_ahead);
  out->set_effective_interval_ms(e.effective_interval_ms);
  out->set_effective_interval_reason(e.effective_interval_reason);
  out->set_commit_timeout_ms(e.commit_timeout_ms);
}

void ToProto(const PendingSummary& p, v1::CheckpointInfo* out) {
  out->set_checkpoint_id(p.checkpoint_id);
  out->set_kind(ckpt::ToProto(p.kind));
  out->set_status(v1::CHECKPOINT_STATUS_PENDING);
  out->set_triggered_at_ms(p.triggered_at_ms);
  out->set_acked_tasks(p.acked_total);
  out->set_expected_tasks(p.expected_tasks);
  for (const auto& t : p.awaiting_tasks) out->add_pending_tasks(t);
  out->set_pending_tasks_total(p.awaiting_total);
  out->set_position(p.position);
}

AlignmentGroupUpdate GroupUpdateFromProto(const v1::AlignmentGroupSpec& proto) {
  AlignmentGroupUpdate update;
  update.name = proto.name();
  if (proto.has_interval_ms()) update.interval_ms = proto.interval_ms();
  if (proto.has_timeout_ms()) update.timeout_ms = proto.timeout_ms();
  if (proto.has_min_pause_ms()) update.min_pause_ms = proto.min_pause_ms();
  if (proto.has_position_interval()) update.position_interval = proto.position_interval();
  if (proto.has_commit_timeout_ms()) update.commit_timeout_ms = proto.commit_timeout_ms();
  if (proto.has_max_overhead()) update.max_overhead = proto.max_overhead();
  if (proto.has_max_interval_ms()) update.max_interval_ms = proto.max_interval_ms();
  return update;
}

void ToProto(const PipelineKey& member, const std::string& reason, v1::GroupMemberHoldup* out) {
  out->mutable_member()->set_job_id(member.job_id);
  out->mutable_member()->set_pipeline_id(member.pipeline_id);
  out->set_reason(reason);
}

void ToProto(const AlignmentGroupView& view, v1::AlignmentGroup* out) {
  const StoredGroup& g = view.group;
  auto* spec = out->mutable_spec();
  spec->set_name(g.spec.name);
  spec->set_interval_ms(g.spec.interval_ms);
  spec->set_timeout_ms(g.spec.timeout_ms);
  spec->set_min_pause_ms(g.spec.min_pause_ms);
  spec->set_position_interval(g.spec.position_interval);
  spec->set_commit_timeout_ms(g.spec.commit_timeout_ms);
  spec->set_max_overhead(g.spec.max_overhead);
  spec->set_max_interval_ms(g.spec.max_interval_ms);
  for (const PipelineKey& key : view.members) {
    auto* member = out->add_members();
    member->set_job_id(key.job_id);
    member->set_pipeline_id(key.pipeline_id);
  }
  out->set_from_config(g.from_config);
  out->set_last_round_id(g.progress.last_round_id);
  out->set_last_position(g.progress.last_position);
  out->set_last_completed_at_ms(g.progress.last_completed_at_ms);
  if (view.live) {
    out->set_pending_checkpoint_id(view.live->pending_checkpoint_id);
    for (const auto& [member, why] : view.live->holding) ToProto(member, why, out->add_holding());
    out->set_next_round_in_ms(view.live->next_trigger_in_ms);
    out->set_waiting_for_ids(view.live->waiting_for_ids);
    out->set_waiting_for_positions(view.live->waiting_for_positions);
  }
}

v1::SavepointStatus ToProto(SavepointPhase phase) {
  switch (phase) {
    case SavepointPhase::kQueued: return v1::SAVEPOINT_STATUS_QUEUED;
    case SavepointPhase::kInProgress: return v1::SAVEPOINT_STATUS_IN_PROGRESS;
    case SavepointPhase::kCompleted: return v1::SAVEPOINT_STATUS_COMPLETED;
    case SavepointPhase::kFailed: return v1::SAVEPOINT_STATUS_FAILED;
  }
  return v1::SAVEPOINT_STATUS_UNSPECIFIED;
}

}  // namespace ckpt
