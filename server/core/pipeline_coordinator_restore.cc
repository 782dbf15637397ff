// The restore loop: where workers restore from, which checkpoints they may release, and what an
// operator may do about both (docs/PROTOCOL.md, "Restore and release"). Rounds are in
// pipeline_coordinator.cc.
#include <algorithm>

#include "core/pipeline_coordinator.h"

namespace ckpt {

bool PipelineCoordinator::RestoreSetDiffers() const {
  if (!restore_) return false;
  const PackedTaskStates& states = restore_->task_states;
  if (states.size() != expected_.size()) return true;
  // Both sorted: one pass.
  size_t i = 0;
  for (const std::string& task : expected_) {
    if (states.at(i++).task != task) return true;
  }
  return false;
}

RestorePoint PipelineCoordinator::RestorePointFor(const std::vector<std::string>& task_ids) const {
  RestorePoint point;
  // A restore point that failed is never offered, not even while nothing replaced it.
  if (!restore_ || RestoreBlocked()) return point;
  const HeldRestorePoint& held = *restore_;
  point.checkpoint_id = held.checkpoint_id;
  point.kind = held.kind;
  point.location = held.location;
  point.source = held.source(spec_.key);
  point.rescaled = restore_rescaled_;
  point.operator_set = held.operator_set;
  point.position = held.position;
  point.commit_pending =
      !held.other_source && held.checkpoint_id != 0 && held.checkpoint_id == CommittingId();
  if (point.rescaled) {
    point.task_states = held.task_states.ToMap();
    return point;
  }
  for (const auto& task : task_ids) {
    if (const auto state = held.task_states.Find(task)) {
      point.task_states.emplace(task, state->ToTaskState());
    }
  }
  return point;
}

RestorePoint PipelineCoordinator::CurrentRestorePoint() const {
  RestorePoint point = RestorePointFor({});
  if (point.checkpoint_id != 0 && !point.rescaled) {
    point.task_states = restore_->task_states.ToMap();
  }
  return point;
}

bool PipelineCoordinator::IsPinned(int64_t checkpoint_id) const {
  return options_->pins && options_->pins->IsPinned(spec_.key, checkpoint_id);
}

void PipelineCoordinator::AdoptCompleted(int64_t checkpoint_id, CheckpointKind kind,
                                         std::string location, int64_t position,
                                         std::map<std::string, TaskState> task_states,
                                         const std::vector<int64_t>& keep, Actions& out) {
  if (restore_ && restore_->operator_set && options_->pins) {
    // A completion ends an operator-set restore point, and its pin.
    const CheckpointRef was{restore_->source(spec_.key), restore_->checkpoint_id};
    if (options_->pins->Remove(was, spec_.key)) out.push_back(PinDropped{was});
  }
  CompletedCheckpoint checkpoint;
  checkpoint.checkpoint_id = checkpoint_id;
  checkpoint.kind = kind;
  checkpoint.location = std::move(location);
  checkpoint.position = position;
  checkpoint.task_states = std::move(task_states);
  restore_ =
      std::make_unique<const HeldRestorePoint>(spec_.key, spec_.key, false, std::move(checkpoint));
  restore_rescaled_ = RestoreSetDiffers();
  SyncPositionGate();  // the next round's positions count from this one's

  std::vector<int64_t> released =
      history_.Adopt(checkpoint_id, kind, spec_.retained, keep);  // recorded: a restart resends
  if (const auto* failure = occasional_or_none().restore_failure.get()) {
    // A restore failed while this round was with the store: its worker waits to be sent to the
    // new restore point, this one.
    const std::string why = "restored to checkpoint " +
                            CheckpointRef{spec_.key, checkpoint_id}.ToString() + ": " +
                            failure->what;
    out.push_back(Log{LogLevel::kWarn, "pipeline " + why});
    for (SessionId session : Sessions()) {
      out.push_back(EndSession{session, Status::Aborted(why)});
      LoseSession(session, why, out);
    }
    BumpGeneration(why, out);
  }
  ForgetRestoreFailure();
  if (!released.empty()) out.push_back(SendRelease{Sessions(), std::move(released)});
  // A pin dropped while this commit was in flight: what it spared may go now.
  DeleteUnpinnedOutsideWindow(out);
}

void PipelineCoordinator::DeleteUnpinnedOutsideWindow(Actions& out) {
  std::vector<int64_t> ids = history_.OutsideWindow(spec_.retained);
  std::erase_if(ids, [&](int64_t id) {
    return IsPinned(id) || (restore_ && restore_->checkpoint_id == id && !restore_->other_source);
  });
  if (ids.empty()) return;
  history_.MarkDeleting(ids);
  out.push_back(DeleteCheckpoints{std::move(ids)});
}

Status PipelineCoordinator::AddPin(int64_t checkpoint_id, const PipelineKey& holder) {
  const PackedHistoryEntry* entry = history_.Find(checkpoint_id);
  const std::string what =
      "checkpoint " + std::to_string(checkpoint_id) + " of pipeline " + spec_.key.ToString();
  if (!entry || history_.BeingDeleted(checkpoint_id)) {
    return Status::NotFound(what + " is not in its history (ckptctl checkpoint list shows it)");
  }
  if (IsUnrestorable(checkpoint_id)) {
    return Status::FailedPrecondition(
        what + " is unrestorable (a task failed to restore it); pick another one");
  }
  if (!options_->pins) return Status::Internal("no restore pins in this daemon");
  if (checkpoint_id == CommittingId()) {
    // Its side effects are not all committed: a pipeline restored to it could not know whether
    // to commit them or roll them back.
    return Status::FailedPrecondition(
        what + " is COMMITTING; restore from it once it is COMMITTED, or from an older one");
  }
  // A commit in flight may push a plain checkpoint out as it lands, with a trim decided before
  // this pin: refuse rather than race it.
  const int64_t plain_extra =
      pending_ && pending_->kind() == CheckpointKind::kCheckpoint ? pending_->id() : 0;
  if (entry->plain() && pending_ && pending_->completing() && !IsPinned(checkpoint_id) &&
      checkpoint_id < history_.Horizon(spec_.retained, plain_extra)) {
    return Status::NotFound(what + " is leaving its history (retained " +
                            std::to_string(spec_.retained) + "); pick a newer one");
  }
  options_->pins->Add({spec_.key, checkpoint_id}, holder);
  return Status::Ok();
}

Actions PipelineCoordinator::OnPinDropped(int64_t checkpoint_id) {
  Actions out;
  if (deleted_ || IsPinned(checkpoint_id)) return out;
  // A commit in flight decided its trim with the pin; its completion looks again.
  if (pending_ && pending_->completing()) return out;
  DeleteUnpinnedOutsideWindow(out);
  return out;
}

PipelineCoordinator::Outcome PipelineCoordinator::Restore(const PipelineKey& source,
                                                          CompletedCheckpoint checkpoint) {
  Outcome o;
  const bool stopped_here = sticky_ != StickyState::kActive;
  if (Status s = RefuseWhileCommitting("a restore"); !s.ok()) {
    o.status = std::move(s);
    return o;
  }
  if (deleted_ || shutting_down_ || pending_ || (!stopped_here && !task_owner_.empty())) {
    o.status = Status::FailedPrecondition(
        "pipeline " + spec_.key.ToString() + " is " + PipelineStateName(State()) +
        (pending_ ? " with checkpoint " + std::to_string(pending_->id()) + " pending" : "") +
        "; restore it while no task is registered, or pause it first (and wait for the pending "
        "round to end)");
    return o;
  }
  const CheckpointRef ref{source, checkpoint.checkpoint_id};
  if (restore_ && restore_->operator_set && options_->pins) {
    const CheckpointRef was{restore_->source(spec_.key), restore_->checkpoint_id};
    if (options_->pins->Remove(was, spec_.key)) o.actions.push_back(PinDropped{was});
  }
  restore_ =
      std::make_unique<const HeldRestorePoint>(spec_.key, source, true, std::move(checkpoint));
  restore_rescaled_ = RestoreSetDiffers();
  ForgetRestoreFailure();
  SyncPositionGate();
  const std::string why = "restored to checkpoint " + ref.ToString();
  if (sticky_ == StickyState::kFailed || sticky_ == StickyState::kStopped) {
    SetSticky(StickyState::kPaused);
    counters_.consecutive_failures = 0;
  }
  o.actions.push_back(Log{
      LogLevel::kInfo,
      "pipeline " + why + std::string(restore_rescaled_ ? " (another task set: rescaled)" : "")});
  // Every stream ends, so that its worker comes back and is handed the new restore point.
  for (SessionId session : Sessions()) {
    o.actions.push_back(EndSession{session, Status::Aborted(why)});
    LoseSession(session, why, o.actions);
  }
  BumpGeneration(why, o.actions);
  if (stopped_here) AnnounceState(why, o.actions);
  Persist(o.actions);
  Rearm(o.actions);
  return o;
}

Status PipelineCoordinator::CheckSavepointRoom() const {
  const size_t held = history_.savepoints();
  if (static_cast<int64_t>(held) < options_->max_savepoints) return Status::Ok();
  return Status::ResourceExhausted(
      "pipeline " + spec_.key.ToString() + " holds " + std::to_string(held) + " savepoints, " +
      NameLimit("max_savepoints_per_pipeline", options_->max_savepoints) +
      "; delete one first: ckptctl checkpoint delete " + spec_.key.job_id + " " +
      spec_.key.pipeline_id + " ID (ckptctl checkpoint list shows them)");
}

PipelineCoordinator::Outcome PipelineCoordinator::DeleteCheckpoint(int64_t checkpoint_id) {
  Outcome o;
  const PackedHistoryEntry* entry = history_.Find(checkpoint_id);
  const std::string what = "checkpoint " + std::to_string(checkpoint_id);
  if (!entry) {
    o.status = Status::NotFound(what + " of pipeline " + spec_.key.ToString() +
                                " is not in its history (never completed, or released already)");
    return o;
  }
  if (checkpoint_id == CommittingId()) {
    o.status =
        Status::FailedPrecondition(what + " of pipeline " + spec_.key.ToString() +
                                   " is COMMITTING: it is kept until every task committed it");
    return o;
  }
  if (checkpoint_id == last_completed_id_) {
    o.status = Status::FailedPrecondition(
        what + " is the newest completed checkpoint of pipeline " + spec_.key.ToString() +
        " (its restore point, unless an operator chose another); it can be deleted once a newer "
        "one completes");
    return o;
  }
  const auto* failure = occasional_or_none().restore_failure.get();
  if ((restore_ && !restore_->other_source && restore_->checkpoint_id == checkpoint_id) ||
      IsPinned(checkpoint_id) || (failure && failure->reading_id == checkpoint_id)) {
    o.status = Status::FailedPrecondition(
        what + " of pipeline " + spec_.key.ToString() +
        " is a restore point (ckptctl pipeline get shows each pipeline's); restore that pipeline "
        "elsewhere, or let it complete a checkpoint, first");
    return o;
  }
  if (history_.BeingDeleted(checkpoint_id)) return o;
  history_.MarkDeleting({checkpoint_id});
  o.actions.push_back(Log{LogLevel::kInfo, std::string(CheckpointKindName(entry->kind())) + " " +
                                               std::to_string(checkpoint_id) +
                                               " deleted by an operator"});
  o.actions.push_back(DeleteCheckpoints{{checkpoint_id}});
  return o;
}

Actions PipelineCoordinator::OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids) {
  Actions out;
  std::vector<int64_t> released = history_.OnDeleted(checkpoint_ids);
  if (!released.empty() && !deleted_) {
    history_.NoteReleased(released);
    Persist(out);  // recorded, so that a restart sends them again
    out.push_back(SendRelease{Sessions(), std::move(released)});
  }
  return out;
}

Actions PipelineCoordinator::OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                                       const Status& error) {
  Actions out;
  history_.OnDeleteFailed(checkpoint_ids);
  out.push_back(
      Log{LogLevel::kWarn, "deleting checkpoint(s) failed, they stay: " + error.ToString()});
  return out;
}

// --- verified restore ---

bool PipelineCoordinator::IsUnrestorable(int64_t checkpoint_id) const {
  const std::vector<int64_t>& marked = occasional_or_none().unrestorable;
  return std::binary_search(marked.begin(), marked.end(), checkpoint_id);
}

bool PipelineCoordinator::RestoreBlocked() const {
  if (!restore_) return false;
  const auto* failure = occasional_or_none().restore_failure.get();
  if (failure && failure->checkpoint_id == restore_->checkpoint_id) return true;
  return !restore_->other_source && IsUnrestorable(restore_->checkpoint_id);
}

bool PipelineCoordinator::LookingForFallback() const {
  const auto* failure = occasional_or_none().restore_failure.get();
  return failure && failure->reading_id != 0;
}

bool PipelineCoordinator::AwaitsRestoreCandidate(int64_t failed_id) const {
  const auto* failure = occasional_or_none().restore_failure.get();
  return !deleted_ && failure && failure->reading_id != 0 && failure->checkpoint_id == failed_id;
}

Actions PipelineCoordinator::OnRestoreResult(SessionId session, int64_t checkpoint_id,
                                             const std::string& task_id, bool ok,
                                             const std::string& reason) {
  Actions out;
  if (deleted_ || !HoldsTask(session, checkpoint_id, task_id, "restore_result", out)) return out;
  // A success changes nothing; a failure of what is no longer the restore point (a completion or
  // an operator moved it), or of one already handled, is old news.
  if (ok || !restore_ || restore_->checkpoint_id != checkpoint_id || RestoreBlocked()) return out;
  const bool own = !restore_->other_source;
  // "restore of N failed on task T: REASON" (docs/PROTOCOL.md); another pipeline's checkpoint
  // by its full name.
  const std::string what =
      "restore of " +
      (own ? std::to_string(checkpoint_id)
           : "checkpoint " + CheckpointRef{restore_->source(spec_.key), checkpoint_id}.ToString()) +
      " failed on task " + task_id + ": " +
      (reason.empty() ? std::string("no reason given") : reason);
  out.push_back(RestoreFailed{checkpoint_id});
  Occasional& o = occasional();
  if (own) {
    o.unrestorable.insert(
        std::lower_bound(o.unrestorable.begin(), o.unrestorable.end(), checkpoint_id),
        checkpoint_id);
  }
  o.restore_failure = std::make_unique<Occasional::RestoreFailure>();
  o.restore_failure->checkpoint_id = checkpoint_id;
  o.restore_failure->what = what;
  out.push_back(Log{LogLevel::kError, what + (own ? "; marked unrestorable" : "")});
  if (pending_ && !pending_->completing()) {
    FailRound(CheckpointStatus::kAborted, what, FailureCause::kAborted, out);
  }
  // The mark goes to the store ahead of the fallback's read, which waits for it
  // (ReadRestoreCandidate).
  Persist(out);
  // A round with the store cannot be aborted: once durable it is the restore point
  // (AdoptCompleted); if it fails instead, the decision is made then (DecideRestoreFailure).
  if (!pending_) DecideRestoreFailure(out);
  Rearm(out);
  return out;
}

void PipelineCoordinator::DecideRestoreFailure(Actions& out) {
  Occasional::RestoreFailure& failure = *occasional().restore_failure;
  const int64_t checkpoint_id = failure.checkpoint_id;
  std::string refusal;
  if (restore_->other_source) {
    refusal = "it is another pipeline's checkpoint (restore_from)";
  } else if (group_ || !spec_.alignment_group.empty()) {
    refusal = "the pipeline is a member of alignment group " +
              (group_ ? group_->name : spec_.alignment_group);
  } else if (checkpoint_id == CommittingId()) {
    refusal = "it is COMMITTING, and falling back past it would repeat its side effects";
  } else if (commits_ && checkpoint_id <= commits_->last_committed_id) {
    refusal = "it is COMMITTED, and falling back past it would repeat its side effects";
  }
  if (!refusal.empty()) {
    FailForRestore(failure.what + "; no fallback: " + refusal +
                       "; choose a restore point with ckptctl pipeline restore",
                   out);
  } else {
    LookForFallback(checkpoint_id, out);
  }
}

void PipelineCoordinator::MaybeDecideRestoreFailure(Actions& out) {
  const auto* failure = occasional_or_none().restore_failure.get();
  if (pending_ || !failure || failure->reading_id != 0 || !failure->why.empty() ||
      !RestoreBlocked()) {
    return;
  }
  DecideRestoreFailure(out);
}

void PipelineCoordinator::LookForFallback(int64_t below, Actions& out) {
  Occasional::RestoreFailure& failure = *occasional().restore_failure;
  int64_t candidate = 0;
  for (const PackedHistoryEntry& entry : history_.entries()) {  // oldest first
    const int64_t id = entry.checkpoint_id();
    if (id >= below) break;
    if (!IsUnrestorable(id) && !history_.BeingDeleted(id)) candidate = id;
  }
  if (candidate == 0) {
    FailForRestore(failure.what +
                       "; no older retained checkpoint is left: choose a restore point with "
                       "ckptctl pipeline restore",
                   out);
    return;
  }
  failure.reading_id = candidate;
  out.push_back(ReadRestoreCandidate{failure.checkpoint_id, candidate});
}

void PipelineCoordinator::FailForRestore(const std::string& why, Actions& out) {
  Occasional::RestoreFailure& failure = *occasional().restore_failure;
  failure.reading_id = 0;
  failure.why = why;
  SetSticky(StickyState::kFailed);
  out.push_back(Log{LogLevel::kError, "pipeline FAILED: " + why});
  AnnounceState(why, out);
  FinishQueuedSavepoint("pipeline FAILED", out);
  Persist(out);
}

Actions PipelineCoordinator::OnRestoreCandidate(int64_t failed_id, int64_t checkpoint_id,
                                                std::optional<CompletedCheckpoint> found) {
  Actions out;
  if (!AwaitsRestoreCandidate(failed_id) || !restore_ || restore_->checkpoint_id != failed_id ||
      occasional().restore_failure->reading_id != checkpoint_id) {
    return out;
  }
  if (!found || found->checkpoint_id != checkpoint_id || !history_.Find(checkpoint_id) ||
      history_.BeingDeleted(checkpoint_id)) {
    // The history named it, the store (or the history, since) no longer holds it: the next older
    // one.
    out.push_back(Log{LogLevel::kWarn, "checkpoint " + std::to_string(checkpoint_id) +
                                           " is not in the store; trying an older one"});
    LookForFallback(checkpoint_id, out);
    Persist(out);
    Rearm(out);
    return out;
  }
  const std::string why = "restored to checkpoint " +
                          CheckpointRef{spec_.key, checkpoint_id}.ToString() + ": " +
                          occasional().restore_failure->what;
  occasional().restore_failure.reset();
  // An operator's choice that failed (RestorePipeline to an older checkpoint of its own): the
  // fallback stands in for it, pinned and persisted as the operator's was, so that a restart does
  // not go back to the newest checkpoint the operator rolled back from.
  const bool operator_set = restore_->operator_set;
  if (operator_set && options_->pins) {
    const CheckpointRef was{spec_.key, failed_id};
    if (options_->pins->Remove(was, spec_.key)) out.push_back(PinDropped{was});
    options_->pins->Add({spec_.key, checkpoint_id}, spec_.key);
  }
  restore_ = std::make_unique<const HeldRestorePoint>(spec_.key, spec_.key, operator_set,
                                                      std::move(*found));
  restore_rescaled_ = RestoreSetDiffers();
  SyncPositionGate();
  out.push_back(Log{LogLevel::kWarn, "pipeline " + why});
  // Every stream ends, so that its worker comes back and is handed the new restore point.
  for (SessionId session : Sessions()) {
    out.push_back(EndSession{session, Status::Aborted(why)});
    LoseSession(session, why, out);
  }
  BumpGeneration(why, out);
  Persist(out);
  Rearm(out);
  return out;
}

void PipelineCoordinator::ForgetRestoreFailure() {
  if (!occasional_) return;
  occasional_->restore_failure.reset();
  std::erase_if(occasional_->unrestorable,
                [&](int64_t id) { return history_.Find(id) == nullptr; });
}

}  // namespace ckpt
