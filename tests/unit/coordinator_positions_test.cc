// Positions on a single pipeline (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): the
// two gates of a periodic trigger, the position a round carries, acks at another position, the step
// after a passed position, the position kept with the checkpoint and handed back in the restore
// point, and the warning naming tasks that never report one.
#include <gtest/gtest.h>

#include "coordinator_harness.h"
#include "core/position_gate.h"

namespace ckpt::testing {
namespace {

using Positions = std::vector<std::pair<std::string, int64_t>>;

PipelineSpec PositionSpec(int64_t position_interval = 100) {
  PipelineSpec spec = MakeSpec();
  spec.position_interval = position_interval;
  return spec;
}

// Started, both tasks registered on session 1, no position reported yet.
struct PositionHarness : Harness {
  explicit PositionHarness(int64_t position_interval = 100)
      : Harness(PositionSpec(position_interval)) {
    Start();
    RegisterAll();
  }
  void Report(Positions positions, SessionId session = 1) {
    Apply(c().OnPositions(session, positions));
  }
};

// Every task of session 1 acks round `id` at `position`.
void AckAllAt(Harness& h, int64_t id, int64_t position) {
  for (const std::string task : {"a", "b"}) {
    h.Apply(h.c().OnAck(1, id, task, TaskState{"mem://" + task, 1, "c"}, {}, position));
  }
}

TEST(PositionGateTest, CountsTasksAtTheThresholdAsReportsComeAndGo) {
  PositionGate gate;
  gate.SetThreshold(100);
  EXPECT_TRUE(gate.Report("a", 50));
  EXPECT_FALSE(gate.Report("a", 40)) << "a lower position is not news";
  EXPECT_FALSE(gate.Report("a", -1));
  EXPECT_FALSE(gate.Report("a", kMaxPosition + 1));
  EXPECT_FALSE(gate.Open(2));
  EXPECT_TRUE(gate.Report("a", 100));
  EXPECT_TRUE(gate.Report("b", 250));
  EXPECT_TRUE(gate.Open(2));
  EXPECT_EQ(gate.Highest(), 250);
  gate.Forget("b");
  EXPECT_FALSE(gate.Open(2));
  EXPECT_EQ(gate.Highest(), 100);
  gate.SetThreshold(200);
  EXPECT_EQ(gate.at_threshold(), 0u);
  gate.Retain({"b"});
  EXPECT_EQ(gate.reported(), 0u);
}

TEST(PositionGateTest, TheNextMultipleIsStrictlyAbove) {
  EXPECT_EQ(NextMultiple(0, 100), 100);
  EXPECT_EQ(NextMultiple(99, 100), 100);
  EXPECT_EQ(NextMultiple(100, 100), 200);
  EXPECT_EQ(NextMultiple(250, 100), 300);
  EXPECT_GT(NextMultiple(kMaxPosition, 7), kMaxPosition) << "no overflow at the cap";
}

TEST(CoordinatorPositionsTest, NoPeriodicTriggerUntilEveryTaskReportedAnIntervalPastTheLast) {
  PositionHarness h;
  h.RunFor(Millis(5000));
  EXPECT_TRUE(h.triggers.empty()) << "the interval passed, but no task reported a position";
  h.Report({{"a", 120}});
  h.RunFor(Millis(1000));
  EXPECT_TRUE(h.triggers.empty()) << "task b has not reported";
  h.Report({{"b", 99}});
  h.RunFor(Millis(1000));
  EXPECT_TRUE(h.triggers.empty()) << "task b is not an interval (100) past the start";
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kWaitingForPositions);
  EXPECT_EQ(h.c().Explain().position_needed, 100);
  ASSERT_EQ(h.c().Explain().tasks.size(), 1u);
  EXPECT_EQ(h.c().Explain().tasks[0].task_id, "b");
  h.Report({{"b", 130}});
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u) << "both gates open: it triggers at once";
  EXPECT_EQ(h.triggers[0].position, 200) << "the smallest multiple of 100 above 130";
}

TEST(CoordinatorPositionsTest, ATriggerHeldByPositionsIsNotCountedAsLate) {
  PositionHarness h;
  h.RunFor(Millis(4000));  // due at once, held by the positions for 4 s
  h.Report({{"a", 150}, {"b", 150}});
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  ASSERT_EQ(h.delays.size(), 1u);
  EXPECT_LT(h.delays[0], std::chrono::milliseconds(1))
      << "the trigger delay measures the scheduler, not the wait for positions";
}

TEST(CoordinatorPositionsTest, TheIntervalGateStillHoldsWhenPositionsRunAhead) {
  PositionHarness h;
  h.Report({{"a", 150}, {"b", 160}});
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  AckAllAt(h, h.LastTriggerId(), 200);
  h.Report({{"a", 5000}, {"b", 5000}});
  h.RunFor(Millis(999));
  EXPECT_EQ(h.triggers.size(), 1u) << "positions are far ahead, but the interval is 1 s";
  h.RunFor(Millis(1));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].position, 5100);
}

TEST(CoordinatorPositionsTest, TheCheckpointKeepsItsPositionAndTheNextGateCountsFromIt) {
  PositionHarness h;
  h.Report({{"a", 150}, {"b", 160}});
  h.RunFor(Millis(0));
  const int64_t id = h.LastTriggerId();
  AckAllAt(h, id, 200);
  ASSERT_EQ(h.commits.size(), 1u);
  EXPECT_EQ(h.commits[0].commit.checkpoint.position, 200);
  EXPECT_EQ(h.c().CurrentRestorePoint().position, 200);
  // Reported 250 is an interval past 150 but not past 200 + 100.
  h.Report({{"a", 250}, {"b", 250}});
  h.RunFor(Millis(3000));
  EXPECT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.c().Explain().position_needed, 300);
  h.Report({{"a", 300}, {"b", 301}});
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].position, 400);
}

TEST(CoordinatorPositionsTest, AnAckAtAnotherPositionDeclinesAndAPassedOneStepsTheNextRound) {
  PositionHarness h;
  h.Report({{"a", 150}, {"b", 160}});
  h.RunFor(Millis(0));
  const int64_t first = h.LastTriggerId();
  ASSERT_EQ(h.triggers[0].position, 200);
  h.Apply(h.c().OnAck(1, first, "a", TaskState{"mem://a", 1, "c"}, {}, 200));
  h.Apply(h.c().OnAck(1, first, "b", TaskState{"mem://b", 1, "c"}, {}, 210));
  ASSERT_EQ(h.aborts.size(), 1u) << "b snapshotted past the round's position";
  EXPECT_NE(h.aborts[0].reason.find("position 210"), std::string::npos) << h.aborts[0].reason;
  EXPECT_TRUE(h.commits.empty());
  EXPECT_EQ(h.c().Describe().counters.failed_count, 1);
  auto resumed = h.c().Resume();  // tolerable_failures 0: FAILED; resume it
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
  h.Apply(resumed.actions);
  h.Report({{"a", 220}, {"b", 230}});
  h.RunFor(Millis(1000));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].position, 400) << "300 plus one interval, once";
  AckAllAt(h, h.LastTriggerId(), 400);
  h.Report({{"a", 510}, {"b", 520}});
  h.RunFor(Millis(1000));
  ASSERT_EQ(h.triggers.size(), 3u);
  EXPECT_EQ(h.triggers[2].position, 600) << "the step is not cumulative";
}

TEST(CoordinatorPositionsTest, ARepeatedAckIsIgnoredWhateverPositionItNames) {
  PositionHarness h;
  h.Report({{"a", 150}, {"b", 160}});
  h.RunFor(Millis(0));
  const int64_t id = h.LastTriggerId();
  ASSERT_EQ(h.triggers[0].position, 200);
  h.Apply(h.c().OnAck(1, id, "a", TaskState{"mem://a", 1, "c"}, {}, 200));
  // Sent again (a worker's retry, or one that leaves the position out): a duplicate, not a
  // snapshot somewhere else.
  h.Apply(h.c().OnAck(1, id, "a", TaskState{"mem://a", 1, "c"}, {}, 0));
  h.Apply(h.c().OnAck(1, id, "a", TaskState{"mem://a", 1, "c"}, {}, 250));
  EXPECT_TRUE(h.aborts.empty());
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0);
  h.Apply(h.c().OnAck(1, id, "b", TaskState{"mem://b", 1, "c"}, {}, 200));
  ASSERT_EQ(h.commits.size(), 1u);
  EXPECT_EQ(h.commits[0].commit.checkpoint.position, 200);
}

TEST(CoordinatorPositionsTest, ADeclineFromATaskPastThePositionStepsTheNextRound) {
  PipelineSpec spec = PositionSpec();
  spec.tolerable_failures = 5;
  Harness h(spec);
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().OnPositions(1, {{"a", 150}, {"b", 160}}));
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "already past", false, 260));
  ASSERT_EQ(h.aborts.size(), 1u);
  h.RunFor(Millis(1000));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].position, 300) << "200 plus one interval: 160 is the highest reported";

  // A decline from a task still short of the position does not step.
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "disk full", false, 250));
  h.RunFor(Millis(1000));
  ASSERT_EQ(h.triggers.size(), 3u);
  EXPECT_EQ(h.triggers[2].position, 200);
}

TEST(CoordinatorPositionsTest, SavepointsAndManualTriggersSkipTheGatesButCarryAPosition) {
  PositionHarness h;
  int64_t id = 0;
  auto manual = h.c().TriggerCheckpoint(&id);
  ASSERT_TRUE(manual.status.ok()) << manual.status.ToString();
  h.Apply(manual.actions);
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].position, 100) << "nothing reported: the first multiple";
  AckAllAt(h, id, 100);
  h.Report({{"a", 120}});  // b reports nothing: the gate is shut
  auto savepoint = h.c().RequestSavepoint("", false, Millis(10000));
  ASSERT_TRUE(savepoint.status.ok()) << savepoint.status.ToString();
  h.Apply(savepoint.actions);
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].kind, CheckpointKind::kSavepoint);
  EXPECT_EQ(h.triggers[1].position, 200);
}

TEST(CoordinatorPositionsTest, TasksThatNeverReportAreNamedInAWarningOnceAMinute) {
  PositionHarness h;
  h.Report({{"a", 500}});
  h.RunFor(Millis(59000));
  EXPECT_FALSE(h.LoggedContaining(LogLevel::kWarn, "never reported a position"));
  h.RunFor(Millis(2000));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "1 of 2 tasks never reported a position"));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, ": b"));
  EXPECT_TRUE(h.triggers.empty());
  size_t warnings = 0;
  h.logs.clear();
  h.RunFor(Millis(120000));
  for (const Log& l : h.logs) warnings += l.text.find("never reported") != std::string::npos;
  EXPECT_EQ(warnings, 2u) << "once a minute, not at every wakeup";
}

TEST(CoordinatorPositionsTest, ATaskRegisteredAgainReportsAfresh) {
  PositionHarness h;
  h.Report({{"a", 500}, {"b", 500}});
  h.Apply(h.c().OnSessionEnded(1, "lost"));
  auto reg = h.c().OnRegister(2, "w2", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  h.RunFor(Millis(5000));
  EXPECT_TRUE(h.triggers.empty()) << "positions of the lost stream no longer count";
  h.Report({{"a", 150}, {"b", 150}}, 2);
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].position, 200) << "from the new reports, not the old 500";
}

TEST(CoordinatorPositionsTest, PositionsOfTasksAStreamDoesNotHoldAreIgnored) {
  PositionHarness h;
  h.Report({{"a", 150}, {"b", 150}}, /*session=*/7);
  h.Report({{"a", -5}, {"b", kMaxPosition + 1}});
  h.RunFor(Millis(5000));
  EXPECT_TRUE(h.triggers.empty());
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "ignored positions"));
}

TEST(CoordinatorPositionsTest, WithoutAPositionIntervalPositionsChangeNothing) {
  Harness h;
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().OnPositions(1, {{"a", 150}, {"b", 150}}));
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].position, 0);
  // An ack with a position where the round has none is still an ack.
  for (const std::string task : {"a", "b"}) {
    h.Apply(h.c().OnAck(1, h.LastTriggerId(), task, TaskState{"mem://x", 1, "c"}, {}, 77));
  }
  EXPECT_EQ(h.commits.size(), 1u);
}

TEST(CoordinatorPositionsTest, TurningPositionsOnAndOffByUpdate) {
  Harness h;
  h.Start();
  h.RegisterAll();
  h.RunFor(Millis(0));
  AckAllAt(h, h.LastTriggerId(), 0);
  PipelineSpec with = h.c().spec();
  with.position_interval = 1000;
  h.Apply(h.c().UpdateSpec(with).actions);
  h.RunFor(Millis(3000));
  EXPECT_EQ(h.triggers.size(), 1u) << "positions now gate the trigger";
  h.Apply(h.c().OnPositions(1, {{"a", 1500}, {"b", 1500}}));
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].position, 2000);
  AckAllAt(h, h.LastTriggerId(), 2000);
  PipelineSpec without = h.c().spec();
  without.position_interval = 0;
  h.Apply(h.c().UpdateSpec(without).actions);
  h.RunFor(Millis(1000));
  ASSERT_EQ(h.triggers.size(), 3u);
  EXPECT_EQ(h.triggers[2].position, 0);
}

TEST(CoordinatorPositionsTest, ARestartResumesTheGateFromTheStoredPosition) {
  StoredPipeline stored;
  stored.record.spec = PositionSpec();
  stored.record.last_completed_id = 4;
  stored.id_counter = 10;
  CompletedCheckpoint newest;
  newest.checkpoint_id = 4;
  newest.position = 700;
  newest.task_states = {{"a", {"mem://a", 1, "c"}}, {"b", {"mem://b", 1, "c"}}};
  stored.newest = newest;
  stored.history = {{4, CheckpointKind::kCheckpoint}};
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  auto reg = h.c().OnRegister(1, "w1", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  EXPECT_EQ(reg.welcome.restore.position, 700) << "the workers resume from here";
  h.Apply(reg.actions);
  h.Apply(h.c().OnPositions(1, {{"a", 750}, {"b", 790}}));
  h.RunFor(Millis(5000));
  EXPECT_TRUE(h.triggers.empty()) << "800 needed";
  h.Apply(h.c().OnPositions(1, {{"a", 800}, {"b", 810}}));
  h.RunFor(Millis(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].position, 900);
}

}  // namespace
}  // namespace ckpt::testing
