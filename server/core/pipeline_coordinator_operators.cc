// Operators' calls: pause, resume, a checkpoint or savepoint now, a changed spec, deletion and
// shutdown. Each answers with a Status (an operator hears why a call is refused) and the actions
// it causes. Rounds themselves are in pipeline_coordinator.cc.
#include <algorithm>

#include "common/name_list.h"
#include "core/pipeline_coordinator.h"
#include "core/spec_validation.h"

namespace ckpt {

PipelineCoordinator::Outcome PipelineCoordinator::Pause() {
  Outcome o;
  if (sticky_ == StickyState::kPaused) return o;
  if (sticky_ != StickyState::kActive) {
    o.status = Status::FailedPrecondition(std::string("pipeline is ") + PipelineStateName(State()) +
                                          "; only an active pipeline pauses");
    return o;
  }
  SetSticky(StickyState::kPaused);
  FinishQueuedSavepoint("pipeline PAUSED", o.actions);
  o.actions.push_back(Log{LogLevel::kInfo, "pipeline paused"});
  AnnounceState("paused by an operator", o.actions);
  Persist(o.actions);
  Rearm(o.actions);
  return o;
}

PipelineCoordinator::Outcome PipelineCoordinator::Resume() {
  Outcome o;
  if (sticky_ == StickyState::kActive) {
    o.status = Status::FailedPrecondition(std::string("pipeline is ") + PipelineStateName(State()) +
                                          "; resume works from PAUSED, FAILED and STOPPED");
    return o;
  }
  if (RestoreBlocked()) {
    o.status =
        Status::FailedPrecondition("pipeline " + spec_.key.ToString() +
                                   " has no restore point to resume from yet: " + StateReason() +
                                   " (ckptctl checkpoint list shows the others)");
    return o;
  }
  o.actions.push_back(
      Log{LogLevel::kInfo, std::string("pipeline resumed from ") + PipelineStateName(State())});
  SetSticky(StickyState::kActive);
  counters_.consecutive_failures = 0;
  BumpGeneration("resume", o.actions);
  // The pipelines of a job resumed together are overdue together.
  if (AllTasksRegistered()) HoldForStartOffset();
  AnnounceState("resumed by an operator", o.actions);
  Rearm(o.actions);
  return o;
}

PipelineCoordinator::Outcome PipelineCoordinator::TriggerCheckpoint(int64_t* checkpoint_id,
                                                                    const AdmitNow& admit_now) {
  Outcome o;
  if (group_) {
    o.status = Status::FailedPrecondition("a member of alignment group " + group_->name +
                                          ": its rounds are the group's");
    return o;
  }
  if (pending_) {
    o.status =
        Status::FailedPrecondition("checkpoint " + std::to_string(pending_->id()) + " is pending");
    return o;
  }
  if (Status s = RefuseWhileCommitting("a new checkpoint"); !s.ok()) {
    o.status = std::move(s);
    return o;
  }
  if (State() != PipelineState::kRunning || shutting_down_) {
    o.status = Status::FailedPrecondition(std::string("pipeline is ") + PipelineStateName(State()));
    return o;
  }
  if (!store_writable_) {
    o.status = Status::Unavailable(
        "the store fails writes (disk full?); no round starts until it takes them again");
    return o;
  }
  if (AdmissionOn() && admission_ != AdmissionState::kAdmitted && admit_now) {
    // An operator's round does not wait in line: it goes now or is refused, naming the cap.
    if (Status s = admit_now(RequestForAdmission(AdmissionClass::kPeriodic)); !s.ok()) {
      o.status = std::move(s);
      return o;
    }
    admission_ = AdmissionState::kAdmitted;
  }
  if (!TryTrigger(CheckpointKind::kCheckpoint, "", TriggerCause::kManual, o.actions)) {
    SettleAdmission(o.actions);
    o.status = Status::Unavailable("no checkpoint id is reserved yet; retry shortly");
    return o;
  }
  if (checkpoint_id) *checkpoint_id = pending_->id();
  Rearm(o.actions);
  return o;
}

PipelineCoordinator::Outcome PipelineCoordinator::RequestSavepoint(const std::string& target,
                                                                   bool stop, Millis timeout) {
  return RequestSavepoint(target, stop, timeout, /*worker_asked=*/false);
}

PipelineCoordinator::Outcome PipelineCoordinator::RequestSavepoint(const std::string& target,
                                                                   bool stop, Millis timeout,
                                                                   bool worker_asked) {
  Outcome o;
  if (group_) {
    o.status = Status::FailedPrecondition("a member of alignment group " + group_->name +
                                          ": its savepoints are the group's");
    return o;
  }
  if (sticky_ != StickyState::kActive || shutting_down_) {
    o.status = Status::FailedPrecondition(std::string("pipeline is ") + PipelineStateName(State()));
    return o;
  }
  const CheckpointKind kind = stop ? CheckpointKind::kSavepointAndStop : CheckpointKind::kSavepoint;
  if (pending_ && pending_->savepoint()) {
    // Join the pending savepoint if it is the same request: same stop, same target as asked (an
    // empty target, the default location, joins only a savepoint that asked for no target).
    if (pending_->kind() != kind || pending_->requested_target() != target) {
      o.status = Status::FailedPrecondition("a different savepoint is pending");
    } else {
      if (worker_asked) pending_->JoinWorkerRequest();
    }
    return o;
  }
  SavepointQueue::Request request{target, stop, SteadyTime{}, worker_asked};
  if (savepoints_.queued() == nullptr) {  // it waits: its room and its deadline
    if (Status full = CheckSavepointRoom(); !full.ok()) {
      o.status = std::move(full);
      return o;
    }
    request.deadline = clock_.SteadyNow() + timeout;
  }
  const SavepointQueue::Offered offered = savepoints_.Offer(std::move(request));
  if (offered == SavepointQueue::Offered::kDiffers) {
    o.status = Status::FailedPrecondition("a different savepoint is queued");
  }
  if (offered != SavepointQueue::Offered::kQueued) return o;
  if (!pending_) {
    Actions more = OnWakeup();
    o.actions.insert(o.actions.end(), more.begin(), more.end());
  } else {
    o.actions.push_back(Log{
        LogLevel::kInfo, "savepoint queued behind checkpoint " + std::to_string(pending_->id())});
    Rearm(o.actions);
  }
  if (Committing() && savepoints_.queued()) {
    o.actions.push_back(Log{LogLevel::kInfo, "savepoint queued until checkpoint " +
                                                 std::to_string(CommittingId()) + " is COMMITTED"});
  }
  return o;
}

Actions PipelineCoordinator::OnSavepointCallersGone() {
  Actions out;
  if (!savepoints_.DropIfNoWorkerWaits()) return out;
  out.push_back(Log{LogLevel::kInfo, "queued savepoint dropped: every caller went away"});
  Rearm(out);
  return out;
}

void PipelineCoordinator::FinishQueuedSavepoint(const std::string& reason, Actions& out) {
  const std::optional<SavepointQueue::Request> queued = savepoints_.Take();
  if (!queued) return;
  out.push_back(RoundFinished{0, queued->kind(), CheckpointStatus::kFailed, {}, reason, false, ""});
  out.push_back(Log{LogLevel::kWarn, "queued savepoint failed: " + reason});
}

PipelineCoordinator::Outcome PipelineCoordinator::UpdateSpec(const PipelineSpec& spec) {
  Outcome o;
  if (spec.key != spec_.key) {
    o.status = Status::InvalidArgument("an update cannot change the job or pipeline id");
    return o;
  }
  if (spec.alignment_group != spec_.alignment_group) {
    o.status = Status::FailedPrecondition(
        "an update cannot change alignment_group (it is set when the pipeline is created)");
    return o;
  }
  const TaskIdSet new_tasks(spec.task_ids.begin(), spec.task_ids.end());
  const bool tasks_changed = new_tasks != expected_;
  if (tasks_changed) {
    // The per-task commit marks are by index into the set: it stays as it is until COMMITTED.
    if (Status s = RefuseWhileCommitting("a change of the task set"); !s.ok()) {
      o.status = std::move(s);
      return o;
    }
  }
  const bool all_before = AllTasksRegistered();
  AdoptSpecKeepingKey(spec);
  spec_unsaved_ = true;  // the next write is the whole record
  // The holders, indexed by expected_ too: a task that stays keeps its holder and its mark; a
  // stream holding a task that left the set is ended whole below (its other tasks come back
  // with its next hello).
  std::map<SessionId, std::vector<std::string>> leaving;  // with the tasks of theirs that left
  if (tasks_changed) {
    const auto old_begin = expected_.begin();
    auto old_name = [&](size_t i) -> const std::string& {
      return *(old_begin + static_cast<std::ptrdiff_t>(i));
    };
    for (const auto& [session, old_index] : task_owner_.Remap(
             new_tasks.size(), [&](size_t i) { return new_tasks.IndexOf(old_name(i)); })) {
      leaving[session].push_back(old_name(old_index));
    }
    // Indices moved: every stream's tasks may now be anywhere in the set.
    const auto last = static_cast<uint32_t>(new_tasks.empty() ? 0 : new_tasks.size() - 1);
    for (auto& [id, info] : sessions_) {
      info.first_task = 0;
      info.last_task = last;
    }
  }
  expected_ = new_tasks;
  if (tasks_changed && restore_) restore_rescaled_ = RestoreSetDiffers();
  FixEffectiveInterval();  // a new interval or adaptive policy applies to the next trigger
  SyncPositionGate();
  o.actions.push_back(Log{
      LogLevel::kInfo, "spec updated" + std::string(tasks_changed ? " (task set changed)" : "")});
  if (tasks_changed) {
    for (auto& [session, departed] : leaving) {
      o.actions.push_back(EndSession{
          session, Status::InvalidArgument("the pipeline's task set changed; register again")});
      LoseSession(session, "task set updated", o.actions, SessionEnd::kLost, std::move(departed));
    }
    if (pending_ && !pending_->completing()) {
      FailRound(CheckpointStatus::kAborted, "the pipeline's task set changed",
                FailureCause::kAborted, o.actions);
    }
    BumpGeneration("task set updated", o.actions);
    // Dropping the tasks that were missing completes the set.
    if (AllTasksRegistered() && !all_before) HoldForStartOffset();
  } else {
    Persist(o.actions);
  }
  // Tasks added have no stream yet; tasks dropped may have completed the set.
  if (AllTasksRegistered()) {
    tasks_missing_since_ms_ = 0;
  } else if (tasks_missing_since_ms_ == 0) {
    tasks_missing_since_ms_ = clock_.WallMs();
  }
  Rearm(o.actions);
  return o;
}

Status PipelineCoordinator::CheckDeletable() const {
  if (!options_->pins) return Status::Ok();
  // Its checkpoints that are another pipeline's restore point stay where they are, and so
  // does the pipeline: refused, naming the holders.
  const auto held = options_->pins->HeldByOthers(spec_.key);
  if (held.empty()) return Status::Ok();
  std::string whose;
  for (size_t i = 0; i < held.size() && i < 3; ++i) {
    whose += (i ? ", " : "") + std::to_string(held[i].first) + " of " + held[i].second.ToString();
  }
  if (held.size() > 3) whose += " and " + std::to_string(held.size() - 3) + " more";
  return Status::FailedPrecondition(
      "pipeline " + spec_.key.ToString() + " holds the restore point of other pipelines (" + whose +
      "); restore those elsewhere or let them complete a checkpoint, then delete it");
}

PipelineCoordinator::Outcome PipelineCoordinator::Delete() {
  Outcome o;
  if (deleted_) return o;
  if (Status s = CheckDeletable(); !s.ok()) {
    o.status = std::move(s);
    return o;
  }
  Actions& out = o.actions;
  if (restore_ && restore_->operator_set && options_->pins) {
    // Its restore point no longer holds the source's checkpoint.
    const CheckpointRef was{restore_->source(spec_.key), restore_->checkpoint_id};
    if (options_->pins->Remove(was, spec_.key)) out.push_back(PinDropped{was});
  }
  shutting_down_ = true;  // no trigger, no wakeup from now on
  deleted_ = true;        // and nothing written back: the caller deletes the record
  FinishQueuedSavepoint("pipeline deleted", out);
  // Every checkpoint and savepoint goes with the record, and the one with the store too (the
  // store's delete comes after its commit).
  std::vector<int64_t> released = history_.Ids();
  if (pending_ && pending_->completing()) released.push_back(pending_->id());
  std::sort(released.begin(), released.end());
  released.erase(std::unique(released.begin(), released.end()), released.end());
  if (pending_ && !pending_->completing()) {
    FailRound(CheckpointStatus::kAborted, "pipeline deleted", FailureCause::kAborted, out);
  }
  // A completing round stays: its store completion still comes and ends it (OnCommitted).
  AnnounceState("pipeline deleted", out, /*deleted=*/true);
  const std::vector<SessionId> sessions = Sessions();
  // Sent by the runtime once the delete is durable, before the streams end (SendRelease).
  if (!released.empty() && !sessions.empty()) {
    out.push_back(SendRelease{sessions, std::move(released)});
  }
  for (SessionId session : sessions) {
    out.push_back(
        EndSession{session, Status::NotFound("pipeline " + spec_.key.ToString() + " was deleted")});
  }
  sessions_.clear();
  backlog_streams_ = 0;
  task_owner_.ReleaseAll();
  out.push_back(CancelTimeout{});
  armed_wakeup_.reset();
  out.push_back(CancelWakeup{});
  SettleAdmission(out);  // a place in line goes; a round with the store keeps its admission
  return o;
}

Actions PipelineCoordinator::SetFromConfig(bool from_config) {
  Actions out;
  if (from_config_ == from_config) return out;
  from_config_ = from_config;
  Persist(out);
  return out;
}

std::optional<SavepointView> PipelineCoordinator::CurrentSavepoint() const {
  if (pending_ && pending_->savepoint()) {
    return SavepointView{pending_->id(), pending_->kind() == CheckpointKind::kSavepointAndStop,
                         static_cast<int>(pending_->acked().size()),
                         static_cast<int>(expected_.size()), pending_->target()};
  }
  if (const auto* queued = savepoints_.queued()) {
    return SavepointView{0, queued->stop, 0, static_cast<int>(expected_.size()), ""};
  }
  return std::nullopt;
}

Actions PipelineCoordinator::BeginShutdown() {
  Actions out;
  shutting_down_ = true;
  FinishQueuedSavepoint("daemon shutting down", out);
  Rearm(out);
  return out;
}

Actions PipelineCoordinator::AbortForShutdown() {
  Actions out;
  if (pending_ && !pending_->completing()) {
    FailRound(CheckpointStatus::kAborted, "daemon shutting down", FailureCause::kAborted, out);
  }
  SettleAdmission(out);
  return out;
}

}  // namespace ckpt
