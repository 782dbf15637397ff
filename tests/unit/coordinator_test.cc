// One test per rule of docs/PROTOCOL.md the coordinator owns. Time is driven by hand: no threads,
// no sleeps.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

TEST(Coordinator, WaitsForAllTasksThenTriggersAndCompletes) {
  Harness h;
  h.Start();
  EXPECT_EQ(h.c().State(), PipelineState::kWaitingForTasks);
  auto reg = h.c().OnRegister(1, "w1", {"a"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  h.RunFor(milliseconds(5000));
  EXPECT_TRUE(h.triggers.empty()) << "must not trigger while task b is missing";

  reg = h.c().OnRegister(2, "w2", {"b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].checkpoint_id, 1);
  EXPECT_EQ(h.triggers[0].to, (std::vector<SessionId>{1, 2}));

  h.Apply(h.c().OnAck(1, 1, "a", {}));
  EXPECT_TRUE(h.commits.empty());
  h.Apply(h.c().OnAck(2, 1, "b", {}));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, 1);
  EXPECT_EQ(h.c().Describe().counters.completed_count, 1);
  EXPECT_EQ(h.c().Describe().last_completed_checkpoint_id, 1);
}

TEST(Coordinator, FirstTriggerHappensWithAClockThatMovesBetweenReads) {
  Harness h;
  h.clock.SetTicking(true);
  h.Start();
  h.RegisterAll();
  h.RunFor(milliseconds(1));
  ASSERT_EQ(h.triggers.size(), 1u);
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(1000));
  EXPECT_EQ(h.triggers.size(), 2u);
}

TEST(Coordinator, PeriodicTriggersRespectTheInterval) {
  Harness h;
  h.StartToFirstTrigger();
  ASSERT_EQ(h.triggers.size(), 1u);
  h.RunFor(milliseconds(200));
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(799));
  EXPECT_EQ(h.triggers.size(), 1u) << "second trigger before interval_ms elapsed";
  h.RunFor(milliseconds(1));
  EXPECT_EQ(h.triggers.size(), 2u);
  // Delay is measured against the due time: exactly on time here.
  ASSERT_FALSE(h.delays.empty());
  EXPECT_EQ(h.delays.back().count(), 0);
}

TEST(Coordinator, MinPauseCountsFromTheEndOfThePreviousRound) {
  PipelineSpec spec = MakeSpec();
  spec.min_pause_ms = 700;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.RunFor(milliseconds(900));  // the round takes 900 ms
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(699));  // interval passed at 1000, but min pause holds until 1600
  EXPECT_EQ(h.triggers.size(), 1u);
  h.RunFor(milliseconds(1));
  EXPECT_EQ(h.triggers.size(), 2u);
}

TEST(Coordinator, ARoundHeldByItsPredecessorReportsTheHoldApartFromTheDelay) {
  PipelineSpec spec = MakeSpec();
  spec.min_pause_ms = 100;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.RunFor(milliseconds(1300));  // the round takes 1.3 s: the next was due at 1.0 s
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(99));
  EXPECT_EQ(h.triggers.size(), 1u) << "min_pause counts from the end of the round";
  h.RunFor(milliseconds(1));
  ASSERT_EQ(h.triggers.size(), 2u);
  ASSERT_EQ(h.delays.size(), 2u);
  ASSERT_EQ(h.holds.size(), 2u);
  EXPECT_EQ(h.holds[0].count(), 0) << "nothing held the first round";
  // Held from the interval's due time (1.0 s) to the end of the round and its pause (1.4 s); the
  // timer itself fired on time.
  EXPECT_EQ(h.holds[1], milliseconds(400));
  EXPECT_EQ(h.delays[1].count(), 0);
  // A round that ended in time is not held, even with a pause: 1.4 + 0.2 s, then the interval.
  h.RunFor(milliseconds(200));
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(800));
  ASSERT_EQ(h.triggers.size(), 3u);
  EXPECT_EQ(h.holds[2].count(), 0);
  EXPECT_EQ(h.delays[2].count(), 0);
}

TEST(Coordinator, AtMostOneRoundPending) {
  Harness h;
  h.Start();
  h.RegisterAll();
  h.RunFor(milliseconds(4900));  // several intervals pass with round 1 unacked
  EXPECT_EQ(h.triggers.size(), 1u);
  int64_t id = 0;
  auto manual = h.c().TriggerCheckpoint(&id);
  EXPECT_EQ(manual.status.code(), StatusCode::kFailedPrecondition);
}

TEST(Coordinator, ExpiresAfterTimeoutAndAbortsWorkers) {
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 5;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.Apply(h.c().OnAck(1, 1, "a", {}));
  h.RunFor(milliseconds(4999));
  EXPECT_TRUE(h.aborts.empty());
  h.RunFor(milliseconds(1));
  ASSERT_EQ(h.aborts.size(), 1u);
  EXPECT_EQ(h.aborts[0].checkpoint_id, 1);
  EXPECT_EQ(h.c().Describe().counters.expired_count, 1);
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 1);
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
  // The schedule goes on: the next trigger comes (its due time passed during the wait).
  h.RunFor(milliseconds(0));
  EXPECT_EQ(h.triggers.size(), 2u);
  EXPECT_GT(h.triggers[1].checkpoint_id, 1);
}

TEST(Coordinator, DeclineFailsTheRoundAtOnce) {
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 1;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.Apply(h.c().OnDecline(1, 1, "b", "disk full", false));
  ASSERT_EQ(h.aborts.size(), 1u);
  EXPECT_NE(h.aborts[0].reason.find("disk full"), std::string::npos);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 1);
  EXPECT_EQ(h.c().Describe().pending_checkpoint_id, 0);
  EXPECT_FALSE(h.timeout.has_value()) << "the failed round's timeout must be cancelled";
}

TEST(Coordinator, MoreThanTolerableFailuresPutsThePipelineInFailed) {
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 1;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "x", false));
  EXPECT_EQ(h.c().State(), PipelineState::kRunning) << "one failure is tolerable";
  h.RunFor(milliseconds(1000));
  ASSERT_EQ(h.triggers.size(), 2u);
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "x", false));
  EXPECT_EQ(h.c().State(), PipelineState::kFailed);
  h.RunFor(milliseconds(10000));
  EXPECT_EQ(h.triggers.size(), 2u) << "a FAILED pipeline triggers nothing";
  EXPECT_EQ(h.persisted.back().sticky, StickyState::kFailed);

  // Re-registration alone does not clear FAILED; resume does, and bumps the generation.
  const int64_t gen = h.c().Describe().generation;
  auto resumed = h.c().Resume();
  ASSERT_TRUE(resumed.status.ok());
  h.Apply(resumed.actions);
  EXPECT_EQ(h.c().Describe().generation, gen + 1);
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 0);
  h.RunFor(milliseconds(0));
  EXPECT_EQ(h.triggers.size(), 3u);
}

TEST(Coordinator, SuccessResetsConsecutiveFailures) {
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 1;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "x", false));
  h.RunFor(milliseconds(1000));
  h.AckAll(h.LastTriggerId());
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 0);
  h.RunFor(milliseconds(1000));
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "x", false));
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
}

TEST(Coordinator, StaleTimeoutOfAnOldRoundIsDropped) {
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 10;
  Harness h(spec);
  h.StartToFirstTrigger();
  const int64_t first = h.LastTriggerId();
  h.AckAll(first);
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  ASSERT_GT(second, first);
  // The first round's timeout fires late (already posted when it completed): dropped.
  h.Apply(h.c().OnTimeout(first));
  EXPECT_TRUE(h.aborts.empty());
  EXPECT_EQ(h.c().Describe().pending_checkpoint_id, second);
  // The current round's own timeout still works: it is fenced by id, not by generation, so a
  // generation change (here: a resume-like loss and return) cannot wedge it.
  h.Apply(h.c().OnSessionEnded(1, "cut"));
  h.RegisterAll(2, "w2");
  h.RunFor(milliseconds(0));
  const int64_t third = h.LastTriggerId();
  h.RunFor(milliseconds(5000));
  ASSERT_FALSE(h.aborts.empty());
  EXPECT_EQ(h.aborts.back().checkpoint_id, third);
}

TEST(Coordinator, AcksForAnOldIdAreIgnored) {
  Harness h;
  h.StartToFirstTrigger();
  const int64_t first = h.LastTriggerId();
  h.Apply(h.c().OnDecline(1, first, "a", "x", false));
  h.Apply(h.c().Resume().actions);
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  ASSERT_GT(second, first);
  h.AckAll(first);  // stale acks for the aborted round
  EXPECT_TRUE(h.commits.empty());
  EXPECT_EQ(h.ignored, (std::vector<std::string>{"not_pending", "not_pending"}));
  h.AckAll(second);
  EXPECT_EQ(h.commits.size(), 1u);
}

TEST(Coordinator, PendingRoundReportsAckedAndAwaitedTasksAndIgnoresDuplicateAcks) {
  PipelineSpec spec = MakeSpec({"c", "a", "b"});
  spec.tolerable_failures = 5;
  Harness h(spec);
  h.auto_commit = false;
  const int64_t id = h.StartToFirstTrigger();
  auto pending = h.c().Pending();
  ASSERT_TRUE(pending.has_value());
  EXPECT_TRUE(pending->acked_tasks.empty());
  EXPECT_EQ(pending->awaiting_tasks, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(pending->expected_tasks, 3);

  h.Apply(h.c().OnAck(1, id, "b", {"mem://b", 1, ""}));
  h.Apply(h.c().OnAck(1, id, "b", {"mem://b2", 2, ""}));  // again: ignored, the first one stands
  ASSERT_EQ(h.ignored, (std::vector<std::string>{"duplicate"}));
  pending = h.c().Pending();
  EXPECT_EQ(pending->acked_tasks, (std::vector<std::string>{"b"}));
  EXPECT_EQ(pending->awaiting_tasks, (std::vector<std::string>{"a", "c"}));
  EXPECT_FALSE(pending->completing);
  EXPECT_EQ(h.c().CurrentSavepoint(), std::nullopt);

  // Expiry names how many tasks did not answer.
  h.RunFor(milliseconds(5000));
  ASSERT_EQ(h.aborts.size(), 1u);
  EXPECT_EQ(h.aborts[0].reason, "expired: 2 of 3 tasks did not acknowledge in time");

  // The next round starts with every task awaited again; once all acked it is completing.
  h.RunFor(milliseconds(0));
  const int64_t next = h.LastTriggerId();
  ASSERT_GT(next, id);
  EXPECT_EQ(h.c().Pending()->awaiting_tasks, (std::vector<std::string>{"a", "b", "c"}));
  h.Apply(h.c().OnAck(1, next, "a", {"mem://a", 1, ""}));
  h.Apply(h.c().OnAck(1, next, "c", {"mem://c", 1, ""}));
  EXPECT_TRUE(h.commits.empty());
  h.Apply(h.c().OnAck(1, next, "b", {"mem://b", 7, "x"}));
  ASSERT_EQ(h.commits.size(), 1u);
  EXPECT_EQ(h.commits[0].commit.checkpoint.task_states.size(), 3u);
  EXPECT_EQ(h.commits[0].commit.checkpoint.task_states.at("b"), (TaskState{"mem://b", 7, "x"}));
  pending = h.c().Pending();
  EXPECT_TRUE(pending->completing);
  EXPECT_EQ(pending->acked_tasks, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(pending->awaiting_tasks.empty());
  h.Apply(h.c().OnAck(1, next, "a", {}));  // with the store: not pending any more
  EXPECT_EQ(h.ignored.back(), "not_pending");
}

TEST(Coordinator, CompletingRoundIsNotAbortedByTaskLoss) {
  Harness h;
  h.auto_commit = false;
  const int64_t id = h.StartToFirstTrigger();
  h.AckAll(id);
  ASSERT_EQ(h.commits.size(), 1u);
  h.Apply(h.c().OnSessionEnded(1, "stream cancelled"));  // lost after the last ack
  EXPECT_TRUE(h.aborts.empty());
  EXPECT_EQ(h.c().State(), PipelineState::kWaitingForTasks);
  h.Apply(h.c().OnTimeout(id));  // a timeout posted before the cancel: stale
  EXPECT_TRUE(h.aborts.empty());
  // A generation persist queued meanwhile must not undo the completion it follows.
  EXPECT_EQ(h.persisted.back().counters.completed_count, 1);
  h.Apply(h.c().OnCommitted(id));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, id);
  EXPECT_EQ(h.c().Describe().counters.completed_count, 1);
}

TEST(Coordinator, StoreFailureFailsTheRoundAndIsNeverComplete) {
  Harness h;  // tolerable_failures 0
  h.auto_commit = false;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) h.RunFor(milliseconds(1000));
    const int64_t id = h.LastTriggerId() == 0 ? h.StartToFirstTrigger() : h.LastTriggerId();
    h.AckAll(id);
    h.Apply(h.c().OnCommitFailed(id, Status::Unavailable("disk full")));
  }
  EXPECT_TRUE(h.completes.empty());
  ASSERT_EQ(h.aborts.size(), 3u);
  EXPECT_NE(h.aborts[0].reason.find("disk full"), std::string::npos);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 3);
  EXPECT_EQ(h.c().Describe().counters.completed_count, 0);
  EXPECT_EQ(h.persisted.back().counters.completed_count, 0) << "the projection must be undone";
  // The daemon's failure, not the pipeline's: it does not count toward tolerable_failures.
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 0);
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
}

TEST(Coordinator, TaskLossAbortsPendingAndReRegistrationRestoresRunning) {
  Harness h;
  h.Start();
  auto r1 = h.c().OnRegister(1, "w1", {"a"}, false);
  h.Apply(r1.actions);
  auto r2 = h.c().OnRegister(2, "w2", {"b"}, false);
  h.Apply(r2.actions);
  EXPECT_EQ(r2.welcome.generation, r1.welcome.generation) << "first registrations do not bump";
  h.RunFor(milliseconds(0));
  const int64_t gen = h.c().Describe().generation;
  h.Apply(h.c().OnSessionEnded(2, "stream ended"));
  ASSERT_EQ(h.aborts.size(), 1u);
  EXPECT_EQ(h.aborts[0].to, (std::vector<SessionId>{1}));
  EXPECT_EQ(h.c().Describe().generation, gen + 1);
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 0) << "task loss does not count";
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0) << "nor is it the pipeline's failure";
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].status, CheckpointStatus::kAborted);
  EXPECT_EQ(h.c().RecentRounds().front().status, CheckpointStatus::kAborted)
      << "in the history as ABORTED, not FAILED";
  EXPECT_EQ(h.c().State(), PipelineState::kWaitingForTasks);
  EXPECT_EQ(h.c().Describe().missing_tasks, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "lost task(s) b"));

  auto back = h.c().OnRegister(3, "w2", {"b"}, false);
  ASSERT_TRUE(back.status.ok());
  h.Apply(back.actions);
  EXPECT_EQ(back.welcome.generation, gen + 2) << "a return after a loss bumps";
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
  h.RunFor(milliseconds(1000));
  EXPECT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers.back().generation, gen + 2);
}

TEST(Coordinator, MissingTasksWarningIsRateLimited) {
  Harness h;
  h.Start();
  h.RunFor(milliseconds(35000));
  int warnings = 0;
  for (const auto& l : h.logs) {
    if (l.level == LogLevel::kWarn && l.text.find("waiting for 2 of 2 tasks: a, b") == 0)
      ++warnings;
  }
  EXPECT_EQ(warnings, 3) << "one warning per 10 s in 35 s";
}

TEST(Coordinator, RegistrationErrors) {
  Harness h;
  h.Start();
  EXPECT_EQ(h.c().OnRegister(1, "w", {}, false).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.c().OnRegister(1, "w", {"zz"}, false).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.c().OnRegister(1, "w", {"a", "a"}, false).status.code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(h.c().OnRegister(1, "", {"a"}, false).status.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(h.c().OnRegister(1, "w1", {"a"}, false).status.ok());
  auto dup = h.c().OnRegister(2, "w2", {"a"}, false);
  EXPECT_EQ(dup.status.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status.message().find("w1"), std::string::npos);
}

TEST(Coordinator, TakeoverEndsTheOldStreamAndAbortsThePendingRound) {
  Harness h;
  h.Start();
  h.RegisterAll(1, "w1");
  h.RunFor(milliseconds(0));
  const int64_t gen = h.c().Describe().generation;
  auto reg = h.c().OnRegister(2, "w2", {"a", "b"}, true);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  ASSERT_EQ(h.ended.size(), 1u);
  EXPECT_EQ(h.ended[0].session, 1u);
  EXPECT_EQ(h.ended[0].status.code(), StatusCode::kAborted);
  EXPECT_EQ(h.aborts.size(), 1u);
  EXPECT_EQ(reg.welcome.generation, gen + 1);
  EXPECT_EQ(h.c().State(), PipelineState::kRunning);
  // Acks from the old session are no longer its tasks.
  h.RunFor(milliseconds(1000));
  h.AckAll(h.LastTriggerId(), 1);
  EXPECT_TRUE(h.commits.empty());
  h.AckAll(h.LastTriggerId(), 2);
  EXPECT_EQ(h.commits.size(), 1u);
}

TEST(Coordinator, AckForATaskTheStreamDoesNotOwnIsIgnored) {
  Harness h;
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);
  h.Apply(h.c().OnRegister(2, "w2", {"b"}, false).actions);
  h.RunFor(milliseconds(0));
  h.Apply(h.c().OnAck(1, h.LastTriggerId(), "b", {}));
  EXPECT_EQ(h.ignored, (std::vector<std::string>{"unowned_task"}));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "did not register"));
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "b", "x", false));
  EXPECT_TRUE(h.aborts.empty());
}

TEST(Coordinator, RestartTakesTheBaselineFromTheLastCompletedCheckpoint) {
  ManualClock reference;
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.spec.interval_ms = 10000;
  stored.record.generation = 7;
  stored.record.last_completed_id = 42;
  stored.id_counter = 150;
  CoordinatorOptions options;
  Harness h(stored, options);
  // The last checkpoint completed 4 s ago (wall clock): the next is due in 6 s, not 10 s.
  stored.record.last_completed_at_ms = h.clock.WallMs() - 4000;
  h.Build(stored, options);
  h.Start(/*restarted=*/true);
  EXPECT_EQ(h.c().Describe().generation, 8) << "daemon start bumps the generation";
  EXPECT_EQ(h.persisted.back().generation, 8);
  h.RegisterAll();
  h.RunFor(milliseconds(5999));
  EXPECT_TRUE(h.triggers.empty());
  h.RunFor(milliseconds(1));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_GT(h.triggers[0].checkpoint_id, 150) << "ids continue above the stored counter";
}

TEST(Coordinator, TriggerWaitsForIdReservationAndRetriesFailures) {
  Harness h;
  h.auto_reserve = false;
  h.Start();
  ASSERT_EQ(h.reserve_requests.size(), 1u);
  h.RegisterAll();
  h.RunFor(milliseconds(0));
  EXPECT_TRUE(h.triggers.empty()) << "no durable id yet";
  h.Apply(h.c().OnIdsReserveFailed(Status::Internal("disk full")));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kError, "disk full"));
  h.RunFor(milliseconds(1000));  // retried after reserve_retry
  ASSERT_EQ(h.reserve_requests.size(), 2u);
  h.Apply(h.c().OnIdsReserved(h.reserve_requests.back()));
  ASSERT_EQ(h.triggers.size(), 1u) << "the reservation re-drives the waiting trigger";
  EXPECT_LE(h.triggers[0].checkpoint_id, h.reserve_requests.back());
}

TEST(Coordinator, IdsStrictlyIncreaseAcrossBlocks) {
  CoordinatorOptions options;
  options.id_block = 4;
  Harness h(MakeSpec(), 0, options);
  h.Start();
  h.RegisterAll();
  for (int i = 0; i < 20; ++i) {
    h.RunFor(milliseconds(1000));
    h.AckAll(h.LastTriggerId());
  }
  ASSERT_GE(h.triggers.size(), 20u);
  for (size_t i = 1; i < h.triggers.size(); ++i) {
    EXPECT_GT(h.triggers[i].checkpoint_id, h.triggers[i - 1].checkpoint_id);
  }
  // Every id handed out was reserved before it was used.
  int64_t max_reserved = 0;
  for (auto r : h.reserve_requests) max_reserved = std::max(max_reserved, r);
  EXPECT_LE(h.triggers.back().checkpoint_id, max_reserved);
}

TEST(Coordinator, PauseStopsPeriodicTriggersButThePendingRoundFinishes) {
  Harness h;
  h.StartToFirstTrigger();
  auto paused = h.c().Pause();
  ASSERT_TRUE(paused.status.ok());
  h.Apply(paused.actions);
  h.AckAll(h.LastTriggerId());
  EXPECT_EQ(h.completes.size(), 1u);
  h.RunFor(milliseconds(5000));
  EXPECT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.c().State(), PipelineState::kPaused);
}

// A round triggered before a pause is not fenced by the generation that Resume bumps: acks are
// matched by checkpoint id, so the round still completes once, and the schedule goes on from it.
TEST(Coordinator, RoundStartedBeforePauseCompletesWhenAckedAfterResume) {
  Harness h;
  h.StartToFirstTrigger();
  ASSERT_EQ(h.triggers.size(), 1u);
  const int64_t id = h.LastTriggerId();
  const int64_t generation_at_trigger = h.c().Describe().generation;
  h.Apply(h.c().Pause().actions);
  h.RunFor(milliseconds(200));
  auto resumed = h.c().Resume();
  ASSERT_TRUE(resumed.status.ok());
  h.Apply(resumed.actions);
  EXPECT_GT(h.c().Describe().generation, generation_at_trigger);
  EXPECT_EQ(h.triggers.size(), 1u) << "resume must not start a second round beside the pending one";
  h.AckAll(id);
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, id);
  h.RunFor(milliseconds(1000));
  ASSERT_EQ(h.triggers.size(), 2u) << "the periodic schedule resumes after the round";
  EXPECT_GT(h.triggers[1].checkpoint_id, id);
}

TEST(Coordinator, SavepointQueuedBehindAPendingCheckpointStartsRightAfterIt) {
  PipelineSpec spec = MakeSpec();
  spec.min_pause_ms = 5000;  // would hold back a periodic trigger; a savepoint ignores it
  Harness h(spec);
  h.StartToFirstTrigger();
  auto sp = h.c().RequestSavepoint("", /*stop=*/true, milliseconds(60000));
  ASSERT_TRUE(sp.status.ok());
  h.Apply(sp.actions);
  EXPECT_EQ(h.triggers.size(), 1u) << "queued, not started";
  EXPECT_EQ(h.c().RequestSavepoint("", false, milliseconds(1000)).status.code(),
            StatusCode::kFailedPrecondition)
      << "a different savepoint cannot join";
  h.AckAll(h.LastTriggerId());
  ASSERT_EQ(h.triggers.size(), 2u) << "savepoint starts as soon as the checkpoint finished";
  EXPECT_EQ(h.triggers[1].kind, CheckpointKind::kSavepointAndStop);
  EXPECT_EQ(h.triggers[1].target,
            "./ckptd-data/savepoints/job/pipe/" + std::to_string(h.triggers[1].checkpoint_id));
  h.AckAll(h.LastTriggerId());
  EXPECT_EQ(h.completes.back().kind, CheckpointKind::kSavepointAndStop);
  EXPECT_EQ(h.c().State(), PipelineState::kStopped);
  EXPECT_EQ(h.commits.back().commit.progress_after.sticky, StickyState::kStopped)
      << "STOPPED is written in the same transaction as the savepoint";
  h.RunFor(milliseconds(10000));
  EXPECT_EQ(h.triggers.size(), 2u);
}

TEST(Coordinator, DefaultSavepointLocationStaysUnderTheRootWhateverTheIds) {
  PipelineSpec spec = MakeSpec();
  spec.key = {"../..", "etc/passwd"};
  Harness h(spec);
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].target, "./ckptd-data/savepoints/..%2F../etc%2Fpasswd/" +
                                      std::to_string(h.triggers[0].checkpoint_id));
}

TEST(Coordinator, SavepointQueuedBehindADeclinedCheckpointStartsAtOnce) {
  PipelineSpec spec = MakeSpec();
  spec.interval_ms = 600000;  // the periodic schedule must not be what starts it
  spec.tolerable_failures = 5;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  h.Apply(h.c().OnDecline(1, h.LastTriggerId(), "a", "x", false));
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers[1].kind, CheckpointKind::kSavepoint);
}

TEST(Coordinator, SavepointAbortedByTaskLossIsQueuedAgainAndStartsWhenTasksReturn) {
  PipelineSpec spec = MakeSpec();
  spec.interval_ms = 600000;
  Harness h(spec);
  h.StartToFirstTrigger();
  h.AckAll(h.LastTriggerId());
  h.Apply(h.c().RequestSavepoint("", true, milliseconds(60000)).actions);
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  h.Apply(h.c().OnSessionEnded(1, "worker restarted"));
  EXPECT_EQ(h.aborts.size(), 1u);
  h.RunFor(milliseconds(2000));
  EXPECT_EQ(h.triggers.size(), 2u) << "waits while tasks are missing";
  h.RegisterAll(2, "w1-again");
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 3u);
  EXPECT_EQ(h.triggers[2].kind, CheckpointKind::kSavepointAndStop);
  h.AckAll(h.LastTriggerId(), 2);
  EXPECT_EQ(h.c().State(), PipelineState::kStopped);
}

TEST(Coordinator, QueuedSavepointTimesOutWhileTasksAreMissing) {
  Harness h;
  h.Start();
  h.Apply(h.c().RequestSavepoint("s3://x", false, milliseconds(3000)).actions);
  h.RunFor(milliseconds(3000));
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].status, CheckpointStatus::kFailed);
  EXPECT_NE(h.finished[0].reason.find("timed out"), std::string::npos);
}

}  // namespace
}  // namespace ckpt::testing
