// The restore loop: where workers restore from, and which checkpoints they may release
// (CONTRACT.md, "Restore and release"). Rounds are in pipeline_coordinator.cc.
#include <algorithm>

#include "core/pipeline_coordinator.h"

namespace ckpt {

bool PipelineCoordinator::RestoreSetDiffers() const {
  if (!restore_) return false;
  const auto& states = restore_->task_states;
  if (states.size() != expected_.size()) return true;
  // Both sorted: one pass.
  return !std::equal(
      states.begin(), states.end(), expected_.begin(),
      [](const auto& state, const std::string& task) { return state.first == task; });
}

RestorePoint PipelineCoordinator::RestorePointFor(const std::vector<std::string>& task_ids) const {
  RestorePoint point;
  if (!restore_) return point;
  point.checkpoint_id = restore_->checkpoint_id;
  point.kind = restore_->kind;
  point.location = restore_->location;
  point.source = spec_.key;
  point.rescaled = restore_rescaled_;
  if (point.rescaled) {
    point.task_states = restore_->task_states;
    return point;
  }
  for (const auto& task : task_ids) {
    if (auto state = restore_->task_states.find(task); state != restore_->task_states.end()) {
      point.task_states.emplace(state->first, state->second);
    }
  }
  return point;
}

void PipelineCoordinator::AdoptCompleted(int64_t checkpoint_id, CheckpointKind kind,
                                         std::string location,
                                         std::map<std::string, TaskState> task_states,
                                         Actions& out) {
  auto point = std::make_unique<CompletedCheckpoint>();
  point->checkpoint_id = checkpoint_id;
  point->kind = kind;
  point->location = std::move(location);
  point->task_states = std::move(task_states);
  restore_ = std::move(point);
  restore_rescaled_ = RestoreSetDiffers();

  history_.push_back({checkpoint_id, kind});
  // The store's commit kept the max(retained, 1) newest plain checkpoints and every savepoint;
  // the same ones leave the history here. Ids are committed in increasing order, so the history
  // stays sorted and the plain checkpoints to drop are its oldest.
  const auto plain = [](const HistoryEntry& e) { return e.kind == CheckpointKind::kCheckpoint; };
  const int64_t keep = std::max<int32_t>(spec_.retained, 1);
  int64_t excess = std::count_if(history_.begin(), history_.end(), plain) - keep;
  if (excess <= 0) return;
  std::vector<int64_t> released;
  std::vector<HistoryEntry> kept;
  kept.reserve(history_.size() - static_cast<size_t>(excess));
  for (const HistoryEntry& entry : history_) {
    if (excess > 0 && plain(entry)) {
      released.push_back(entry.checkpoint_id);
      --excess;
    } else {
      kept.push_back(entry);
    }
  }
  history_ = std::move(kept);
  out.push_back(SendRelease{Sessions(), std::move(released)});
}

Status PipelineCoordinator::CheckSavepointRoom() const {
  const auto held = std::count_if(history_.begin(), history_.end(), [](const HistoryEntry& e) {
    return e.kind != CheckpointKind::kCheckpoint;
  });
  if (held < options_.max_savepoints) return Status::Ok();
  return Status::ResourceExhausted(
      "pipeline " + spec_.key.ToString() + " holds " + std::to_string(held) + " savepoints, " +
      NameLimit("max_savepoints_per_pipeline", options_.max_savepoints) +
      "; delete one first: ckptctl checkpoint delete " + spec_.key.job_id + " " +
      spec_.key.pipeline_id + " ID (ckptctl checkpoint list shows them)");
}

PipelineCoordinator::Outcome PipelineCoordinator::DeleteCheckpoint(int64_t checkpoint_id) {
  Outcome o;
  const auto entry = std::find_if(history_.begin(), history_.end(), [&](const HistoryEntry& e) {
    return e.checkpoint_id == checkpoint_id;
  });
  if (entry == history_.end()) {
    o.status = Status::NotFound("checkpoint " + std::to_string(checkpoint_id) + " of pipeline " +
                                spec_.key.ToString() +
                                " is not in its history (never completed, or released already)");
    return o;
  }
  if (restore_ && restore_->checkpoint_id == checkpoint_id) {
    o.status = Status::FailedPrecondition(
        "checkpoint " + std::to_string(checkpoint_id) + " is the restore point of pipeline " +
        spec_.key.ToString() + " (its newest completed); it can be deleted once a newer one " +
        "completes");
    return o;
  }
  if (std::find(deleting_.begin(), deleting_.end(), checkpoint_id) != deleting_.end()) return o;
  deleting_.push_back(checkpoint_id);
  o.actions.push_back(Log{LogLevel::kInfo, std::string(CheckpointKindName(entry->kind)) + " " +
                                               std::to_string(checkpoint_id) +
                                               " deleted by an operator"});
  o.actions.push_back(DeleteCheckpoints{{checkpoint_id}});
  return o;
}

Actions PipelineCoordinator::OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids) {
  Actions out;
  std::vector<int64_t> released;
  for (int64_t id : checkpoint_ids) {
    std::erase(deleting_, id);
    const auto removed =
        std::erase_if(history_, [id](const HistoryEntry& e) { return e.checkpoint_id == id; });
    if (removed > 0) released.push_back(id);
  }
  if (!released.empty() && !deleted_) out.push_back(SendRelease{Sessions(), std::move(released)});
  return out;
}

Actions PipelineCoordinator::OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                                       const Status& error) {
  Actions out;
  for (int64_t id : checkpoint_ids) std::erase(deleting_, id);
  out.push_back(
      Log{LogLevel::kWarn, "deleting checkpoint(s) failed, they stay: " + error.ToString()});
  return out;
}

}  // namespace ckpt
