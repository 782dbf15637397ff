// What operators see inside a round (CONTRACT.md, "Seeing inside a checkpoint"): each task's
// part of the pending round or of the newest failed one. Completed rounds are read from the
// store, which keeps their tasks' figures with their states.
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
  if (pending_ && pending_->id == checkpoint_id) {
    RoundSummary& r = detail.round;
    r.checkpoint_id = pending_->id;
    r.kind = pending_->kind;
    r.status = CheckpointStatus::kPending;
    r.triggered_at_ms = pending_->triggered_at_ms;
    r.acked_tasks = static_cast<int>(pending_->acked.size());
    r.expected_tasks = static_cast<int>(expected_.size());
    detail.location = pending_->target;
    acked = &pending_->acked;
    figures = &pending_->figures;
  } else if (last_failed_tasks_ && last_failed_tasks_->checkpoint_id == checkpoint_id &&
             !recent_.empty() && recent_.front().checkpoint_id == checkpoint_id) {
    detail.round = recent_.front();
    acked = &last_failed_tasks_->acked;
    figures = &last_failed_tasks_->figures;
  } else {
    auto recent = std::find_if(recent_.begin(), recent_.end(), [&](const RoundSummary& r) {
      return r.checkpoint_id == checkpoint_id;
    });
    if (recent == recent_.end()) return std::nullopt;
    detail.round = *recent;  // an older failed round: its tasks are no longer kept
    return detail;
  }
  std::map<std::string, TaskDetail> done = AckedDetails(*acked, *figures);
  // Every task the round waits for (or waited for), acked or not: the ones that did not ack
  // name the worker that holds them now.
  detail.tasks.reserve(expected_.size());
  for (const std::string& task : expected_) {
    if (auto it = done.find(task); it != done.end()) {
      detail.tasks.push_back(std::move(it->second));
      continue;
    }
    TaskDetail waiting;
    waiting.task_id = task;
    if (auto owner = task_owner_.find(task); owner != task_owner_.end()) {
      if (auto session = sessions_.find(owner->second); session != sessions_.end()) {
        waiting.worker_id = session->second.worker_id;
      }
    }
    detail.tasks.push_back(std::move(waiting));
  }
  return detail;
}

}  // namespace ckpt
