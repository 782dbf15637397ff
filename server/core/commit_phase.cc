#include "core/commit_phase.h"

namespace ckpt {

CommitPhase::CommitPhase(Start start)
    : start_(start), task_committed_at_ms_(start.tasks, 0), left_(start.tasks) {}

CommitPhase::Mark CommitPhase::Committed(int64_t checkpoint_id, size_t task, int64_t now_ms) {
  if (checkpoint_id != start_.checkpoint_id || !committing()) return Mark::kOtherCheckpoint;
  if (task >= task_committed_at_ms_.size() || task_committed_at_ms_[task] != 0) {
    return Mark::kDuplicate;
  }
  // A wall clock at 0 would read as "not committed".
  task_committed_at_ms_[task] = now_ms > 0 ? now_ms : 1;
  --left_;
  return left_ == 0 ? Mark::kLast : Mark::kAwaitingMore;
}

std::vector<size_t> CommitPhase::TasksLeft(size_t max) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < task_committed_at_ms_.size() && out.size() < max; ++i) {
    if (task_committed_at_ms_[i] == 0) out.push_back(i);
  }
  return out;
}

std::optional<SteadyTime> CommitPhase::overdue_at() const {
  if (overdue_noted_ || left_ == 0 || !committing()) return std::nullopt;
  if (start_.overdue_at == SteadyTime::max()) return std::nullopt;  // no timeout: never overdue
  return start_.overdue_at;
}

bool CommitPhase::TakeOverdue(SteadyTime now) {
  const std::optional<SteadyTime> at = overdue_at();
  if (!at || now < *at) return false;
  overdue_noted_ = true;
  return true;
}

bool CommitPhase::MarkDue(SteadyTime now) const {
  if (!committing() || left_ > 0 || mark_in_flight_ || start_.group_decides) return false;
  return !mark_retry_at_ || now >= *mark_retry_at_;
}

void CommitPhase::OnMarkSent(int64_t at_ms) {
  mark_in_flight_ = true;
  if (mark_at_ms_ == 0) mark_at_ms_ = at_ms > 0 ? at_ms : 1;
}

bool CommitPhase::OnMarked() {
  if (!mark_in_flight_) return false;
  mark_in_flight_ = false;
  mark_retry_at_.reset();
  if (committing()) committed_at_ms_ = mark_at_ms_;
  return true;
}

void CommitPhase::OnMarkFailed(SteadyTime retry_at) {
  mark_in_flight_ = false;
  mark_retry_at_ = retry_at;
}

std::optional<SteadyTime> CommitPhase::mark_retry_at() const {
  if (!committing() || mark_in_flight_ || left_ > 0 || start_.group_decides) return std::nullopt;
  return mark_retry_at_;
}

}  // namespace ckpt
