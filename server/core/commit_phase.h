#pragma once
// CommitPhase: the commit phase of a pipeline's newest completed checkpoint (docs/PROTOCOL.md,
// "Commit phase"; docs/DESIGN.md, "The coordinator's parts"). The checkpoint is COMMITTING from
// its completion until every task of the set sent `committed`, and the COMMITTED mark (a write of
// the pipeline's progress) is durable; then it is COMMITTED, and this part stays as the record of
// when each task committed until the next round starts.
//
// It owns the per-task marks (by index into the task set, which does not change while COMMITTING:
// UpdatePipeline of the set is refused), the overdue notice (once), and the mark's write and its
// retry. The coordinator decides what COMMITTING holds back (rounds, restores, deletes) and who is
// told; this part decides which `committed` counts and when the mark is due.
//
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/types.h"

namespace ckpt {

class CommitPhase {
 public:
  struct Start {
    int64_t checkpoint_id = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    size_t tasks = 0;         // the task set's size
    SteadyTime completed_at;  // when `complete` went out (or the daemon started, after a crash)
    SteadyTime overdue_at;    // completed_at + commit_timeout_ms; SteadyTime::max(): never
    // An alignment group's round: the mark waits until every member committed (GroupAgreed).
    bool group_decides = false;
  };
  explicit CommitPhase(Start start);

  int64_t checkpoint_id() const { return start_.checkpoint_id; }
  CheckpointKind kind() const { return start_.kind; }
  SteadyTime completed_at() const { return start_.completed_at; }
  // Until the COMMITTED mark is durable.
  bool committing() const { return committed_at_ms_ == 0; }
  int64_t committed_at_ms() const { return committed_at_ms_; }

  enum class Mark {
    kOtherCheckpoint,  // not the committing checkpoint (or it is COMMITTED already): ignored
    kDuplicate,        // the task committed already, or is no task of the set: ignored
    kAwaitingMore,     // counted
    kLast,             // counted, and every task committed: the mark is due
  };
  // Task `task` (an index into the set; the caller checked the stream holds it) committed
  // `checkpoint_id` at wall clock `now_ms`.
  Mark Committed(int64_t checkpoint_id, size_t task, int64_t now_ms);
  bool all_tasks_committed() const { return left_ == 0; }
  size_t tasks_left() const { return left_; }
  // The first `max` tasks (indices, ascending) that have not committed.
  std::vector<size_t> TasksLeft(size_t max) const;
  // When the task committed (wall clock); 0: not (yet, or since the daemon started).
  int64_t TaskCommittedAtMs(size_t task) const {
    return task < task_committed_at_ms_.size() ? task_committed_at_ms_[task] : 0;
  }

  // The overdue notice: once, at or after overdue_at, while tasks are left.
  std::optional<SteadyTime> overdue_at() const;
  bool TakeOverdue(SteadyTime now);
  bool overdue() const { return overdue_noted_; }

  // A group's round: every member committed it (or the pipeline left the group): the mark may go.
  void GroupAgreed() { start_.group_decides = false; }
  bool awaits_group() const { return start_.group_decides; }

  // The COMMITTED mark: due once every task committed (and, a group's round, the group agreed),
  // until a write of it is durable. One write at a time; a failed one is retried at `retry_at`.
  bool MarkDue(SteadyTime now) const;
  // A write of the mark went to the store, carrying `at_ms` (the first write's time: a retry
  // writes the same mark).
  void OnMarkSent(int64_t at_ms);
  // The time the mark carries; 0 before its first write.
  int64_t mark_at_ms() const { return mark_at_ms_; }
  // Whether this answer is for the write in flight (false: a stale answer; nothing changed).
  bool OnMarked();
  void OnMarkFailed(SteadyTime retry_at);
  std::optional<SteadyTime> mark_retry_at() const;
  bool mark_in_flight() const { return mark_in_flight_; }

 private:
  Start start_;
  std::vector<int64_t> task_committed_at_ms_;  // by task index; 0: not committed
  size_t left_ = 0;
  int64_t committed_at_ms_ = 0;  // the mark's time, once durable
  int64_t mark_at_ms_ = 0;
  std::optional<SteadyTime> mark_retry_at_;
  bool mark_in_flight_ = false;
  bool overdue_noted_ = false;
};

}  // namespace ckpt
