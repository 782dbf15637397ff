// The coordinator at the edges of a pipeline's life: deletion while the store holds a round, what
// workers are told when checkpoints stop, how savepoint requests join, how rounds that were not
// the pipeline's fault are recorded.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

// Every coordinator of a daemon is made with the same options: one copy serves them all while any
// of them lives, and options that differ in any field get their own.
TEST(CoordinatorOptionsSharing, EqualOptionsShareOneCopyWhileAnyHolderLives) {
  CoordinatorOptions options;
  options.savepoint_root = "/var/lib/ckptd/savepoints-shared-test";
  auto first = SharedCoordinatorOptions(options);
  auto second = SharedCoordinatorOptions(options);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(first->savepoint_root, options.savepoint_root);

  CoordinatorOptions other = options;
  other.max_savepoints = options.max_savepoints + 1;
  auto third = SharedCoordinatorOptions(other);
  EXPECT_NE(third.get(), first.get());
  EXPECT_EQ(third->max_savepoints, other.max_savepoints);

  // Once no holder is left, the next caller gets a fresh copy of its own options, not a stale one.
  first.reset();
  second.reset();
  options.start_spread = Millis(1234);
  auto fourth = SharedCoordinatorOptions(options);
  EXPECT_EQ(fourth->start_spread, Millis(1234));
  EXPECT_NE(fourth.get(), third.get());
}

TEST(TaskIdSetTest, HoldsEachIdOnceInOrderAndComparesByContent) {
  const std::vector<std::string> ids = {"c", "a", "b", "a"};
  const TaskIdSet set(ids.begin(), ids.end());
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(set.begin(), set.end()),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(set.count("b"), 1u);
  EXPECT_EQ(set.count("d"), 0u);
  EXPECT_EQ(set.count(""), 0u);
  EXPECT_TRUE(set == (TaskIdSet{"b", "c", "a"}));
  EXPECT_FALSE(set == (TaskIdSet{"a", "b"}));
  EXPECT_TRUE(TaskIdSet{}.empty());
}

TEST(CoordinatorDelete, ARoundWithTheStoreEndsWhenItsCompletionArrives) {
  Harness h;
  h.auto_commit = false;
  const int64_t id = h.StartToFirstTrigger();
  h.AckAll(id);
  ASSERT_EQ(h.commits.size(), 1u);

  const Actions deleted = h.c().Delete().actions;
  h.Apply(deleted);
  EXPECT_TRUE(ActionsOf<RoundFinished>(deleted).empty()) << "the store has not answered yet";
  EXPECT_TRUE(h.c().HasPendingRound()) << "the round is still with the store";

  const Actions committed = h.c().OnCommitted(id);
  h.Apply(committed);
  auto finished = ActionsOf<RoundFinished>(committed);
  ASSERT_EQ(finished.size(), 1u) << "the runtime needs the end: pending gauge, savepoint callers";
  EXPECT_EQ(finished[0].checkpoint_id, id);
  EXPECT_EQ(finished[0].status, CheckpointStatus::kCompleted);
  EXPECT_FALSE(h.c().HasPendingRound());
  EXPECT_TRUE(ActionsOf<SendComplete>(committed).empty()) << "no session is left to tell";
  EXPECT_TRUE(ActionsOf<PersistRecord>(committed).empty()) << "must not bring the record back";
  EXPECT_TRUE(ActionsOf<ArmWakeup>(committed).empty());
}

TEST(CoordinatorDelete, AFailedCommitAfterDeleteEndsTheSavepointForItsCaller) {
  Harness h;
  h.auto_commit = false;
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  const int64_t id = h.LastTriggerId();
  ASSERT_EQ(h.triggers.back().kind, CheckpointKind::kSavepoint);
  h.AckAll(id);
  h.Apply(h.c().Delete().actions);
  const Actions failed = h.c().OnCommitFailed(id, Status::Unavailable("disk full"));
  auto finished = ActionsOf<RoundFinished>(failed);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].kind, CheckpointKind::kSavepoint);
  EXPECT_EQ(finished[0].status, CheckpointStatus::kFailed);
  EXPECT_TRUE(ActionsOf<PersistRecord>(failed).empty());
  EXPECT_TRUE(ActionsOf<SendAbort>(failed).empty());
}

TEST(CoordinatorDelete, APendingRoundIsAbortedAndNothingIsWrittenBack) {
  Harness h;
  h.StartToFirstTrigger();
  const Actions deleted = h.c().Delete().actions;
  auto finished = ActionsOf<RoundFinished>(deleted);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].status, CheckpointStatus::kAborted);
  EXPECT_TRUE(ActionsOf<PersistRecord>(deleted).empty())
      << "a write queued after the store delete would revive the pipeline";
  EXPECT_FALSE(h.c().HasPendingRound());
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0);
}

TEST(CoordinatorDelete, WorkersAreToldBeforeTheirStreamsEnd) {
  Harness h;
  h.StartToFirstTrigger();
  const Actions deleted = h.c().Delete().actions;
  auto states = ActionsOf<SendState>(deleted);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_FALSE(states[0].state.has_value()) << "deleted: no state";
  EXPECT_EQ(states[0].to, (std::vector<SessionId>{1}));
  EXPECT_LT(IndexOf<SendState>(deleted), IndexOf<EndSession>(deleted));
}

TEST(CoordinatorState, PauseFailStopAndResumeAreAnnouncedToEverySession) {
  Harness h;  // tolerable_failures 0
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);
  h.Apply(h.c().OnRegister(2, "w2", {"b"}, false).actions);
  h.RunFor(milliseconds(0));

  auto paused = h.c().Pause();
  auto states = ActionsOf<SendState>(paused.actions);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, PipelineState::kPaused);
  EXPECT_EQ(states[0].to, (std::vector<SessionId>{1, 2}));
  h.Apply(paused.actions);
  // The round triggered before the pause still finishes.
  h.Apply(h.c().OnAck(1, h.LastTriggerId(), "a", {}));
  h.Apply(h.c().OnAck(2, h.LastTriggerId(), "b", {}));
  ASSERT_EQ(h.completes.size(), 1u);

  auto resumed = h.c().Resume();
  states = ActionsOf<SendState>(resumed.actions);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, PipelineState::kRunning);
  h.Apply(resumed.actions);

  h.RunFor(milliseconds(1000));
  const Actions declined = h.c().OnDecline(1, h.LastTriggerId(), "a", "no space", false);
  states = ActionsOf<SendState>(declined);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, PipelineState::kFailed);
  EXPECT_NE(states[0].reason.find("no space"), std::string::npos) << states[0].reason;
  h.Apply(declined);

  h.Apply(h.c().Resume().actions);
  h.Apply(h.c().RequestSavepoint("", /*stop=*/true, milliseconds(60000)).actions);
  ASSERT_EQ(h.triggers.back().kind, CheckpointKind::kSavepointAndStop);
  h.Apply(h.c().OnAck(1, h.LastTriggerId(), "a", {}));
  const size_t before = h.all.size();
  h.Apply(h.c().OnAck(2, h.LastTriggerId(), "b", {}));
  const Actions after(h.all.begin() + static_cast<long>(before), h.all.end());
  states = ActionsOf<SendState>(after);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, PipelineState::kStopped);
}

TEST(CoordinatorState, AWorkersRefusedSavepointRequestIsAnsweredOnItsStream) {
  Harness h;
  h.StartToFirstTrigger();
  h.Apply(h.c().Pause().actions);
  const Actions refused = h.c().OnWorkerSavepointRequest(1, "", false);
  auto answers = ActionsOf<SendSavepointRefused>(refused);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].session, 1u);
  EXPECT_NE(answers[0].reason.find("PAUSED"), std::string::npos) << answers[0].reason;

  h.Apply(h.c().Resume().actions);
  const Actions accepted = h.c().OnWorkerSavepointRequest(1, "", false);
  EXPECT_TRUE(ActionsOf<SendSavepointRefused>(accepted).empty());
  EXPECT_TRUE(h.c().CurrentSavepoint().has_value());
}

TEST(CoordinatorSavepoint, OnlyTheSameRequestJoinsAPendingSavepoint) {
  Harness h;
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().RequestSavepoint("s3://bucket/sp", false, milliseconds(60000)).actions);
  ASSERT_EQ(h.triggers.size(), 1u);
  ASSERT_EQ(h.triggers[0].kind, CheckpointKind::kSavepoint);

  auto empty_target = h.c().RequestSavepoint("", false, milliseconds(60000));
  EXPECT_EQ(empty_target.status.code(), StatusCode::kFailedPrecondition)
      << "the default location is a different target";
  auto same = h.c().RequestSavepoint("s3://bucket/sp", false, milliseconds(60000));
  EXPECT_TRUE(same.status.ok()) << same.status.ToString();

  // And the other way round: a pending savepoint at the default location.
  h.AckAll(h.LastTriggerId());
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.c().RequestSavepoint("s3://elsewhere", false, milliseconds(60000)).status.code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(h.c().RequestSavepoint("", false, milliseconds(60000)).status.ok());
}

TEST(CoordinatorRounds, ATaskSetUpdateAbortsThePendingRoundWithoutCountingIt) {
  Harness h;
  h.StartToFirstTrigger();
  PipelineSpec spec = h.c().spec();
  spec.task_ids = {"a", "b", "c"};
  auto updated = h.c().UpdateSpec(spec);
  ASSERT_TRUE(updated.status.ok());
  auto finished = ActionsOf<RoundFinished>(updated.actions);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].status, CheckpointStatus::kAborted);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0);
  EXPECT_EQ(h.c().RecentRounds().front().status, CheckpointStatus::kAborted);
}

TEST(CoordinatorRounds, AnUpdateTakesEveryFieldOfTheNewSpec) {
  // UpdateSpec assigns the fields one by one (the key is left in place for other threads): none
  // may be forgotten.
  Harness h;
  h.Start();
  PipelineSpec spec = h.c().spec();
  spec.task_ids = {"x", "y"};
  spec.interval_ms += 1;
  spec.timeout_ms += 2;
  spec.min_pause_ms += 3;
  spec.tolerable_failures += 4;
  spec.retained += 5;
  spec.position_interval += 6;
  const std::string* const job_id = &h.c().key().job_id;
  ASSERT_TRUE(h.c().UpdateSpec(spec).status.ok());
  EXPECT_EQ(h.c().spec(), spec);
  EXPECT_EQ(&h.c().key().job_id, job_id);
}

TEST(CoordinatorSessions, ATaskSetUpdateKeepsTheHoldersOfTasksThatStayAndEndsTheOthers) {
  Harness h;
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);
  h.Apply(h.c().OnRegister(2, "w2", {"b"}, false).actions);
  ASSERT_EQ(h.c().Describe().registered_tasks, 2);
  PipelineSpec spec = h.c().spec();
  spec.task_ids = {"b", "c"};  // "a" leaves; "b" moves to the set's first place
  auto updated = h.c().UpdateSpec(spec);
  ASSERT_TRUE(updated.status.ok()) << updated.status.ToString();
  h.Apply(updated.actions);
  ASSERT_EQ(h.ended.size(), 1u);
  EXPECT_EQ(h.ended[0].session, 1u) << "the stream holding the task that left is ended";
  EXPECT_EQ(h.c().Describe().registered_tasks, 1) << "w2 still holds b";
  // "b" is w2's, not anybody else's, under its new index.
  auto taken = h.c().OnRegister(3, "w3", {"b"}, false);
  EXPECT_EQ(taken.status.code(), StatusCode::kAlreadyExists) << taken.status.ToString();
  h.Apply(h.c().OnRegister(3, "w3", {"c"}, false).actions);
  EXPECT_EQ(h.c().Describe().registered_tasks, 2);
  h.RunFor(Millis(0));
  ASSERT_FALSE(h.triggers.empty()) << "the set is complete again: a round starts";
  const int64_t id = h.LastTriggerId();
  h.Apply(h.c().OnAck(2, id, "b", TaskState{"mem://b", 1, "c"}));
  h.Apply(h.c().OnAck(3, id, "b", TaskState{"mem://b", 1, "c"}));  // not w3's task
  EXPECT_EQ(h.ignored.size(), 1u);
  h.Apply(h.c().OnAck(3, id, "c", TaskState{"mem://c", 1, "c"}));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, id);
}

TEST(CoordinatorSessions, AStreamWhoseTasksAllLeftTheSetIsATaskLossAndASavepointIsQueuedAgain) {
  Harness h;
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);
  h.Apply(h.c().OnRegister(2, "w2", {"b"}, false).actions);
  h.RunFor(Millis(0));  // the first periodic round: finished before the savepoint is asked
  h.Apply(h.c().OnAck(1, h.LastTriggerId(), "a", TaskState{"mem://a", 1, "c"}));
  h.Apply(h.c().OnAck(2, h.LastTriggerId(), "b", TaskState{"mem://b", 1, "c"}));
  auto asked = h.c().RequestSavepoint("", false, milliseconds(60000));
  ASSERT_TRUE(asked.status.ok()) << asked.status.ToString();
  h.Apply(asked.actions);
  h.RunFor(Millis(0));
  ASSERT_NE(h.triggers.back().kind, CheckpointKind::kCheckpoint) << "the savepoint is pending";
  const size_t finished_before = h.finished.size();
  PipelineSpec spec = h.c().spec();
  spec.task_ids = {"b"};  // w1's only task leaves
  auto updated = h.c().UpdateSpec(spec);
  ASSERT_TRUE(updated.status.ok()) << updated.status.ToString();
  h.Apply(updated.actions);
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "lost task(s) a of worker w1"));
  ASSERT_GT(h.finished.size(), finished_before);
  EXPECT_TRUE(h.finished[finished_before].requeued)
      << "the savepoint's callers keep waiting: it goes again with the tasks that are left";
}

TEST(CoordinatorSessions, AGoodbyeIsLoggedAtInfoAndALossAtWarning) {
  Harness h;
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);
  h.Apply(h.c().OnRegister(2, "w2", {"b"}, false).actions);
  h.Apply(h.c().OnSessionEnded(1, "goodbye", PipelineCoordinator::SessionEnd::kGoodbye));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kInfo, "worker w1 said goodbye"));
  EXPECT_FALSE(h.LoggedContaining(LogLevel::kWarn, "w1"));
  h.Apply(h.c().OnSessionEnded(2, "lease expired"));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "lost task(s) b of worker w2 (lease expired)"));
}

// A wide pipeline with one stream a task, registered out of order, two of every three ending and
// coming back on new streams: every task stays routed to the stream that holds it now
// (session_table.h keeps the streams in one vector with marked erases).
TEST(CoordinatorSessions, OneStreamATaskRegisteredOutOfOrderEndingAndComingBackStaysRouted) {
  constexpr int kTasks = 300;
  std::vector<std::string> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back("t" + std::to_string(i));
  Harness h(MakeSpec(tasks));
  h.Start();
  // Streams 1..kTasks: the even ones first, then the odd ones from the top down.
  auto stream_of = [](int task) { return static_cast<SessionId>(task + 1); };
  for (int i = 0; i < kTasks; i += 2) {
    h.Apply(h.c().OnRegister(stream_of(i), "w" + std::to_string(i), {tasks[i]}, false).actions);
  }
  for (int i = kTasks - 1; i > 0; i -= 2) {
    h.Apply(h.c().OnRegister(stream_of(i), "w" + std::to_string(i), {tasks[i]}, false).actions);
  }
  ASSERT_EQ(h.c().Describe().registered_tasks, kTasks);
  h.RunFor(Millis(0));
  int64_t id = h.LastTriggerId();
  ASSERT_GT(id, 0);
  for (int i = 0; i < kTasks; ++i) {
    h.Apply(h.c().OnAck(stream_of(i), id, tasks[i], TaskState{"mem://" + tasks[i], 1, "c"}));
  }
  ASSERT_EQ(h.completes.size(), 1u);

  // Two streams of every three end (more ended than live: the table compacts); their tasks come
  // back on streams numbered above all the others.
  auto ends = [](int task) { return task % 3 != 2; };
  constexpr int kEnded = kTasks - kTasks / 3;
  std::vector<SessionId> holder(kTasks);
  for (int i = 0; i < kTasks; ++i) holder[i] = stream_of(i);
  for (int i = 0; i < kTasks; ++i) {
    if (ends(i)) h.Apply(h.c().OnSessionEnded(stream_of(i), "gone"));
  }
  EXPECT_EQ(h.c().Describe().registered_tasks, kTasks - kEnded);
  EXPECT_EQ(h.c().Describe().sessions, kTasks - kEnded);
  for (int i = 0; i < kTasks; ++i) {
    if (!ends(i)) continue;
    holder[i] = static_cast<SessionId>(kTasks + 1 + i);
    h.Apply(h.c().OnRegister(holder[i], "again" + std::to_string(i), {tasks[i]}, false).actions);
  }
  ASSERT_EQ(h.c().Describe().registered_tasks, kTasks);
  EXPECT_EQ(h.c().Describe().sessions, kTasks);
  h.RunFor(Millis(1000));
  ASSERT_GT(h.LastTriggerId(), id) << "the set is complete again: a round starts";
  id = h.LastTriggerId();
  const size_t ignored_before = h.ignored.size();
  h.Apply(h.c().OnAck(stream_of(0), id, tasks[0], TaskState{"mem://old", 1, "c"}));
  EXPECT_EQ(h.ignored.size(), ignored_before + 1) << "the ended stream no longer holds t0";
  for (int i = 0; i < kTasks; ++i) {
    h.Apply(h.c().OnAck(holder[i], id, tasks[i], TaskState{"mem://" + tasks[i], 2, "c"}));
  }
  ASSERT_EQ(h.completes.size(), 2u);
  EXPECT_EQ(h.completes[1].checkpoint_id, id);
}

TEST(CoordinatorStore, WhileTheStoreFailsWritesNoRoundStartsAndTheScheduleResumesAfter) {
  Harness h;
  h.StartToFirstTrigger();
  h.AckAll(h.LastTriggerId());
  h.Apply(h.c().OnStoreWritable(false));
  h.RunFor(milliseconds(10000));
  EXPECT_EQ(h.triggers.size(), 1u) << "a round started while the store fails writes";
  EXPECT_FALSE(h.wakeup.has_value()) << "nothing to wake up for: no busy loop";
  int64_t id = 0;
  auto manual = h.c().TriggerCheckpoint(&id);
  EXPECT_EQ(manual.status.code(), StatusCode::kUnavailable) << manual.status.ToString();
  // A savepoint asked meanwhile waits (within its timeout) and starts first once writes succeed.
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  EXPECT_EQ(h.triggers.size(), 1u);

  h.Apply(h.c().OnStoreWritable(true));
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_EQ(h.triggers.back().kind, CheckpointKind::kSavepoint);
  h.AckAll(h.LastTriggerId());
  h.RunFor(milliseconds(1000));
  EXPECT_EQ(h.triggers.size(), 3u) << "the periodic schedule goes on";
}

TEST(CoordinatorStore, ATaskLossOrReturnWritesTheProgressNotTheTaskList) {
  std::vector<std::string> tasks;
  for (int i = 0; i < 1000; ++i) tasks.push_back("task-" + std::to_string(i));
  Harness h(MakeSpec(tasks));
  h.Start();
  h.RegisterAll();
  h.persisted_records.clear();
  const Actions lost = h.c().OnSessionEnded(1, "lease expired");
  EXPECT_TRUE(ActionsOf<PersistRecord>(lost).empty()) << "the spec did not change";
  EXPECT_EQ(ActionsOf<PersistProgress>(lost).size(), 1u);
  h.Apply(lost);
  auto back = h.c().OnRegister(2, "w1", tasks, false);
  ASSERT_TRUE(back.status.ok());
  EXPECT_TRUE(ActionsOf<PersistRecord>(back.actions).empty());
  // A changed spec is written whole, once.
  PipelineSpec spec = h.c().spec();
  spec.interval_ms = 5000;
  auto updated = h.c().UpdateSpec(spec);
  ASSERT_EQ(ActionsOf<PersistRecord>(updated.actions).size(), 1u);
  EXPECT_EQ(ActionsOf<PersistRecord>(updated.actions)[0].record.spec.interval_ms, 5000);
}

TEST(CoordinatorSavepoint, AQueuedSavepointNobodyWaitsForIsDroppedATriggeredOneRunsOn) {
  Harness h;
  h.Start();  // no task registered: a savepoint waits in the queue
  h.Apply(h.c().RequestSavepoint("s3://a", false, milliseconds(3600000)).actions);
  ASSERT_TRUE(h.c().CurrentSavepoint().has_value());
  h.Apply(h.c().OnSavepointCallersGone());
  EXPECT_FALSE(h.c().CurrentSavepoint().has_value()) << "held until its timeout (an hour)";
  EXPECT_TRUE(h.c().RequestSavepoint("s3://b", true, milliseconds(60000)).status.ok())
      << "a different savepoint is no longer refused";

  // Triggered: it runs to its end whoever waits.
  h.RegisterAll();
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.back().kind, CheckpointKind::kSavepointAndStop);
  h.Apply(h.c().OnSavepointCallersGone());
  EXPECT_TRUE(h.c().CurrentSavepoint().has_value());
  h.AckAll(h.LastTriggerId());
  EXPECT_EQ(h.c().State(), PipelineState::kStopped);
}

TEST(CoordinatorSavepoint, AWorkersQueuedSavepointWaitsUntilItsTimeout) {
  Harness h;
  h.Start();
  h.Apply(h.c().OnRegister(1, "w1", {"a"}, false).actions);  // b missing: queued
  h.Apply(h.c().OnWorkerSavepointRequest(1, "", false));
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);  // an operator joins
  h.Apply(h.c().OnSavepointCallersGone());                                  // and goes away
  EXPECT_TRUE(h.c().CurrentSavepoint().has_value()) << "the worker still waits for it";
}

TEST(CoordinatorSessions, AStreamFloodingBadAcksIsCountedAlwaysAndLoggedRarely) {
  Harness h;
  const int64_t id = h.StartToFirstTrigger();
  const std::string forged = "x\n2026-12-01T00:00:00.000 critical forged line";
  for (int i = 0; i < 100; ++i) h.Apply(h.c().OnAck(1, id, forged + std::string(5000, 'y'), {}));
  EXPECT_EQ(h.ignored.size(), 100u) << "every one is counted";
  int warnings = 0;
  for (const auto& log : h.logs) {
    if (log.text.find("ignored ack") == std::string::npos) continue;
    ++warnings;
    EXPECT_EQ(log.text.find('\n'), std::string::npos) << "the id is escaped: " << log.text;
    EXPECT_LT(log.text.size(), 600u) << "and cut";
  }
  EXPECT_EQ(warnings, 1) << "one line per stream per 10 s";
  h.clock.AdvanceTo(h.clock.SteadyNow() + milliseconds(10000));
  h.Apply(h.c().OnAck(1, id, "nope", {}));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "99 more such messages not logged"));
}

}  // namespace
}  // namespace ckpt::testing
