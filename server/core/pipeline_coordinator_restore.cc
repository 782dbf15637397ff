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

std::vector<int64_t> PipelineCoordinator::ReleasedBy(int64_t extra,
                                                     const std::vector<int64_t>& keep) const {
  const int64_t window_start = WindowStart(extra);
  std::vector<int64_t> released;
  for (const PackedHistoryEntry& entry : history_) {
    if (entry.plain() && entry.checkpoint_id() < window_start &&
        !std::binary_search(keep.begin(), keep.end(), entry.checkpoint_id())) {
      released.push_back(entry.checkpoint_id());
    }
  }
  return released;
}

int64_t PipelineCoordinator::WindowStart(int64_t extra) const {
  const int64_t keep = std::max<int32_t>(spec_.retained, 1);
  int64_t counted = extra > 0 ? 1 : 0;
  if (counted == keep) return extra;
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (!it->plain()) continue;
    if (++counted == keep) return it->checkpoint_id();
  }
  return 0;
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

  // The window and the commit landing now: what the history usually holds just before its trim.
  const size_t window = static_cast<size_t>(std::max<int32_t>(spec_.retained, 1)) + 1;
  if (history_.size() == history_.capacity()) {
    // Doubling up to the window, then exactly that: the history lives as long as the pipeline.
    // Beyond the window (savepoints, pinned ids) doubling again.
    size_t room = std::max<size_t>(2 * history_.size(), 1);
    if (history_.size() < window) room = std::min(room, window);
    history_.reserve(room);
  }
  history_.emplace_back(checkpoint_id, kind);
  // The store's commit kept the max(retained, 1) newest plain checkpoints, every savepoint and
  // the pinned ones it was told to keep; the same ones stay here. Ids are committed in
  // increasing order, so the history stays sorted. Trimmed in place: no allocation a commit.
  const int64_t window_start = WindowStart();
  horizon_ = std::max(horizon_, window_start);
  std::vector<int64_t> released;
  size_t kept = 0;
  for (const PackedHistoryEntry entry : history_) {
    const bool out_of_window = entry.plain() && entry.checkpoint_id() < window_start &&
                               !std::binary_search(keep.begin(), keep.end(), entry.checkpoint_id());
    if (out_of_window) {
      released.push_back(entry.checkpoint_id());
    } else {
      history_[kept++] = entry;
    }
  }
  history_.erase(history_.begin() + static_cast<std::ptrdiff_t>(kept), history_.end());
  // Savepoints or pins held once made it grow: it shrinks when they have gone.
  if (history_.capacity() > 2 * window && history_.size() < window) history_.shrink_to_fit();
  if (!released.empty()) {
    // The commit recorded them (ProjectedProgress): after a restart they are sent again.
    last_released_ = released;
    resend_release_ = false;
    out.push_back(SendRelease{Sessions(), std::move(released)});
  }
  // A pin dropped while this commit was in flight: what it spared may go now.
  DeleteUnpinnedOutsideWindow(out);
}

void PipelineCoordinator::DeleteUnpinnedOutsideWindow(Actions& out) {
  const int64_t window_start = std::max(WindowStart(), horizon_);
  std::vector<int64_t> ids;
  for (const PackedHistoryEntry& entry : history_) {
    if (!entry.plain() || entry.checkpoint_id() >= window_start) continue;
    if (IsPinned(entry.checkpoint_id())) continue;
    if (restore_ && restore_->checkpoint_id == entry.checkpoint_id() && !restore_->other_source) {
      continue;
    }
    if (BeingDeleted(entry.checkpoint_id())) continue;
    ids.push_back(entry.checkpoint_id());
  }
  if (ids.empty()) return;
  std::vector<int64_t>& deleting = occasional().deleting;
  deleting.insert(deleting.end(), ids.begin(), ids.end());
  out.push_back(DeleteCheckpoints{std::move(ids)});
}

Status PipelineCoordinator::AddPin(int64_t checkpoint_id, const PipelineKey& holder) {
  const auto entry =
      std::find_if(history_.begin(), history_.end(),
                   [&](const PackedHistoryEntry& e) { return e.checkpoint_id() == checkpoint_id; });
  const std::string what =
      "checkpoint " + std::to_string(checkpoint_id) + " of pipeline " + spec_.key.ToString();
  if (entry == history_.end() || BeingDeleted(checkpoint_id)) {
    return Status::NotFound(what + " is not in its history (ckptctl checkpoint list shows it)");
  }
  if (!options_->pins) return Status::Internal("no restore pins in this daemon");
  // A commit in flight may push a plain checkpoint out as it lands, with a trim decided before
  // this pin: refuse rather than race it.
  const int64_t plain_extra =
      pending_ && pending_->kind == CheckpointKind::kCheckpoint ? pending_->id : 0;
  if (entry->plain() && pending_ && pending_->completing && !IsPinned(checkpoint_id) &&
      checkpoint_id < std::max(WindowStart(plain_extra), horizon_)) {
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
  if (pending_ && pending_->completing) return out;
  DeleteUnpinnedOutsideWindow(out);
  return out;
}

PipelineCoordinator::Outcome PipelineCoordinator::Restore(const PipelineKey& source,
                                                          CompletedCheckpoint checkpoint) {
  Outcome o;
  const bool stopped_here = sticky_ != StickyState::kActive;
  if (deleted_ || shutting_down_ || pending_ || (!stopped_here && !task_owner_.empty())) {
    o.status = Status::FailedPrecondition(
        "pipeline " + spec_.key.ToString() + " is " + PipelineStateName(State()) +
        (pending_ ? " with checkpoint " + std::to_string(pending_->id) + " pending" : "") +
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
  const auto held = std::count_if(history_.begin(), history_.end(),
                                  [](const PackedHistoryEntry& e) { return !e.plain(); });
  if (held < options_->max_savepoints) return Status::Ok();
  return Status::ResourceExhausted(
      "pipeline " + spec_.key.ToString() + " holds " + std::to_string(held) + " savepoints, " +
      NameLimit("max_savepoints_per_pipeline", options_->max_savepoints) +
      "; delete one first: ckptctl checkpoint delete " + spec_.key.job_id + " " +
      spec_.key.pipeline_id + " ID (ckptctl checkpoint list shows them)");
}

PipelineCoordinator::Outcome PipelineCoordinator::DeleteCheckpoint(int64_t checkpoint_id) {
  Outcome o;
  const auto entry =
      std::find_if(history_.begin(), history_.end(),
                   [&](const PackedHistoryEntry& e) { return e.checkpoint_id() == checkpoint_id; });
  const std::string what = "checkpoint " + std::to_string(checkpoint_id);
  if (entry == history_.end()) {
    o.status = Status::NotFound(what + " of pipeline " + spec_.key.ToString() +
                                " is not in its history (never completed, or released already)");
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
  if (BeingDeleted(checkpoint_id)) return o;
  occasional().deleting.push_back(checkpoint_id);
  o.actions.push_back(Log{LogLevel::kInfo, std::string(CheckpointKindName(entry->kind())) + " " +
                                               std::to_string(checkpoint_id) +
                                               " deleted by an operator"});
  o.actions.push_back(DeleteCheckpoints{{checkpoint_id}});
  return o;
}

Actions PipelineCoordinator::OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids) {
  Actions out;
  std::vector<int64_t> released;
  for (int64_t id : checkpoint_ids) {
    if (occasional_) std::erase(occasional_->deleting, id);
    const auto removed = std::erase_if(
        history_, [id](const PackedHistoryEntry& e) { return e.checkpoint_id() == id; });
    if (removed > 0) released.push_back(id);
  }
  if (!released.empty() && !deleted_) {
    last_released_ = released;
    resend_release_ = false;
    Persist(out);  // recorded, so that a restart sends them again
    out.push_back(SendRelease{Sessions(), std::move(released)});
  }
  return out;
}

Actions PipelineCoordinator::OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                                       const Status& error) {
  Actions out;
  if (occasional_) {
    for (int64_t id : checkpoint_ids) std::erase(occasional_->deleting, id);
  }
  out.push_back(
      Log{LogLevel::kWarn, "deleting checkpoint(s) failed, they stay: " + error.ToString()});
  return out;
}

}  // namespace ckpt
