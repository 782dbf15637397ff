#pragma once
// PendingRound: one pipeline's round from its trigger until it ends (docs/DESIGN.md, "The
// coordinator's parts"). It is fenced by id and phase: a message or timer naming another id is
// stale, and so is one that arrives once every task acked (the round is then completing: with the
// store, or a member's part with its group, and never aborted). It holds the acks as they come, in
// a map by task, and who sent each and when (stored with the checkpoint).
//
// The coordinator decides what a round's end means (counters, the restore point, the workers);
// this part decides which ack counts and when the round is complete or overdue.
//
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/task_id_set.h"
#include "core/types.h"

namespace ckpt {

class PendingRound {
 public:
  // What a round is given when it is triggered.
  struct Start {
    int64_t id = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    std::string target;            // savepoints: where the state goes
    std::string requested_target;  // savepoints: the target as asked (empty: default location)
    SteadyTime triggered_at;
    SteadyTime deadline;
    int64_t triggered_at_ms = 0;  // wall clock
    int64_t position = 0;         // trigger.position; 0: none
    bool of_group = false;        // its alignment group's round, not the pipeline's own
    bool worker_asked = false;    // savepoints: a worker's request waits for it
    // No stuck notice is due: the deadline comes first, or the group keeps the timer.
    bool stuck_noted = false;
  };
  explicit PendingRound(Start start) : start_(std::move(start)) {}

  int64_t id() const { return start_.id; }
  CheckpointKind kind() const { return start_.kind; }
  bool savepoint() const { return start_.kind != CheckpointKind::kCheckpoint; }
  const std::string& target() const { return start_.target; }
  const std::string& requested_target() const { return start_.requested_target; }
  SteadyTime triggered_at() const { return start_.triggered_at; }
  SteadyTime deadline() const { return start_.deadline; }
  int64_t triggered_at_ms() const { return start_.triggered_at_ms; }
  int64_t position() const { return start_.position; }
  bool of_group() const { return start_.of_group; }
  bool worker_asked() const { return start_.worker_asked; }
  // Every task acked: the store (or, a member's, its group) has it. Never aborted from then on.
  bool completing() const { return completing_; }

  // Whether a message or timer naming `checkpoint_id` concerns this round: its id, and tasks are
  // still awaited.
  bool Awaits(int64_t checkpoint_id) const { return start_.id == checkpoint_id && !completing_; }

  enum class Timer {
    kStale,    // another round's, or this one's once completing: nothing to do
    kStuck,    // the stuck threshold, before the deadline (once): tell, and wait for the deadline
    kExpired,  // the deadline
  };
  Timer OnTimer(int64_t checkpoint_id, SteadyTime now);

  enum class Acked {
    kDuplicate,      // not a task of `expected`, or acked already: ignored
    kOtherPosition,  // snapshotted at another position than the round's: the round fails
    kAwaitingMore,   // counted
    kLast,           // counted, and every task acked: completing from now on
  };
  // An ack of `task` (a task of the stream that sent it; the caller checked). `expected`: the
  // pipeline's task set, which does not change while a round is pending and not completing.
  Acked Ack(const TaskIdSet& expected, const std::string& task, const TaskState& state,
            TaskFigures figures, int64_t position);
  bool HasAcked(const std::string& task) const { return acked_.count(task) > 0; }
  // Whether an ack of `task` would count: a task of `expected`, not acked yet, the round not
  // completing.
  bool Awaits(const TaskIdSet& expected, const std::string& task) const {
    return !completing_ && expected.count(task) && !HasAcked(task);
  }
  size_t acked_count() const { return acked_.size(); }
  const std::map<std::string, TaskState>& acked() const { return acked_; }
  // Who acked each task, when, and what it reported, in ack order.
  const std::vector<TaskFigures>& figures() const { return figures_; }

  // The checkpoint to make durable, once completing: the acked states, the figures by task.
  CompletedCheckpoint ToCheckpoint(int64_t finished_at_ms) const;
  // The commit's CheckpointCommit::keep: what its trim spares (completing rounds only).
  void SetKeep(std::vector<int64_t> keep) { keep_ = std::move(keep); }
  const std::vector<int64_t>& keep() const { return keep_; }

  // A worker's request joined this savepoint.
  void JoinWorkerRequest() { start_.worker_asked = true; }

  // Whether the checkpoint handed to the store has a commit phase (decided at the last ack, when
  // it is written COMMITTING or not): its completion makes it COMMITTING whatever the spec says
  // by then, as the store does after a restart.
  void SetCommitPhase(bool on) { commit_phase_ = on; }
  bool commit_phase() const { return commit_phase_; }

  // The acks, moved out as the round ends (the restore point's states, or a failed round's).
  std::map<std::string, TaskState> TakeAcked() { return std::move(acked_); }
  std::vector<TaskFigures> TakeFigures() { return std::move(figures_); }

 private:
  Start start_;
  bool completing_ = false;
  bool commit_phase_ = false;
  // The tasks that acked. The ones still awaited are `expected` minus these, kept implicit
  // rather than copied at every trigger: while a round is pending and not completing, the task
  // set does not change (UpdateSpec fails such a round when it does), and only its tasks are
  // acked (OnRegister refuses any other task).
  std::map<std::string, TaskState> acked_;
  std::vector<TaskFigures> figures_;
  std::vector<int64_t> keep_;
};

}  // namespace ckpt
