// What operators see: the pipeline's state and status, the pending round, and inside a round
// (docs/man/ckptctl-checkpoint.1, "get") each task's part of the pending round or of the newest
// failed one. Completed rounds are read from the store, which keeps their tasks' figures with
// their states. Queries only: nothing here changes the coordinator.
#include <algorithm>

#include "core/pipeline_coordinator.h"

namespace ckpt {

namespace {

// The acked tasks of a round as TaskDetails, by task id (`figures` in any order).
std::map<std::string, TaskDetail> AckedDetails(const std::map<std::string, TaskState>& acked,
                                               const std::vector<TaskFigures>& figures) {
  std::map<std::string, TaskDetail> details;
  for (const TaskFigures& f : figures) {
    auto state = acked.find(f.task_id);
    if (state == acked.end()) continue;
    details[f.task_id] =
        TaskDetail{f.task_id, f.worker_id, f.acked_at_ms, state->second, f.reported};
  }
  return details;
}

}  // namespace

std::optional<CheckpointDetail> PipelineCoordinator::DescribeCheckpoint(
    int64_t checkpoint_id) const {
  CheckpointDetail detail;
  const std::map<std::string, TaskState>* acked = nullptr;
  const std::vector<TaskFigures>* figures = nullptr;
  if (pending_ && pending_->id() == checkpoint_id) {
    RoundSummary& r = detail.round;
    r.checkpoint_id = pending_->id();
    r.kind = pending_->kind();
    r.status = CheckpointStatus::kPending;
    r.triggered_at_ms = pending_->triggered_at_ms();
    r.acked_tasks = static_cast<int>(pending_->acked().size());
    r.expected_tasks = static_cast<int>(expected_.size());
    r.position = pending_->position();
    detail.location = pending_->target();
    acked = &pending_->acked();
    figures = &pending_->figures();
  } else if (const Occasional& o = occasional_or_none();
             o.last_failed_tasks && o.last_failed_tasks->checkpoint_id == checkpoint_id &&
             !o.recent.empty() && o.recent.front().checkpoint_id == checkpoint_id) {
    detail.round = o.recent.front();
    acked = &o.last_failed_tasks->acked;
    figures = &o.last_failed_tasks->figures;
  } else {
    auto recent = std::find_if(o.recent.begin(), o.recent.end(), [&](const RoundSummary& r) {
      return r.checkpoint_id == checkpoint_id;
    });
    if (recent == o.recent.end()) return std::nullopt;
    detail.round = *recent;  // an older failed round: its tasks are no longer kept
    return detail;
  }
  std::map<std::string, TaskDetail> done = AckedDetails(*acked, *figures);
  // Every task the round waits for (or waited for), acked or not: the ones that did not ack
  // name the worker that holds them now. A failed round's acked tasks come along even when the
  // task set changed since (its end may be that change).
  std::set<std::string> tasks(expected_.begin(), expected_.end());
  for (const auto& [task, unused] : done) tasks.insert(task);
  detail.tasks.reserve(tasks.size());
  for (const std::string& task : tasks) {
    if (auto it = done.find(task); it != done.end()) {
      detail.tasks.push_back(std::move(it->second));
      continue;
    }
    TaskDetail waiting;
    waiting.task_id = task;
    if (auto session = sessions_.find(OwnerOf(task)); session != sessions_.end()) {
      waiting.worker_id = session->second.worker_id;
    }
    detail.tasks.push_back(std::move(waiting));
  }
  return detail;
}

std::string PipelineCoordinator::StateReason() const {
  const auto* failure = occasional_or_none().restore_failure.get();
  if (failure && !failure->why.empty()) return failure->why;
  std::string reason;
  switch (sticky_) {
    case StickyState::kPaused: reason = "paused by an operator"; break;
    case StickyState::kFailed:
      reason = "after " + std::to_string(counters_.consecutive_failures) +
               " consecutive failed checkpoints (tolerable_failures " +
               std::to_string(spec_.tolerable_failures) + ")";
      if (const auto& recent = occasional_or_none().recent;
          !recent.empty() && !recent.front().failure_reason.empty()) {
        reason += "; the last, " + std::to_string(recent.front().checkpoint_id) + ": " +
                  recent.front().failure_reason;
      }
      break;
    case StickyState::kStopped:
      reason = "by savepoint " + std::to_string(last_completed_id_);
      break;
    case StickyState::kActive: break;
  }
  if (failure && failure->reading_id != 0) {
    const std::string story = "choosing an older restore point: " + failure->what;
    return reason.empty() ? story : reason + "; " + story;
  }
  return reason;
}

Explanation PipelineCoordinator::Explain(int64_t stuck_threshold_ms) const {
  Explanation e;
  const SteadyTime now = clock_.SteadyNow();
  e.state = State();
  e.state_since_ms = sticky_since_ms_;
  e.timeout_ms = spec_.timeout_ms;
  e.interval_ms = spec_.interval_ms;
  e.effective_interval_ms = effective_interval_ms_;
  e.effective_interval_reason = EffectiveIntervalReason();
  e.recent_p95_ms = recent_durations_.P95Ms();
  e.recent_rounds = recent_durations_.count();
  e.stuck_threshold_ms = StuckThresholdMs(
      e.recent_p95_ms, stuck_threshold_ms > 0 ? stuck_threshold_ms : options_->stuck_threshold_ms);
  e.last_completed_checkpoint_id = last_completed_id_;
  e.last_completed_at_ms = last_completed_at_ms_;
  auto add_task = [&](const std::string& task, int64_t missing_since_ms) {
    ++e.tasks_total;
    if (e.tasks.size() == kMaxExplainedTasks) return;
    TaskHoldup t;
    t.task_id = task;
    t.since_ms = missing_since_ms;
    if (const SessionId owner = OwnerOf(task); owner != TaskOwners::kNobody) {
      if (auto s = sessions_.find(owner); s != sessions_.end()) {
        t.worker_id = s->second.worker_id;
        t.session = owner;
        t.since_ms = s->second.registered_at_ms;
      }
    }
    e.tasks.push_back(std::move(t));
  };

  e.state_reason = StateReason();
  if (sticky_ == StickyState::kPaused) {
    e.holdup = Holdup::kPaused;
  } else if (sticky_ == StickyState::kFailed) {
    e.holdup = Holdup::kFailed;
  } else if (sticky_ == StickyState::kStopped) {
    e.holdup = Holdup::kStopped;
  }
  if (pending_) {
    // A round under way is what an operator asks about first, whatever the state says next.
    e.pending_checkpoint_id = pending_->id();
    e.pending_kind = pending_->kind();
    e.pending_age_ms = std::chrono::duration_cast<Millis>(now - pending_->triggered_at()).count();
    if (!pending_->completing()) {
      for (const std::string& task : expected_) {
        if (!pending_->acked().count(task)) add_task(task, tasks_missing_since_ms_);
      }
    }
    if (e.holdup == Holdup::kNone && pending_->of_group() && pending_->completing()) {
      e.holdup = Holdup::kWaitingForGroup;  // its part is done: the other members hold it
    } else if (e.holdup == Holdup::kNone) {
      e.holdup =
          e.pending_age_ms >= e.stuck_threshold_ms ? Holdup::kRoundSlow : Holdup::kRoundPending;
    }
  }
  if (group_) {
    e.alignment_group = group_->name;
    e.timeout_ms = group_->timeout_ms;  // the group's policy replaces its own
    e.interval_ms = group_->interval_ms;
  }
  if (Committing()) {
    // The commit holds every new round, whatever else would next.
    const CommitPhase& phase = *commits_->phase;
    e.committing_checkpoint_id = phase.checkpoint_id();
    e.commit_age_ms = std::chrono::duration_cast<Millis>(now - phase.completed_at()).count();
    e.commit_timeout_ms = CommitTimeoutMs();
    if (e.holdup == Holdup::kNone) {
      e.holdup =
          phase.overdue() || (e.commit_timeout_ms > 0 && e.commit_age_ms >= e.commit_timeout_ms)
              ? Holdup::kCommitOverdue
              : Holdup::kCommitting;
      for (size_t i : phase.TasksLeft(phase.tasks_left())) {
        add_task(*(expected_.begin() + static_cast<std::ptrdiff_t>(i)), tasks_missing_since_ms_);
      }
    }
  }
  if (e.holdup != Holdup::kNone) return e;
  if (shutting_down_) {
    e.holdup = Holdup::kShuttingDown;
    return e;
  }
  if (!AllTasksRegistered()) {
    e.holdup = last_completed_id_ == 0 && task_owner_.ever_count() < expected_.size()
                   ? Holdup::kNeverAllTasks
                   : Holdup::kTasksMissing;
    for (const std::string& task : spec_.task_ids) {
      if (OwnerOf(task) == TaskOwners::kNobody) add_task(task, tasks_missing_since_ms_);
    }
    return e;
  }
  if (!store_writable_) {
    e.holdup = Holdup::kStoreUnwritable;
    return e;
  }
  if (group_) {
    // Its schedule, ids and position gate are the group's: the runtime adds what holds it.
    e.holdup = Holdup::kWaitingForGroup;
    return e;
  }
  if (ids_.waiting()) {
    e.holdup = Holdup::kWaitingForIds;
    return e;
  }
  if (!PositionsOpen() && !savepoints_.queued()) {
    e.holdup = Holdup::kWaitingForPositions;
    e.position_needed = positions_->gate().threshold();
    // Tasks that never reported first: they are the likelier cause.
    for (bool reported : {false, true}) {
      for (const std::string& task : spec_.task_ids) {
        const auto at = positions_->gate().PositionOf(task);
        if (at.has_value() != reported || (at && *at >= e.position_needed)) continue;
        add_task(task, 0);
      }
    }
    return e;
  }
  if (WaitingForAdmission()) {
    e.holdup = Holdup::kWaitingForAdmission;  // the runtime adds the line's figures
    return e;
  }
  if (armed_wakeup_) {
    e.next_trigger_in_ms =
        std::max<int64_t>(std::chrono::duration_cast<Millis>(*armed_wakeup_ - now).count(), 0);
  }
  // Min pause holds it when the round that ended last ends later than the interval would allow.
  if (last_finished_at_ && last_trigger_at_ && spec_.min_pause_ms > 0 &&
      *last_finished_at_ + Millis(spec_.min_pause_ms) > now &&
      *last_finished_at_ + Millis(spec_.min_pause_ms) >
          *last_trigger_at_ + Millis(effective_interval_ms_)) {
    e.holdup = Holdup::kWaitingMinPause;
  }
  return e;
}

PipelineState PipelineCoordinator::State() const {
  switch (sticky_) {
    case StickyState::kPaused: return PipelineState::kPaused;
    case StickyState::kFailed: return PipelineState::kFailed;
    case StickyState::kStopped: return PipelineState::kStopped;
    case StickyState::kActive: break;
  }
  return AllTasksRegistered() ? PipelineState::kRunning : PipelineState::kWaitingForTasks;
}

std::string PipelineCoordinator::EffectiveIntervalReason() const {
  return InForceReason(effective_interval_ms_, AdaptiveIntervalInputs());
}

PipelineStatus PipelineCoordinator::Describe(bool with_task_ids) const {
  PipelineStatus s;
  if (with_task_ids) {
    s.spec = spec_;
  } else {
    s.spec.key = spec_.key;
    s.spec.interval_ms = spec_.interval_ms;
    s.spec.timeout_ms = spec_.timeout_ms;
    s.spec.min_pause_ms = spec_.min_pause_ms;
    s.spec.tolerable_failures = spec_.tolerable_failures;
    s.spec.retained = spec_.retained;
    s.spec.commit_timeout_ms = spec_.commit_timeout_ms;
    s.spec.position_interval = spec_.position_interval;
    s.spec.alignment_group = spec_.alignment_group;
    s.spec.max_overhead = spec_.max_overhead;
    s.spec.max_interval_ms = spec_.max_interval_ms;
  }
  s.expected_tasks = static_cast<int>(expected_.size());
  s.state = State();
  s.generation = generation_;
  s.registered_tasks = static_cast<int>(task_owner_.held());
  s.missing_tasks = MissingTasks(kMaxListedTaskNames, &s.missing_tasks_total);
  s.pending_checkpoint_id = pending_ ? pending_->id() : 0;
  s.last_completed_checkpoint_id = last_completed_id_;
  s.last_completed_at_ms = last_completed_at_ms_;
  s.committing_checkpoint_id = CommittingId();
  s.last_committed_checkpoint_id = LastCommittedId();
  s.effective_interval_ms = effective_interval_ms_;
  s.effective_interval_reason = EffectiveIntervalReason();
  if (group_ && occasional_or_none().group_interval_ms > 0) {
    s.effective_interval_ms = occasional_or_none().group_interval_ms;
    s.effective_interval_reason =
        "alignment group's: " + occasional_or_none().group_interval_reason;
  }
  s.counters = counters_;
  s.sessions = static_cast<int>(sessions_.size());
  s.from_config = from_config_;
  s.restore = RestorePointFor({});
  s.restore.task_states.clear();
  // Pipeline.state_reason carries the restore's story (the other states' reasons are in `why`).
  if (occasional_or_none().restore_failure) s.state_reason = StateReason();
  return s;
}

std::optional<PendingSummary> PipelineCoordinator::Pending() const {
  if (!pending_) return std::nullopt;
  PendingSummary p;
  p.checkpoint_id = pending_->id();
  p.kind = pending_->kind();
  p.triggered_at_ms = pending_->triggered_at_ms();
  p.completing = pending_->completing();
  for (const auto& [task, state] : pending_->acked()) {
    if (p.acked_tasks.size() == kMaxListedTaskNames) break;
    p.acked_tasks.push_back(task);
  }
  p.acked_total = static_cast<int>(pending_->acked().size());
  if (!pending_->completing()) {
    for (const auto& task : expected_) {
      if (pending_->acked().count(task)) continue;
      ++p.awaiting_total;
      if (p.awaiting_tasks.size() < kMaxListedTaskNames) p.awaiting_tasks.push_back(task);
    }
  }
  p.expected_tasks = static_cast<int>(expected_.size());
  p.position = pending_->position();
  return p;
}

std::vector<std::string> PipelineCoordinator::MissingTasks(size_t max_names, int* total) const {
  std::vector<std::string> missing;
  const size_t count = expected_.size() - task_owner_.held();
  if (total) *total = static_cast<int>(count);
  for (const auto& task : spec_.task_ids) {
    if (missing.size() == std::min(max_names, count)) break;
    if (OwnerOf(task) == TaskOwners::kNobody) missing.push_back(task);
  }
  return missing;
}

}  // namespace ckpt
