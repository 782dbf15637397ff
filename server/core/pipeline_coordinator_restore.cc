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
  if (!restore_) return point;
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
  if (restore_ && !point.rescaled) {
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
  if ((restore_ && !restore_->other_source && restore_->checkpoint_id == checkpoint_id) ||
      IsPinned(checkpoint_id)) {
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

}  // namespace ckpt
