// What operators see inside a round (docs/man/ckptctl-checkpoint.1, "get"): each task's
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

// --- ExplainPipeline: one holdup per state, and its sentence ---

std::string Sentence(Harness& h) {
  return ExplainSentence(h.c().key(), h.c().Explain(), h.clock.WallMs());
}

// Which tasks ever registered follows the task set: a task that joins it by an update has never
// registered, even though as many tasks as the set holds once had.
TEST(CoordinatorExplain, ATaskAddedByAnUpdateHasNeverRegistered) {
  Harness h(MakeSpec({"a", "b"}));
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().OnSessionEnded(1, "gone"));  // before any round completed
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kTasksMissing) << "a and b both came once";

  PipelineSpec spec = h.c().spec();
  spec.task_ids = {"a", "c"};
  ASSERT_TRUE(h.c().UpdateSpec(spec).status.ok());
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kNeverAllTasks) << "c never came";

  auto reg = h.c().OnRegister(2, "w2", {"c"}, false);
  ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
  h.Apply(reg.actions);
  h.Apply(h.c().OnSessionEnded(2, "gone"));
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kTasksMissing) << "a before the update, c after it";
}

TEST(CoordinatorExplain, TasksNeverAllThereThenMissingNameThemAndSinceWhen) {
  Harness h(MakeSpec({"a", "b"}));
  h.Start();
  Explanation e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kNeverAllTasks);
  EXPECT_EQ(e.tasks_total, 2);
  EXPECT_EQ(e.tasks[0].worker_id, "");
  EXPECT_NE(Sentence(h).find("never had all its tasks: 2 tasks have no worker (a, b)"),
            std::string::npos)
      << Sentence(h);

  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  h.RunFor(milliseconds(700));
  const int64_t lost_at = h.clock.WallMs();
  h.Apply(h.c().OnSessionEnded(1, "gone"));
  h.RunFor(milliseconds(5000));
  e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kTasksMissing);
  ASSERT_EQ(e.tasks.size(), 2u);
  EXPECT_EQ(e.tasks[0].since_ms, lost_at);
  EXPECT_NE(Sentence(h).find("waiting for tasks: 2 tasks have no worker (a, b) for 5s"),
            std::string::npos)
      << Sentence(h);
}

TEST(CoordinatorExplain, APendingRoundNamesTheTaskItsWorkerAndItsAgeAgainstRecentRounds) {
  PipelineSpec spec = MakeSpec({"a", "b"});
  spec.timeout_ms = 60000;
  Harness h(spec);
  const int64_t c1 = h.StartToFirstTrigger();
  h.RunFor(milliseconds(200));
  h.AckAll(c1);                 // one round of 200 ms
  h.RunFor(milliseconds(800));  // the next is due 1 s after the first
  const int64_t c2 = h.LastTriggerId();
  ASSERT_GT(c2, c1);
  h.Apply(h.c().OnAck(1, c2, "a", TaskState{"s3://a", 1, ""}));
  h.RunFor(milliseconds(4000));
  Explanation e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kRoundPending);
  EXPECT_EQ(e.pending_checkpoint_id, c2);
  EXPECT_EQ(e.pending_age_ms, 4000);
  EXPECT_EQ(e.recent_rounds, 1);
  EXPECT_EQ(e.recent_p95_ms, 200);
  EXPECT_EQ(e.stuck_threshold_ms, 30000) << "max(3 x 200 ms, 30 s)";
  ASSERT_EQ(e.tasks.size(), 1u);
  EXPECT_EQ(e.tasks[0].task_id, "b");
  EXPECT_EQ(e.tasks[0].worker_id, "w1");
  EXPECT_EQ(e.tasks[0].session, 1u);
  EXPECT_EQ(Sentence(h),
            "CHECKPOINT " + std::to_string(c2) +
                " is waiting for task b of worker w1 for 4s (timeout 1m, p95 of the last 1 "
                "rounds 200ms); no message from w1 yet");
  h.RunFor(milliseconds(26000));
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kRoundSlow);
  EXPECT_EQ(Sentence(h).rfind("stuck: ", 0), 0u) << Sentence(h);
  EXPECT_EQ(h.c().Explain(/*stuck_threshold_ms=*/90000).stuck_threshold_ms, 90000);
}

TEST(CoordinatorExplain, PausedFailedAndStoppedSayWhyAndSinceWhen) {
  Harness failed;
  const int64_t c1 = failed.StartToFirstTrigger();
  failed.Apply(failed.c().OnDecline(1, c1, "b", "disk full", false));  // tolerable_failures 0
  Explanation e = failed.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kFailed);
  EXPECT_EQ(e.state_since_ms, failed.clock.WallMs());
  EXPECT_NE(e.state_reason.find("after 1 consecutive failed checkpoints"), std::string::npos);
  EXPECT_NE(e.state_reason.find("disk full"), std::string::npos) << e.state_reason;
  EXPECT_NE(Sentence(failed).find("ckptctl pipeline resume job pipe goes on"), std::string::npos);

  Harness paused;
  paused.AckAll(paused.StartToFirstTrigger());
  paused.Apply(paused.c().Pause().actions);
  paused.RunFor(milliseconds(3000));
  EXPECT_EQ(paused.c().Explain().holdup, Holdup::kPaused);
  EXPECT_EQ(Sentence(paused).rfind("PAUSED for 3s (paused by an operator)", 0), 0u)
      << Sentence(paused);

  Harness stopped;
  stopped.AckAll(stopped.StartToFirstTrigger());
  stopped.Apply(stopped.c().RequestSavepoint("", true, milliseconds(60000)).actions);
  const int64_t stop = stopped.LastTriggerId();
  stopped.AckAll(stop);
  e = stopped.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kStopped);
  EXPECT_EQ(e.state_reason, "by savepoint " + std::to_string(stop));
}

TEST(CoordinatorExplain, BetweenRoundsItSaysWhenTheNextIsDueOrWhatItWaitsFor) {
  PipelineSpec spec = MakeSpec();
  spec.min_pause_ms = 3000;
  Harness h(spec);
  const int64_t c1 = h.StartToFirstTrigger();
  h.RunFor(milliseconds(500));
  h.AckAll(c1);
  Explanation e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kWaitingMinPause) << "interval 1 s, but 3 s of pause";
  EXPECT_EQ(e.next_trigger_in_ms, 3000);
  h.RunFor(milliseconds(3000));
  const int64_t c2 = h.LastTriggerId();
  h.AckAll(c2);
  h.RunFor(milliseconds(3000));
  h.AckAll(h.LastTriggerId());
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kWaitingMinPause);

  Harness quick;
  quick.auto_reserve = false;
  quick.Start();
  quick.RegisterAll();
  quick.RunFor(milliseconds(0));
  EXPECT_EQ(quick.c().Explain().holdup, Holdup::kWaitingForIds);
  Harness plain;
  const int64_t p1 = plain.StartToFirstTrigger();
  plain.AckAll(p1);
  e = plain.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kNone);
  EXPECT_EQ(e.next_trigger_in_ms, 1000);
  EXPECT_EQ(e.last_completed_checkpoint_id, p1);
  plain.Apply(plain.c().OnStoreWritable(false));
  EXPECT_EQ(plain.c().Explain().holdup, Holdup::kStoreUnwritable);
}

TEST(RecentDurations, NearestRankP95OfTheLastTwentyInTensOfMilliseconds) {
  RecentDurations d;
  EXPECT_EQ(d.P95Ms(), 0);
  for (int i = 1; i <= 19; ++i) d.Add(100);
  d.Add(5000);
  EXPECT_EQ(d.count(), 20);
  EXPECT_EQ(d.P95Ms(), 100) << "19 of 20 at 100 ms: the 19th is the 95th percentile";
  d.Add(5000);  // replaces the oldest
  EXPECT_EQ(d.P95Ms(), 5000);
  d.Add(3);
  EXPECT_GE(d.P95Ms(), 10) << "rounded up, never to nothing";
  RecentDurations huge;
  huge.Add(int64_t{1} << 40);
  EXPECT_EQ(huge.P95Ms(), 655350) << "saturates";
}

TEST(CoordinatorStuck, ARoundPastItsThresholdIsNotedOnceThenExpiresAtItsDeadline) {
  CoordinatorOptions options;
  options.stuck_threshold_ms = 2000;
  Harness h(MakeSpec(), 0, options);  // timeout 5 s
  const int64_t id = h.StartToFirstTrigger();
  auto stuck_count = [&h] { return ActionsOf<RoundStuck>(h.all).size(); };
  h.RunFor(milliseconds(1999));
  EXPECT_EQ(stuck_count(), 0u);
  h.RunFor(milliseconds(1));
  ASSERT_EQ(stuck_count(), 1u);
  EXPECT_EQ(ActionsOf<RoundStuck>(h.all)[0].checkpoint_id, id);
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kRoundSlow);
  EXPECT_TRUE(h.c().HasPendingRound()) << "noted, not failed";
  h.RunFor(milliseconds(2999));
  EXPECT_TRUE(h.c().HasPendingRound());
  h.RunFor(milliseconds(1));
  EXPECT_FALSE(h.c().HasPendingRound()) << "expired at its deadline";
  EXPECT_EQ(stuck_count(), 1u) << "once per round";
  ASSERT_FALSE(h.finished.empty());
  EXPECT_EQ(h.finished.back().status, CheckpointStatus::kExpired);
}

TEST(CoordinatorStuck, NoNoticeWhenTheThresholdIsNotBelowTheTimeout) {
  Harness h;  // timeout 5 s, automatic threshold 30 s
  h.StartToFirstTrigger();
  h.RunFor(milliseconds(5000));
  EXPECT_FALSE(h.c().HasPendingRound());
  EXPECT_TRUE(ActionsOf<RoundStuck>(h.all).empty());
}

}  // namespace
}  // namespace ckpt::testing
