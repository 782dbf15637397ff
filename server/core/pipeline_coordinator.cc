// Rounds and the schedule: when the next trigger is due, the trigger, acks, declines, timeouts,
// the store's completions, and the writes that record the pipeline's state. One concept over
// ~700 lines: a round's life from its trigger to its end, each handler a step of it; what a round
// holds is its own part (pending_round.h). Operators' calls are in
// pipeline_coordinator_operators.cc, sessions in pipeline_coordinator_sessions.cc, queries in
// pipeline_coordinator_inspect.cc.
#include "core/pipeline_coordinator.h"

#include <algorithm>

#include "common/mutex.h"
#include "common/name_list.h"
#include "core/path_segment.h"
#include "core/printable.h"
#include "core/spec_validation.h"

namespace ckpt {

// Every id a history may hold fits one: ValidateStored and ValidateStoredGroup bound the loaded
// counters, no id block is reserved beyond kMaxCheckpointId, and a member refuses a group's id
// above it (StartGroupRound).
static_assert(kMaxCheckpointId <= PackedHistoryEntry::kMaxId);

namespace {

std::chrono::microseconds Since(SteadyTime from, SteadyTime now) {
  return std::chrono::duration_cast<std::chrono::microseconds>(now - from);
}

bool IsSavepoint(CheckpointKind kind) { return kind != CheckpointKind::kCheckpoint; }

// An empty Actions with room for `n`. The handlers a round runs through on every interval (wakeup
// and trigger, last ack, commit) reserve what they usually push: an Action is a few hundred bytes,
// and growing the vector one push at a time would reallocate and move it several times per round.
Actions WithCapacity(size_t n) {
  Actions out;
  out.reserve(n);
  return out;
}

}  // namespace

PipelineCoordinator::PipelineCoordinator(const StoredPipeline& stored, const Clock& clock,
                                         const CoordinatorOptions& options)
    : clock_(clock),
      options_(SharedCoordinatorOptions(options)),
      spec_(stored.record.spec),
      expected_(spec_.task_ids.begin(), spec_.task_ids.end()),
      generation_(std::max<int64_t>(1, stored.record.generation)),
      sticky_(stored.record.sticky),
      counters_(stored.record.counters),
      last_completed_id_(stored.record.last_completed_id),
      last_completed_at_ms_(stored.record.last_completed_at_ms),
      last_completed_kind_(stored.record.last_completed_kind),
      from_config_(stored.record.from_config),
      spec_unsaved_(stored.spec_unsaved),
      // A member's ids come from its group, above its own counter: the newest it completed.
      ids_(stored.id_counter, stored.record.last_completed_id),
      history_(stored.history, stored.retained_from, stored.record.released_ids) {
  if (stored.record.restore_from && stored.restore_source) {
    restore_ = std::make_unique<const HeldRestorePoint>(spec_.key, stored.record.restore_from->key,
                                                        true, *stored.restore_source);
  } else if (stored.newest && stored.newest->checkpoint_id > 0) {
    restore_ =
        std::make_unique<const HeldRestorePoint>(spec_.key, spec_.key, false, *stored.newest);
  }
  restore_rescaled_ = RestoreSetDiffers();
  if (!stored.record.unrestorable_ids.empty()) {
    occasional().unrestorable = stored.record.unrestorable_ids;
    std::sort(occasional().unrestorable.begin(), occasional().unrestorable.end());
  }
  if (restore_ && restore_->other_source && stored.record.restore_from_failed) {
    // Another pipeline's checkpoint that failed to restore before the daemon stopped: still
    // FAILED, still withheld, until an operator restores the pipeline elsewhere.
    auto& failure = occasional().restore_failure;
    failure = std::make_unique<Occasional::RestoreFailure>();
    failure->checkpoint_id = restore_->checkpoint_id;
    failure->what = "restore of checkpoint " +
                    CheckpointRef{*restore_->other_source, restore_->checkpoint_id}.ToString() +
                    " failed before the daemon stopped";
    failure->why = failure->what +
                   "; no fallback: it is another pipeline's checkpoint (restore_from); choose a "
                   "restore point with ckptctl pipeline restore";
  }
  FixEffectiveInterval();
  SyncPositionGate();
  if (!expected_.empty()) tasks_missing_since_ms_ = clock_.WallMs();  // no stream yet
  const bool newest_committing =
      stored.newest && stored.newest->commit_status == CommitStatus::kCommitting &&
      stored.newest->checkpoint_id > stored.record.last_committed_id && !stored.record.restore_from;
  if (stored.record.last_committed_id > 0 || newest_committing) {
    Commits& c = commits();
    c.last_committed_id = stored.record.last_committed_id;
    c.last_committed_at_ms = stored.record.last_committed_at_ms;
    if (newest_committing) {
      // COMMITTING when the daemon stopped: the per-task marks were not durable, so every task is
      // asked again (its welcome carries commit_pending). Overdue counts from this start. Its
      // group (if any) is not known yet, and would not know the round: it marks alone.
      c.phase = NewCommitPhase(stored.newest->checkpoint_id, stored.newest->kind,
                               /*group_decides=*/false);
    }
  }
}

Actions PipelineCoordinator::Start(bool restarted) {
  Actions out;
  const SteadyTime now = clock_.SteadyNow();
  next_missing_warn_at_ = now + options_->missing_tasks_warn_interval;
  if (restarted) {
    BumpGeneration("daemon start", out);
    if (last_completed_at_ms_ > 0) {
      // The schedule continues from the last durable checkpoint, not from process start: map its
      // wall-clock time onto the steady clock.
      const Millis age{std::max<int64_t>(0, clock_.WallMs() - last_completed_at_ms_)};
      last_trigger_at_ = now - age;
      last_finished_at_ = now - age;
    }
  } else {
    Persist(out);
  }
  // Pins dropped while the daemon was down: what they spared outside `retained` goes now.
  if (restarted) DeleteUnpinnedOutsideWindow(out);
  // The last release may not have reached the workers before the daemon stopped.
  history_.OnStart(restarted);
  if (restore_ && !restore_->other_source && IsUnrestorable(restore_->checkpoint_id)) {
    // Its restore point was marked before the daemon stopped (a fallback is not stored: it is
    // found again, the same way, whatever the pipeline's state).
    auto& failure = occasional().restore_failure;
    failure = std::make_unique<Occasional::RestoreFailure>();
    failure->checkpoint_id = restore_->checkpoint_id;
    failure->what = "restore of " + std::to_string(restore_->checkpoint_id) +
                    " failed before the daemon stopped (marked unrestorable)";
    DecideRestoreFailure(out);
  }
  MaybeReserveIds(out);
  Rearm(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Schedule

SteadyTime PipelineCoordinator::ScheduledDue() const {
  // Never triggered: due at once (after the start offset). A fixed past time, not "now": a real
  // clock moves between the wakeup and this check, and "now" would then always lie a little ahead.
  SteadyTime due = start_hold_until_.value_or(SteadyTime{});
  if (last_trigger_at_) due = std::max(due, *last_trigger_at_ + Millis(effective_interval_ms_));
  return due;
}

IntervalInputs PipelineCoordinator::AdaptiveIntervalInputs() const {
  return IntervalInputs{spec_.interval_ms,         spec_.max_overhead,        spec_.max_interval_ms,
                        recent_durations_.count(), recent_durations_.P95Ms(), backlog_streams_ > 0};
}

void PipelineCoordinator::FixEffectiveInterval() {
  effective_interval_ms_ = EffectiveIntervalMs(AdaptiveIntervalInputs());
}

Actions PipelineCoordinator::OnBacklog(SessionId session, bool backlog) {
  Actions out;
  auto it = sessions_.find(session);
  if (it == sessions_.end() || it->second.backlog == backlog) return out;
  it->second.backlog = backlog;
  backlog_streams_ += backlog ? 1 : -1;
  // Applies from the next round's end (the interval is fixed when a round ends); said now.
  out.push_back(
      Log{LogLevel::kDebug,  // debug: a lag hovering at its threshold flips it often
          "worker " + Printable(it->second.worker_id) +
              (backlog ? " reports a backlog" : " caught up") +
              (spec_.max_interval_ms > 0 ? "" : " (no max_interval_ms: the interval stays)")});
  return out;
}

std::optional<SteadyTime> PipelineCoordinator::NextPeriodicDue() const {
  SteadyTime due = ScheduledDue();
  if (last_finished_at_) due = std::max(due, *last_finished_at_ + Millis(spec_.min_pause_ms));
  return due;
}

namespace {

struct OptionsRegistry {
  Mutex mu;
  // Few at once: the daemon's options, a reload's, a test's.
  std::vector<std::weak_ptr<const CoordinatorOptions>> alive CKPT_GUARDED_BY(mu);
};

}  // namespace

std::shared_ptr<const CoordinatorOptions> SharedCoordinatorOptions(
    const CoordinatorOptions& options) {
  static OptionsRegistry registry;
  MutexLock lock(registry.mu);
  auto& alive = registry.alive;
  std::erase_if(alive, [](const auto& weak) { return weak.expired(); });
  for (const auto& weak : alive) {
    if (auto shared = weak.lock(); shared && *shared == options) return shared;
  }
  auto made = std::make_shared<const CoordinatorOptions>(options);
  alive.push_back(made);
  return made;
}

void PipelineCoordinator::HoldForStartOffset() {
  const double fraction =
      start_slot_ != kNoStartSlot ? StartSlotFraction(start_slot_) : StartKeyFraction(spec_.key);
  if (auto hold = NewStartHold(clock_.SteadyNow(), start_hold_until_, last_trigger_at_,
                               spec_.interval_ms, fraction, options_->start_spread)) {
    start_hold_until_ = *hold;
  }
}

std::optional<SteadyTime> PipelineCoordinator::DesiredWakeup() const {
  if (shutting_down_) {
    // Only a COMMITTED mark's retry: a durable write still worth making in the grace period.
    if (!deleted_ && Committing()) return commits_->phase->mark_retry_at();
    return std::nullopt;
  }
  std::optional<SteadyTime> at;
  auto consider = [&at](std::optional<SteadyTime> t) {
    if (t && (!at || *t < *at)) at = t;
  };
  consider(ids_.retry_at());
  if (Committing()) {
    consider(commits_->phase->overdue_at());
    consider(commits_->phase->mark_retry_at());
  }
  if (const auto* queued = savepoints_.queued()) consider(queued->deadline);
  // Held by its state, or by a failed restore point being replaced (OnRestoreCandidate re-arms).
  if (sticky_ != StickyState::kActive || RestoreBlocked()) return at;
  if (!AllTasksRegistered()) {
    consider(next_missing_warn_at_);
  } else if (!pending_ && !Committing() && !ids_.waiting() && store_writable_ && !group_) {
    // A queued savepoint starts as soon as it can, ignoring interval, min pause and positions.
    // A round waiting in the admission line is woken by its admission (OnAdmitted), not the
    // timer; a savepoint asked meanwhile wakes it once, to move it ahead in the line.
    if (savepoints_.queued()) {
      if (admission_ != AdmissionState::kWaitingSavepoint) consider(SteadyTime{});
    } else if (admission_ == AdmissionState::kWaitingPeriodic) {
      // OnAdmitted re-drives it.
    } else if (PositionsOpen()) {
      consider(*NextPeriodicDue());
    } else {
      consider(positions_->next_warn_at());  // a report that opens the gate re-arms
    }
  }
  return at;
}

void PipelineCoordinator::Rearm(Actions& out) {
  SettleAdmission(out);
  std::optional<SteadyTime> want = DesiredWakeup();
  if (want == armed_wakeup_) return;
  armed_wakeup_ = want;
  if (want) {
    out.push_back(ArmWakeup{*want});
  } else {
    out.push_back(CancelWakeup{});
  }
}

Actions PipelineCoordinator::OnWakeup() {
  // A periodic trigger: RecordTriggerDelay, SendTrigger, ArmTimeout, Log (now and then ReserveIds).
  Actions out = WithCapacity(4);
  const SteadyTime now = clock_.SteadyNow();
  armed_wakeup_.reset();  // it fired; a stale fire only makes us re-evaluate, which is harmless
  if (ids_.TakeDueRetry(now)) MaybeReserveIds(out);
  MaybeWarnCommitOverdue(now, out);
  MaybeWriteCommitMark(out);
  if (savepoints_.queued() && now >= savepoints_.queued()->deadline) {
    FinishQueuedSavepoint("savepoint timed out before it could start", out);
  }
  if (!shutting_down_ && sticky_ == StickyState::kActive) {
    if (!AllTasksRegistered()) {
      if (now >= next_missing_warn_at_) {
        int total = 0;
        std::vector<std::string> missing = MissingTasks(kNamesListed, &total);
        out.push_back(Log{LogLevel::kWarn, "waiting for " + std::to_string(total) + " of " +
                                               std::to_string(expected_.size()) + " tasks: " +
                                               FirstNames(missing, static_cast<size_t>(total))});
        next_missing_warn_at_ = now + options_->missing_tasks_warn_interval;
      }
    } else if (!pending_ && !Committing() && !group_) {  // a member's rounds are its group's
      if (const auto* queued = savepoints_.queued()) {
        const std::string target = queued->target;  // TryTrigger takes it from the queue
        TryTrigger(queued->kind(), target, TriggerCause::kSavepoint, out);
      } else if (!PositionsOpen()) {
        WarnUnreportedPositions(now, out);
      } else if (auto due = NextPeriodicDue(); due && now >= *due) {
        TryTrigger(CheckpointKind::kCheckpoint, "", TriggerCause::kPeriodic, out);
      }
    }
  }
  Rearm(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Ids

void PipelineCoordinator::MaybeReserveIds(Actions& out) {
  if (group_) return;  // a member's ids are the group's
  ids_.MaybeReserve(options_->id_block, out);
}

Actions PipelineCoordinator::OnIdsReserved(int64_t counter) {
  Actions out;
  if (ids_.OnReserved(counter)) {
    // Re-drive the trigger that was waiting: a fresh wakeup evaluation does exactly that.
    Actions more = OnWakeup();
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  MaybeReserveIds(out);
  Rearm(out);
  return out;
}

Actions PipelineCoordinator::OnIdsReserveFailed(const Status& error) {
  Actions out;
  ids_.OnReserveFailed(clock_.SteadyNow() + options_->reserve_retry);
  out.push_back(Log{LogLevel::kError, "reserving checkpoint ids failed (" + error.ToString() +
                                          "); retrying in " +
                                          std::to_string(options_->reserve_retry.count()) + " ms"});
  Rearm(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rounds

bool PipelineCoordinator::TryTrigger(CheckpointKind kind, const std::string& target,
                                     TriggerCause cause, Actions& out) {
  if (pending_ || Committing() || shutting_down_ || sticky_ != StickyState::kActive ||
      !AllTasksRegistered() || !store_writable_ || RestoreBlocked()) {
    return false;
  }
  if (cause != TriggerCause::kManual && admission_ != AdmissionState::kAdmitted && AdmissionOn()) {
    // Ready, but the daemon caps the rounds in flight: it waits in line (OnAdmitted re-drives
    // this). A savepoint asked while its periodic round waited moves ahead.
    const bool savepoint = cause == TriggerCause::kSavepoint;
    const AdmissionState waiting =
        savepoint ? AdmissionState::kWaitingSavepoint : AdmissionState::kWaitingPeriodic;
    if (admission_ != waiting) {
      admission_ = waiting;
      out.push_back(AskAdmission{
          RequestForAdmission(savepoint ? AdmissionClass::kSavepoint : AdmissionClass::kPeriodic)});
    }
    return false;
  }
  const std::optional<int64_t> id = ids_.Take();
  if (!id) {
    // No durable id left: wait for the reservation, whose completion re-drives this trigger.
    MaybeReserveIds(out);
    out.push_back(Log{LogLevel::kDebug, "trigger waits for an id reservation"});
    return false;
  }
  const SteadyTime now = clock_.SteadyNow();
  if (cause == TriggerCause::kPeriodic) {
    // Due includes the start hold: the delay is how late the trigger came, not how long the
    // pipeline waited for its tasks or its offset. It counts from when the round could go (its
    // predecessor ended, min_pause passed); how long the predecessor held it past the interval's
    // due time is reported apart: the first is the scheduler's, the second the rounds'.
    if (auto due = NextPeriodicDue()) {
      const SteadyTime could_go = PeriodicDueWithPositions(*due);
      const SteadyTime scheduled = std::min(could_go, PeriodicDueWithPositions(ScheduledDue()));
      if (admission_ == AdmissionState::kAdmitted) {
        // It waited in the admission line since it was due: other pipelines' rounds held it
        // (ckptd_admission_wait_seconds has the wait alone), not the scheduler's lateness.
        out.push_back(RecordTriggerDelay{std::chrono::microseconds(0), Since(scheduled, now)});
      } else {
        out.push_back(RecordTriggerDelay{Since(could_go, now), Since(scheduled, could_go)});
      }
    }
  }
  PendingRound::Start round;
  round.id = *id;
  round.kind = kind;
  round.target = IsSavepoint(kind) ? SavepointLocation(target, round.id) : "";
  round.triggered_at = now;
  round.triggered_at_ms = clock_.WallMs();
  SteadyTime deadline = now + Millis(spec_.timeout_ms);
  if (cause == TriggerCause::kSavepoint) {
    if (std::optional<SavepointQueue::Request> asked = savepoints_.Take()) {
      deadline = asked->deadline;  // a savepoint's timeout counts from the request
      round.worker_asked = asked->worker_asked;
    }
  }
  round.deadline = deadline;
  round.requested_target = target;
  round.position = NextRoundPosition();
  last_trigger_at_ = now;
  out.push_back(SendTrigger{Sessions(), round.id, kind, round.triggered_at_ms, generation_,
                            round.target, round.position});
  // The timer first fires at the stuck threshold, when that comes before the deadline.
  const int64_t stuck_ms =
      StuckThresholdMs(recent_durations_.P95Ms(), options_->stuck_threshold_ms);
  const SteadyTime stuck_at = now + Millis(stuck_ms);
  round.stuck_noted = stuck_at >= deadline;  // the deadline comes first: no notice
  out.push_back(ArmTimeout{round.stuck_noted ? deadline : stuck_at, round.id});
  out.push_back(Log{LogLevel::kDebug, std::string("triggered ") + CheckpointKindName(kind) + " " +
                                          std::to_string(round.id)});
  pending_ = std::make_unique<PendingRound>(std::move(round));
  if (commits_) commits_->phase.reset();  // the last one's COMMITTED record: a new round is on
  MaybeReserveIds(out);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Admission

AdmissionRequest PipelineCoordinator::RequestForAdmission(AdmissionClass line) const {
  AdmissionRequest request;
  request.line = line;
  if (line == AdmissionClass::kPeriodic) {
    if (auto due = NextPeriodicDue()) request.due = *due;
  }
  request.rounds = 1;
  request.bytes = PredictedRoundBytes();
  return request;
}

Actions PipelineCoordinator::OnAdmitted() {
  Actions out;
  if (!WaitingForAdmission()) return out;  // it left meanwhile (the runtime drops most such)
  admission_ = AdmissionState::kAdmitted;
  return OnWakeup();  // triggers if it still can; Rearm leaves the admission if it did not
}

void PipelineCoordinator::SettleAdmission(Actions& out) {
  switch (admission_) {
    case AdmissionState::kNone: return;
    case AdmissionState::kAdmitted:
      if (pending_ && !pending_->of_group()) return;  // in flight until the round ends
      break;
    case AdmissionState::kWaitingPeriodic:
    case AdmissionState::kWaitingSavepoint: {
      // Still ready to trigger: it keeps its place. The schedule and the ids do not matter here
      // (it asked once due; an id reservation is quick).
      const bool ready = !pending_ && !Committing() && !shutting_down_ && !deleted_ && !group_ &&
                         sticky_ == StickyState::kActive && AllTasksRegistered() &&
                         store_writable_ && !RestoreBlocked();
      const bool savepoint_left =
          admission_ == AdmissionState::kWaitingSavepoint && !savepoints_.queued();
      // A periodic round also waits for its positions (savepoints do not).
      const bool gate_closed = admission_ == AdmissionState::kWaitingPeriodic && !PositionsOpen();
      if (ready && !savepoint_left && !gate_closed) return;
      break;
    }
  }
  admission_ = AdmissionState::kNone;
  out.push_back(LeaveAdmission{});
}

Actions PipelineCoordinator::OnTimeout(int64_t checkpoint_id) {
  Actions out;
  if (!pending_) return out;
  const PendingRound::Timer fired = pending_->OnTimer(checkpoint_id, clock_.SteadyNow());
  if (fired == PendingRound::Timer::kStale) return out;
  if (fired == PendingRound::Timer::kStuck) {
    out.push_back(RoundStuck{checkpoint_id});
    out.push_back(ArmTimeout{pending_->deadline(), checkpoint_id});
    return out;
  }
  const bool savepoint = IsSavepoint(pending_->kind());
  FailRound(CheckpointStatus::kExpired,
            "expired: " + std::to_string(expected_.size() - pending_->acked().size()) + " of " +
                std::to_string(expected_.size()) + " tasks did not acknowledge in time",
            savepoint ? FailureCause::kNotCounted : FailureCause::kCounted, out);
  Rearm(out);
  return out;
}

bool PipelineCoordinator::HoldsTask(SessionId session, int64_t checkpoint_id,
                                    const std::string& task_id, const char* what, Actions& out) {
  if (OwnerOf(task_id) == session) return true;
  out.push_back(IgnoredMessage{IgnoredReason::kUnownedTask});
  // Counted always, logged at most once per kSessionWarnInterval per stream: a worker looping on
  // a bad message must not fill the log. The id is a client's: printed escaped and cut.
  std::string text = std::string("ignored ") + what + " of checkpoint " +
                     std::to_string(checkpoint_id) + " for task " + Printable(task_id) +
                     ", which this stream did not register";
  if (AllowSessionWarning(session, &text)) out.push_back(Log{LogLevel::kWarn, std::move(text)});
  return false;
}

bool PipelineCoordinator::AcceptsRoundMessage(SessionId session, int64_t checkpoint_id,
                                              const std::string& task_id, const char* what,
                                              Actions& out) {
  if (!HoldsTask(session, checkpoint_id, task_id, what, out)) return false;
  // Fenced by id and phase: old, unknown or already-finished rounds, and a round with the store.
  if (!pending_ || pending_->id() != checkpoint_id || pending_->completing()) {
    out.push_back(IgnoredMessage{IgnoredReason::kNotPending});
    return false;
  }
  return true;
}

Actions PipelineCoordinator::OnAck(SessionId session, int64_t checkpoint_id,
                                   const std::string& task_id, const TaskState& state,
                                   const AckFigures& reported, int64_t position) {
  Actions out;
  if (!AcceptsRoundMessage(session, checkpoint_id, task_id, "ack", out)) return out;
  // AcceptsRoundMessage checked that the session holds the task. A repeat is told apart by Ack
  // (its figures, two short strings, are made for nothing then; checking first would cost every
  // ack a second walk of the round's map).
  const PendingRound::Acked acked = pending_->Ack(
      expected_, task_id, state,
      TaskFigures{task_id, sessions_.at(session).worker_id, clock_.WallMs(), reported}, position);
  if (acked == PendingRound::Acked::kDuplicate) {
    out.push_back(IgnoredMessage{IgnoredReason::kDuplicate});
    return out;
  }
  if (acked == PendingRound::Acked::kOtherPosition) {
    NotePassedPosition(position);
    FailRound(CheckpointStatus::kFailed,
              "task " + task_id + " acked at position " + std::to_string(position) +
                  ", not at the trigger's " + std::to_string(pending_->position()),
              pending_->savepoint() ? FailureCause::kNotCounted : FailureCause::kCounted, out);
    Rearm(out);
    return out;
  }
  if (acked != PendingRound::Acked::kLast) return out;  // counted; more are awaited

  // Last ack: the round goes to the store and can no longer be aborted.
  out.reserve(out.size() + 2);
  out.push_back(CancelTimeout{});
  CompletedCheckpoint checkpoint = pending_->ToCheckpoint(clock_.WallMs());
  if (pending_->of_group()) checkpoint.alignment_group = group_ ? group_->name : std::string();
  pending_->SetCommitPhase(CommitTimeoutMs() > 0);
  if (pending_->commit_phase()) checkpoint.commit_status = CommitStatus::kCommitting;
  if (options_->pins) pending_->SetKeep(options_->pins->PinnedIds(spec_.key));
  CheckpointCommit commit{spec_.key, spec_.retained, ProjectedProgress(), std::move(checkpoint),
                          pending_->keep()};
  if (pending_->of_group()) {
    // The group commits every member's part at once (or none): its answer comes as OnCommitted
    // or EndGroupRound.
    out.push_back(MemberDone{pending_->id(), std::move(commit)});
  } else {
    out.push_back(CommitCheckpoint{std::move(commit)});
  }
  return out;
}

Actions PipelineCoordinator::OnDecline(SessionId session, int64_t checkpoint_id,
                                       const std::string& task_id, const std::string& reason,
                                       bool expired, int64_t position) {
  Actions out;
  if (!AcceptsRoundMessage(session, checkpoint_id, task_id, "decline", out)) return out;
  if (positions_) {
    // A task that declines because it is already past the round's position.
    NotePassedPosition(std::max(position, positions_->gate().PositionOf(task_id).value_or(0)));
  }
  const bool savepoint = IsSavepoint(pending_->kind());
  FailRound(expired ? CheckpointStatus::kExpired : CheckpointStatus::kFailed,
            "task " + task_id + (expired ? " expired it: " : " declined it: ") + reason,
            savepoint ? FailureCause::kNotCounted : FailureCause::kCounted, out);
  Rearm(out);
  return out;
}

void PipelineCoordinator::FailRound(CheckpointStatus status, const std::string& reason,
                                    FailureCause cause, Actions& out, bool tell_group) {
  PendingRound round = std::move(*pending_);
  pending_.reset();
  if (commits_) commits_->registered_while_completing.clear();  // nothing of it to commit
  if (round.of_group() && tell_group) {
    // A step owed for a passed position is the group's to apply, not this pipeline's.
    const bool passed_position = positions_ && positions_->TakeStep();
    MemberFailure failure = MemberFailure::kDeclined;
    if (cause == FailureCause::kAborted) {
      failure = MemberFailure::kAborted;
    } else if (status == CheckpointStatus::kExpired) {
      failure = MemberFailure::kExpired;
    } else if (passed_position) {
      failure = MemberFailure::kPassedPosition;  // the group steps its next position
    }
    out.push_back(MemberFailed{round.id(), failure, reason, std::nullopt});
  }
  const SteadyTime now = clock_.SteadyNow();
  last_finished_at_ = now;
  FixEffectiveInterval();  // a round ended: the next trigger goes by it (a backlog, say)
  if (cause == FailureCause::kAborted) {
    // Not the pipeline's failure: workers come and go. The history still shows the round.
    status = CheckpointStatus::kAborted;
  } else if (status == CheckpointStatus::kExpired) {
    ++counters_.expired_count;
  } else {
    ++counters_.failed_count;
  }
  out.push_back(CancelTimeout{});
  out.push_back(SendAbort{Sessions(), round.id(), reason});
  RememberRound({round.id(), round.kind(), status, round.triggered_at_ms(), clock_.WallMs(),
                 static_cast<int>(round.acked().size()), static_cast<int>(expected_.size()), reason,
                 round.position()});
  occasional().last_failed_tasks = std::make_unique<const FailedRoundTasks>(
      FailedRoundTasks{round.id(), round.TakeAcked(), round.TakeFigures()});
  out.push_back(RoundFinished{round.id(), round.kind(), status, Since(round.triggered_at(), now),
                              reason, false, round.target()});
  out.push_back(Log{LogLevel::kWarn, std::string(CheckpointKindName(round.kind())) + " " +
                                         std::to_string(round.id()) + " " +
                                         CheckpointStatusName(status) + ": " + reason});
  if (cause == FailureCause::kCounted) {
    ++counters_.consecutive_failures;
    if (counters_.consecutive_failures > spec_.tolerable_failures) {
      SetSticky(StickyState::kFailed);
      const std::string why = "FAILED after " + std::to_string(counters_.consecutive_failures) +
                              " consecutive failed checkpoints (tolerable_failures " +
                              std::to_string(spec_.tolerable_failures) + "); the last: " + reason;
      out.push_back(
          Log{LogLevel::kError, "pipeline " + why + "; it triggers nothing until resumed"});
      AnnounceState(why, out);
      FinishQueuedSavepoint("pipeline FAILED", out);
    }
  }
  Persist(out);
}

Actions PipelineCoordinator::OnCommitted(int64_t checkpoint_id) {
  Actions out;
  if (!pending_ || !pending_->completing() || pending_->id() != checkpoint_id) {
    // Cannot happen while the store reports each commit once; say so loudly if it does.
    out.push_back(Log{LogLevel::kError, "store reported checkpoint " +
                                            std::to_string(checkpoint_id) +
                                            " durable, but it is not the round being completed"});
    return out;
  }
  PendingRound round = std::move(*pending_);
  pending_.reset();
  const SteadyTime now = clock_.SteadyNow();
  if (deleted_) {
    // Durable, then deleted with the pipeline: only whoever waits for it (a savepoint's caller)
    // and the metrics learn the outcome. Nothing is written back.
    out.push_back(RoundFinished{round.id(), round.kind(), CheckpointStatus::kCompleted,
                                Since(round.triggered_at(), now), "", false, round.target()});
    SettleAdmission(out);
    return out;
  }
  out.reserve(4);  // SendComplete, SendRelease, RoundFinished, ArmWakeup
  last_finished_at_ = now;
  ++counters_.completed_count;
  counters_.consecutive_failures = 0;
  last_completed_id_ = round.id();
  last_completed_kind_ = round.kind();
  last_completed_at_ms_ = clock_.WallMs();
  recent_durations_.Add(std::chrono::duration_cast<Millis>(now - round.triggered_at()).count());
  FixEffectiveInterval();  // the next trigger goes by it
  if (round.kind() == CheckpointKind::kSavepointAndStop) SetSticky(StickyState::kStopped);
  // First the commit phase, as the round was written: it ends the streams that cannot know what
  // this checkpoint commits, which must not be asked to commit it.
  BeginCommitPhase(round.id(), round.kind(), round.commit_phase(), out);
  // Every session registered now, including one that joined after the trigger (docs/PROTOCOL.md,
  // "Rounds: trigger, ack, decline").
  out.push_back(SendComplete{Sessions(), round.id(), round.kind(), round.commit_phase()});
  AdoptCompleted(round.id(), round.kind(), round.target(), round.position(), round.TakeAcked(),
                 round.keep(), out);
  out.push_back(RoundFinished{round.id(), round.kind(), CheckpointStatus::kCompleted,
                              Since(round.triggered_at(), now), "", false, round.target()});
  if (sticky_ == StickyState::kStopped) {
    const std::string why = "STOPPED after savepoint " + std::to_string(round.id());
    out.push_back(Log{LogLevel::kInfo, "pipeline " + why});
    AnnounceState(why, out);
  }
  if (persist_owed_) {
    // A member's writes held while the group commit was in flight (Persist), or a write that
    // failed: written now; if the store still fails writes, OnPersistFailed holds it again.
    persist_owed_ = false;
    Persist(out);
  }
  Rearm(out);
  if (savepoints_.queued() && !pending_) {
    Actions more = OnWakeup();  // a queued savepoint starts right away, before any periodic one
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

Actions PipelineCoordinator::OnCommitFailed(int64_t checkpoint_id, const Status& error) {
  Actions out;
  if (!pending_ || !pending_->completing() || pending_->id() != checkpoint_id) {
    out.push_back(Log{LogLevel::kError, "store reported checkpoint " +
                                            std::to_string(checkpoint_id) +
                                            " failed, but it is not the round being completed"});
    return out;
  }
  if (deleted_) {
    const PendingRound round = std::move(*pending_);
    pending_.reset();
    out.push_back(RoundFinished{round.id(), round.kind(), CheckpointStatus::kFailed,
                                Since(round.triggered_at(), clock_.SteadyNow()),
                                "store write failed: " + error.message(), false, round.target()});
    SettleAdmission(out);
    return out;
  }
  // A failed write is a failed checkpoint, never a complete one. The failure is the daemon's, not
  // the pipeline's: it does not count toward tolerable_failures (docs/OPERATING.md, "Operating
  // ckptd").
  FailRound(CheckpointStatus::kFailed, "store write failed: " + error.message(),
            FailureCause::kNotCounted, out);
  MaybeDecideRestoreFailure(out);  // a restore that failed meanwhile waited for this round
  Rearm(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// State and queries

void PipelineCoordinator::BumpGeneration(const std::string& why, Actions& out) {
  ++generation_;
  out.push_back(
      Log{LogLevel::kInfo, "generation " + std::to_string(generation_) + " (" + why + ")"});
  Persist(out);
}

void PipelineCoordinator::Persist(Actions& out) {
  if (deleted_) return;  // the caller deletes the record; writing it back would revive it
  if (pending_ && pending_->of_group() && pending_->completing()) {
    // A member's part waits for the group's commit, which is not queued ahead of this write as
    // a round of its own would be: this state is written once the round ends (OnCommitted,
    // FailRound).
    // A spec change waits too (spec_unsaved_ stays set): the whole record written now would
    // carry progress from before the round, and, queued behind a group commit already with the
    // store, it would take that commit's completion back until the round's end wrote it again.
    persist_owed_ = true;
    return;
  }
  if (spec_unsaved_) {
    out.push_back(PersistRecord{ProjectedRecord(), nullptr});
    spec_unsaved_ = false;
  } else {
    out.push_back(PersistProgress{spec_.key, ProjectedProgress(), nullptr});
  }
}

void PipelineCoordinator::AnnounceState(const std::string& reason, Actions& out,
                                        bool deleted) const {
  if (sessions_.empty()) return;
  out.push_back(SendState{Sessions(), deleted ? std::nullopt : std::optional(State()), reason});
}

Actions PipelineCoordinator::OnStoreWritable(bool writable) {
  Actions out;
  if (writable == store_writable_) return out;
  store_writable_ = writable;
  if (writable && AllTasksRegistered()) HoldForStartOffset();
  if (writable && persist_owed_) {
    persist_owed_ = false;
    Persist(out);
  }
  Rearm(out);
  return out;
}

Actions PipelineCoordinator::OnPersistFailed(bool whole_record) {
  // The latest state wins: write what holds now, not what failed; the whole record if the spec
  // was in the write that failed. Not while the store fails writes: then once it takes them.
  Actions out;
  if (whole_record) spec_unsaved_ = true;
  if (!store_writable_) {
    persist_owed_ = true;
    return out;
  }
  Persist(out);
  return out;
}

PipelineRecord PipelineCoordinator::ProjectedRecord() const {
  PipelineRecord r;
  static_cast<PipelineProgress&>(r) = ProjectedProgress();
  r.spec = spec_;
  return r;
}

PipelineProgress PipelineCoordinator::ProjectedProgress() const {
  PipelineProgress r;
  r.generation = generation_;
  r.sticky = sticky_;
  r.counters = counters_;
  r.last_completed_id = last_completed_id_;
  r.last_completed_kind = last_completed_kind_;
  r.last_completed_at_ms = last_completed_at_ms_;
  r.from_config = from_config_;
  if (restore_ && restore_->operator_set) {
    r.restore_from = CheckpointRef{restore_->source(spec_.key), restore_->checkpoint_id};
  }
  r.released_ids = history_.last_released();
  for (int64_t id : UnrestorableIds()) {
    if (history_.Find(id)) r.unrestorable_ids.push_back(id);
  }
  if (const auto* failure = occasional_or_none().restore_failure.get();
      failure && restore_ && restore_->other_source &&
      failure->checkpoint_id == restore_->checkpoint_id) {
    r.restore_from_failed = true;
  }
  if (commits_) {
    r.last_committed_id = commits_->last_committed_id;
    r.last_committed_at_ms = commits_->last_committed_at_ms;
    if (Committing() && commits_->phase->mark_at_ms() > 0) {
      // The mark is with the store (or retried): a write queued behind it must not undo it.
      r.last_committed_id = commits_->phase->checkpoint_id();
      r.last_committed_at_ms = commits_->phase->mark_at_ms();
    }
  }
  if (pending_ && pending_->completing()) {
    r.restore_from.reset();  // a completion ends an operator-set restore point
    r.restore_from_failed = false;
    const int64_t plain_extra =
        pending_->kind() == CheckpointKind::kCheckpoint ? pending_->id() : 0;
    if (auto released = history_.ReleasedBy(spec_.retained, plain_extra, pending_->keep());
        !released.empty()) {
      r.released_ids = std::move(released);  // recorded by the commit that releases them
    }
    // A commit is queued ahead of this write; writing the pre-commit record after it would undo
    // it. If the commit fails, FailRound persists the real record again.
    ++r.counters.completed_count;
    r.counters.consecutive_failures = 0;
    r.last_completed_id = pending_->id();
    r.last_completed_kind = pending_->kind();
    r.last_completed_at_ms = clock_.WallMs();
    if (pending_->kind() == CheckpointKind::kSavepointAndStop) r.sticky = StickyState::kStopped;
  }
  return r;
}

std::vector<SessionId> PipelineCoordinator::Sessions() const {
  std::vector<SessionId> ids;
  ids.reserve(sessions_.size());
  for (const auto& [id, info] : sessions_) ids.push_back(id);
  return ids;
}

void PipelineCoordinator::RememberRound(RoundSummary summary) {
  std::vector<RoundSummary>& recent = occasional().recent;
  recent.insert(recent.begin(), std::move(summary));
  if (recent.size() > options_->recent_rounds_kept) recent.resize(options_->recent_rounds_kept);
}

std::string PipelineCoordinator::SavepointLocation(const std::string& target, int64_t id) const {
  if (!target.empty()) return target;
  return options_->savepoint_root + "/" + EncodePathSegment(spec_.key.job_id) + "/" +
         EncodePathSegment(spec_.key.pipeline_id) + "/" + std::to_string(id);
}

void PipelineCoordinator::AdoptSpecKeepingKey(const PipelineSpec& spec) {
  static_assert(sizeof(PipelineSpec) == 184, "PipelineSpec changed: adopt its new fields here");
  spec_.task_ids = spec.task_ids;
  spec_.interval_ms = spec.interval_ms;
  spec_.timeout_ms = spec.timeout_ms;
  spec_.min_pause_ms = spec.min_pause_ms;
  spec_.tolerable_failures = spec.tolerable_failures;
  spec_.retained = spec.retained;
  spec_.position_interval = spec.position_interval;
  spec_.commit_timeout_ms = spec.commit_timeout_ms;
  spec_.max_overhead = spec.max_overhead;
  spec_.max_interval_ms = spec.max_interval_ms;
  // alignment_group: equal as well (checked).
}

PipelineCoordinator::Occasional& PipelineCoordinator::occasional() {
  if (!occasional_) occasional_ = std::make_unique<Occasional>();
  return *occasional_;
}

const PipelineCoordinator::Occasional& PipelineCoordinator::occasional_or_none() const {
  static const Occasional kNone;
  return occasional_ ? *occasional_ : kNone;
}

}  // namespace ckpt
