// CommitPhase: each task's `committed` counted once for its checkpoint only, the overdue notice
// once while tasks are left, and the COMMITTED mark: due once every task committed, one write at a
// time, retried after a failure, its time the first write's.
#include "core/commit_phase.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ckpt {
namespace {

using Mark = CommitPhase::Mark;
using std::chrono::seconds;

const SteadyTime kCompletedAt = SteadyTime{} + std::chrono::hours(1);

CommitPhase PhaseOfThreeTasks() {
  return CommitPhase({/*checkpoint_id=*/9, CheckpointKind::kCheckpoint, /*tasks=*/3, kCompletedAt,
                      kCompletedAt + seconds(30)});
}

TEST(CommitPhase, EachTaskCommitsOnceAndOnlyItsCheckpointCounts) {
  CommitPhase phase = PhaseOfThreeTasks();
  EXPECT_EQ(phase.Committed(8, 0, 100), Mark::kOtherCheckpoint);
  EXPECT_EQ(phase.Committed(9, 1, 100), Mark::kAwaitingMore);
  EXPECT_EQ(phase.Committed(9, 1, 101), Mark::kDuplicate);
  EXPECT_EQ(phase.Committed(9, 3, 101), Mark::kDuplicate);  // no task of the set
  EXPECT_EQ(phase.tasks_left(), 2u);
  EXPECT_EQ(phase.TasksLeft(10), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(phase.TasksLeft(1), (std::vector<size_t>{0}));
  EXPECT_EQ(phase.Committed(9, 0, 102), Mark::kAwaitingMore);
  EXPECT_FALSE(phase.all_tasks_committed());
  EXPECT_EQ(phase.Committed(9, 2, 103), Mark::kLast);
  EXPECT_TRUE(phase.all_tasks_committed());
  EXPECT_EQ(phase.TaskCommittedAtMs(1), 100);  // the first one's time, not the repeat's
  EXPECT_EQ(phase.TaskCommittedAtMs(2), 103);
  EXPECT_TRUE(phase.committing()) << "COMMITTED only once the mark is durable";
}

TEST(CommitPhase, TheOverdueNoticeComesOnceAndNotOnceEveryTaskCommitted) {
  CommitPhase phase = PhaseOfThreeTasks();
  EXPECT_EQ(phase.overdue_at(), kCompletedAt + seconds(30));
  EXPECT_FALSE(phase.TakeOverdue(kCompletedAt + seconds(29)));
  EXPECT_TRUE(phase.TakeOverdue(kCompletedAt + seconds(31)));
  EXPECT_TRUE(phase.overdue());
  EXPECT_FALSE(phase.TakeOverdue(kCompletedAt + seconds(60)));
  EXPECT_FALSE(phase.overdue_at().has_value());

  CommitPhase done = PhaseOfThreeTasks();
  for (size_t task : {0, 1, 2}) done.Committed(9, task, 100);
  EXPECT_FALSE(done.overdue_at().has_value());
  EXPECT_FALSE(done.TakeOverdue(kCompletedAt + seconds(31)));
}

TEST(CommitPhase, TheMarkIsWrittenOnceAtATimeRetriedAndDurableOnlyWhenAnswered) {
  CommitPhase phase = PhaseOfThreeTasks();
  const SteadyTime now = kCompletedAt + seconds(1);
  EXPECT_FALSE(phase.MarkDue(now)) << "tasks are left";
  for (size_t task : {0, 1, 2}) phase.Committed(9, task, 100);
  ASSERT_TRUE(phase.MarkDue(now));
  phase.OnMarkSent(5000);
  EXPECT_FALSE(phase.MarkDue(now)) << "one write at a time";
  phase.OnMarkFailed(now + seconds(1));
  EXPECT_EQ(phase.mark_retry_at(), now + seconds(1));
  EXPECT_FALSE(phase.MarkDue(now));
  EXPECT_TRUE(phase.MarkDue(now + seconds(1)));
  phase.OnMarkSent(6000);  // a retry writes the first write's mark
  EXPECT_EQ(phase.mark_at_ms(), 5000);
  EXPECT_TRUE(phase.committing());
  EXPECT_TRUE(phase.OnMarked());
  EXPECT_FALSE(phase.committing());
  EXPECT_EQ(phase.committed_at_ms(), 5000);
  EXPECT_FALSE(phase.OnMarked()) << "a second answer is stale";
  EXPECT_FALSE(phase.MarkDue(now + seconds(10)));
  EXPECT_EQ(phase.Committed(9, 0, 200), Mark::kOtherCheckpoint) << "COMMITTED: nothing counts";
}

}  // namespace
}  // namespace ckpt
