#include "core/pending_round.h"

#include <algorithm>

namespace ckpt {

PendingRound::Timer PendingRound::OnTimer(int64_t checkpoint_id, SteadyTime now) {
  // Fenced by id and phase: a timeout already posted when the round ended or moved to the store
  // is stale and dropped.
  if (!Awaits(checkpoint_id)) return Timer::kStale;
  if (!start_.stuck_noted && now < start_.deadline) {
    start_.stuck_noted = true;
    return Timer::kStuck;
  }
  return Timer::kExpired;
}

PendingRound::Acked PendingRound::Ack(const TaskIdSet& expected, const std::string& task,
                                      const TaskState& state, TaskFigures figures,
                                      int64_t position) {
  if (completing_ || !expected.count(task)) return Acked::kDuplicate;
  // One walk of the map finds a repeat and places a new one (this runs for every ack).
  auto [slot, added] = acked_.try_emplace(task);
  // Checked before the position: a repeated ack is ignored whatever position it names.
  if (!added) return Acked::kDuplicate;
  if (start_.position > 0 && position != start_.position) {
    // Snapshotted somewhere else: the round's states would not line up.
    acked_.erase(slot);
    return Acked::kOtherPosition;
  }
  slot->second = state;
  figures_.push_back(std::move(figures));
  if (acked_.size() < expected.size()) return Acked::kAwaitingMore;
  completing_ = true;
  return Acked::kLast;
}

CompletedCheckpoint PendingRound::ToCheckpoint(int64_t finished_at_ms) const {
  CompletedCheckpoint checkpoint;
  checkpoint.checkpoint_id = start_.id;
  checkpoint.kind = start_.kind;
  checkpoint.triggered_at_ms = start_.triggered_at_ms;
  checkpoint.finished_at_ms = finished_at_ms;
  checkpoint.location = start_.target;
  checkpoint.task_states = acked_;
  checkpoint.task_figures = figures_;
  checkpoint.position = start_.position;
  std::sort(checkpoint.task_figures.begin(), checkpoint.task_figures.end(),
            [](const TaskFigures& a, const TaskFigures& b) { return a.task_id < b.task_id; });
  return checkpoint;
}

}  // namespace ckpt
