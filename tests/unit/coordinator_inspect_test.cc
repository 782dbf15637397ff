// What operators see inside a round (CONTRACT.md, "Seeing inside a checkpoint"): each task's
// part, who acked it and when, what it reported, and who holds the ones not acked yet.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

TEST(CoordinatorInspect, ThePendingRoundNamesWhoAckedWhenAndWhoHoldsTheRest) {
  Harness h(MakeSpec({"a", "b", "c"}));
  h.Start();
  ASSERT_TRUE(h.c().OnRegister(1, "w-ab", {"a", "b"}, false).status.ok());
  auto reg = h.c().OnRegister(2, "w-c", {"c"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  h.RunFor(milliseconds(0));
  const int64_t id = h.LastTriggerId();
  ASSERT_GT(id, 0);
  h.RunFor(milliseconds(250));
  const int64_t acked_at = h.clock.WallMs();
  h.Apply(h.c().OnAck(1, id, "b", TaskState{"s3://b", 7, ""}, AckFigures{20, 230, 5, 4096}));

  auto detail = h.c().DescribeCheckpoint(id);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->round.status, CheckpointStatus::kPending);
  EXPECT_EQ(detail->round.acked_tasks, 1);
  ASSERT_EQ(detail->tasks.size(), 3u);
  EXPECT_EQ(detail->tasks[0].task_id, "a");  // by task id
  EXPECT_EQ(detail->tasks[0].worker_id, "w-ab") << "not acked: the worker that holds it";
  EXPECT_EQ(detail->tasks[0].acked_at_ms, 0);
  EXPECT_EQ(detail->tasks[1].task_id, "b");
  EXPECT_EQ(detail->tasks[1].worker_id, "w-ab");
  EXPECT_EQ(detail->tasks[1].acked_at_ms, acked_at);
  EXPECT_EQ(detail->tasks[1].state.uri, "s3://b");
  EXPECT_EQ(detail->tasks[1].reported, (AckFigures{20, 230, 5, 4096}));
  EXPECT_EQ(detail->tasks[2].worker_id, "w-c");

  // Its stream went: the round ends with it, and the task is held by no one.
  h.Apply(h.c().OnSessionEnded(2, "gone"));
  auto aborted = h.c().DescribeCheckpoint(id);
  ASSERT_TRUE(aborted);
  EXPECT_EQ(aborted->round.status, CheckpointStatus::kAborted);
  ASSERT_EQ(aborted->tasks.size(), 3u);
  EXPECT_EQ(aborted->tasks[2].worker_id, "");
  EXPECT_EQ(aborted->tasks[1].reported.async_duration_ms, 230);
}

TEST(CoordinatorInspect, TheCommitCarriesEveryTasksFiguresByTaskId) {
  Harness h(MakeSpec({"b", "a"}));
  h.auto_commit = false;
  const int64_t id = h.StartToFirstTrigger();
  h.Apply(h.c().OnAck(1, id, "b", TaskState{"s3://b", 1, ""}, AckFigures{1, 2, 3, 4}));
  h.Apply(h.c().OnAck(1, id, "a", TaskState{"s3://a", 1, ""}));
  ASSERT_EQ(h.commits.size(), 1u);
  const auto& figures = h.commits[0].commit.checkpoint.task_figures;
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0].task_id, "a");
  EXPECT_EQ(figures[0].worker_id, "w1");
  EXPECT_EQ(figures[0].reported, AckFigures{}) << "not reported";
  EXPECT_EQ(figures[1].task_id, "b");
  EXPECT_EQ(figures[1].reported, (AckFigures{1, 2, 3, 4}));
  // Completing, it is still described from memory until the store answers.
  ASSERT_TRUE(h.c().DescribeCheckpoint(id));
  h.Apply(h.c().OnCommitted(id));
  EXPECT_FALSE(h.c().DescribeCheckpoint(id)) << "completed: the store has it now";
}

TEST(CoordinatorInspect, OnlyTheNewestFailedRoundKeepsItsTasks) {
  Harness h;  // tasks a and b, on one worker
  const int64_t first = h.StartToFirstTrigger();
  h.Apply(h.c().OnAck(1, first, "a", TaskState{"s3://a", 1, ""}, AckFigures{9, 0, 0, 0}));
  h.Apply(h.c().OnDecline(1, first, "b", "disk full", false));
  auto failed = h.c().DescribeCheckpoint(first);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->round.status, CheckpointStatus::kFailed);
  ASSERT_EQ(failed->tasks.size(), 2u);
  EXPECT_EQ(failed->tasks[0].reported.sync_duration_ms, 9);
  EXPECT_EQ(failed->tasks[1].acked_at_ms, 0) << "b declined";

  h.Apply(h.c().Resume().actions);  // tolerable_failures 0: FAILED until resumed
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  ASSERT_GT(second, first);
  h.Apply(h.c().OnDecline(1, second, "a", "again", false));
  auto older = h.c().DescribeCheckpoint(first);
  ASSERT_TRUE(older) << "still in the recent rounds";
  EXPECT_TRUE(older->tasks.empty()) << "one failed round's tasks are kept, not every one's";
  ASSERT_TRUE(h.c().DescribeCheckpoint(second));
  EXPECT_EQ(h.c().DescribeCheckpoint(second)->tasks.size(), 2u);
  EXPECT_FALSE(h.c().DescribeCheckpoint(second + 100));
}

}  // namespace
}  // namespace ckpt::testing
