// The commit phase in the coordinator (docs/PROTOCOL.md, "Commit phase"): a completed checkpoint
// of a pipeline with commit_timeout_ms is COMMITTING until every task committed it, holds every
// new round, restore and task-set change meanwhile, is never released, warns once when overdue,
// and becomes COMMITTED through a durable mark that is retried until it lands. Every step also
// runs through the invariant model (support/coordinator_invariants.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

PipelineSpec CommitSpec(int64_t commit_timeout_ms = 30000) {
  PipelineSpec spec = MakeSpec();
  spec.commit_timeout_ms = commit_timeout_ms;
  return spec;
}

// Starts, registers both tasks on session 1, completes the first round: it is COMMITTING.
int64_t CompleteFirstRound(Harness& h) {
  const int64_t id = h.StartToFirstTrigger();
  h.AckAll(id);
  return id;
}

TEST(CoordinatorCommit, ACheckpointIsCommittingUntilEveryTaskCommittedThenMarkedAndTold) {
  Harness h(CommitSpec());
  const int64_t id = CompleteFirstRound(h);
  ASSERT_EQ(h.completes.size(), 1u);
  ASSERT_EQ(h.commits.size(), 1u);
  EXPECT_EQ(h.commits[0].commit.checkpoint.commit_status, CommitStatus::kCommitting);
  EXPECT_EQ(h.c().CommittingId(), id);
  EXPECT_EQ(h.c().Describe().committing_checkpoint_id, id);

  h.Apply(h.c().OnTaskCommitted(1, id, "a"));
  EXPECT_TRUE(h.marks.empty()) << "one task is left";
  h.RunFor(seconds(5));  // interval 1 s: no round while COMMITTING
  EXPECT_EQ(h.triggers.size(), 1u);

  h.Apply(h.c().OnTaskCommitted(1, id, "b"));
  ASSERT_EQ(h.marks.size(), 1u);
  EXPECT_EQ(h.marks[0].checkpoint_id, id);
  EXPECT_EQ(h.marks[0].progress.last_committed_id, id);
  ASSERT_EQ(h.all_committed.size(), 1u);
  EXPECT_EQ(h.all_committed[0].checkpoint_id, id);
  EXPECT_EQ(h.all_committed[0].to, std::vector<SessionId>{1});
  EXPECT_EQ(h.c().CommittingId(), 0);
  EXPECT_EQ(h.c().LastCommittedId(), id);
  const auto times = h.c().TaskCommitTimes(id);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_GT(times[0].second, 0);
  EXPECT_GT(times[1].second, 0);

  h.RunFor(milliseconds(1));  // overdue since the interval passed: the next round goes now
  ASSERT_EQ(h.triggers.size(), 2u);
  EXPECT_GT(h.triggers[1].checkpoint_id, id);
}

TEST(CoordinatorCommit, WithoutACommitPhaseNothingWaitsForCommits) {
  Harness h;  // commit_timeout_ms 0
  const int64_t id = CompleteFirstRound(h);
  EXPECT_EQ(h.commits[0].commit.checkpoint.commit_status, CommitStatus::kNone);
  EXPECT_EQ(h.c().CommittingId(), 0);
  h.Apply(h.c().OnTaskCommitted(1, id, "a"));
  EXPECT_EQ(h.ignored, std::vector<std::string>{"not_pending"});
  h.RunFor(seconds(1));
  EXPECT_EQ(h.triggers.size(), 2u);
  EXPECT_TRUE(h.marks.empty());
}

TEST(CoordinatorCommit, ACommittedOfAnotherIdATaskNotHeldOrTwiceIsIgnoredAndCounted) {
  Harness h(CommitSpec());
  const int64_t id = CompleteFirstRound(h);
  h.Apply(h.c().OnTaskCommitted(1, id + 5, "a"));
  h.Apply(h.c().OnTaskCommitted(2, id, "a"));   // a stream that holds nothing
  h.Apply(h.c().OnTaskCommitted(1, id, "zz"));  // no task of the pipeline
  h.Apply(h.c().OnTaskCommitted(1, id, "a"));
  h.Apply(h.c().OnTaskCommitted(1, id, "a"));
  EXPECT_EQ(h.ignored,
            (std::vector<std::string>{"not_pending", "unowned_task", "unowned_task", "duplicate"}));
  EXPECT_TRUE(h.marks.empty());
  EXPECT_EQ(h.c().CommittingId(), id);
}

TEST(CoordinatorCommit, WhileCommittingOperatorsAreRefusedNamingItAndASavepointWaits) {
  RestorePins pins;
  CoordinatorOptions options;
  options.pins = &pins;
  Harness h(CommitSpec(), 0, options);
  const int64_t id = CompleteFirstRound(h);
  int64_t manual = 0;
  auto now = h.c().TriggerCheckpoint(&manual);
  EXPECT_EQ(now.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(now.status.message().find("checkpoint " + std::to_string(id)), std::string::npos)
      << now.status.message();
  EXPECT_NE(now.status.message().find("COMMITTING"), std::string::npos);

  auto deleted = h.c().DeleteCheckpoint(id);
  EXPECT_EQ(deleted.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(deleted.status.message().find("COMMITTING"), std::string::npos);

  PipelineSpec more = CommitSpec();
  more.task_ids = {"a", "b", "c"};
  auto grown = h.c().UpdateSpec(more);
  EXPECT_EQ(grown.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(h.c().spec().task_ids.size(), 2u) << "the refused update changed nothing";
  PipelineSpec slower = CommitSpec();
  slower.interval_ms = 2000;
  EXPECT_TRUE(h.c().UpdateSpec(slower).status.ok()) << "only the task set waits";

  ASSERT_TRUE(h.c().Pause().status.ok());
  auto restored = h.c().Restore(h.c().key(), CompletedCheckpoint{});
  EXPECT_EQ(restored.status.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(h.c().Resume().status.ok());
  // Another pipeline may not restore from it either (its pin is refused on this one's strand).
  EXPECT_EQ(h.c().AddPin(id, {"job", "other"}).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(pins.IsPinned(h.c().key(), id));

  auto savepoint = h.c().RequestSavepoint("", false, seconds(60));
  h.Apply(savepoint.actions);
  ASSERT_TRUE(savepoint.status.ok());
  EXPECT_EQ(h.triggers.size(), 1u) << "queued while COMMITTING";
  h.CommitAll(id);
  ASSERT_EQ(h.triggers.size(), 2u) << "the queued savepoint starts once COMMITTED";
  EXPECT_EQ(h.triggers[1].kind, CheckpointKind::kSavepoint);
}

TEST(CoordinatorCommit, AnOverdueCommitWarnsOnceNamingTheTasksAndIsNeverAborted) {
  Harness h(CommitSpec(/*commit_timeout_ms=*/2000));
  const int64_t id = CompleteFirstRound(h);
  h.Apply(h.c().OnTaskCommitted(1, id, "a"));
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kCommitting);
  h.RunFor(seconds(3));
  size_t overdue = 0;
  for (const Action& a : h.all) overdue += std::holds_alternative<CommitOverdue>(a);
  EXPECT_EQ(overdue, 1u);
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kWarn, "1 of 2 tasks have not committed: b"));
  const Explanation e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kCommitOverdue);
  EXPECT_EQ(e.committing_checkpoint_id, id);
  ASSERT_EQ(e.tasks.size(), 1u);
  EXPECT_EQ(e.tasks[0].task_id, "b");
  EXPECT_NE(ExplainSentence(h.c().key(), e, 0).find("commit overdue"), std::string::npos);
  h.RunFor(seconds(60));
  overdue = 0;
  for (const Action& a : h.all) overdue += std::holds_alternative<CommitOverdue>(a);
  EXPECT_EQ(overdue, 1u) << "once per checkpoint";
  EXPECT_TRUE(h.aborts.empty());
  EXPECT_EQ(h.c().CommittingId(), id);
  EXPECT_EQ(h.triggers.size(), 1u);
}

TEST(CoordinatorCommit, AMarkTheStoreRefusesIsRetriedAndNeverFailsTheRound) {
  Harness h(CommitSpec());
  const int64_t id = CompleteFirstRound(h);
  h.auto_commit = false;
  h.CommitAll(id);
  ASSERT_EQ(h.marks.size(), 1u);
  h.Apply(h.c().OnCommitMarkFailed(id, Status::Unavailable("disk full")));
  EXPECT_TRUE(h.LoggedContaining(LogLevel::kError, "retrying"));
  EXPECT_EQ(h.c().CommittingId(), id);
  h.RunFor(milliseconds(999));
  EXPECT_EQ(h.marks.size(), 1u);
  h.RunFor(milliseconds(2));
  ASSERT_EQ(h.marks.size(), 2u) << "written again after the retry interval";
  EXPECT_EQ(h.marks[1].progress.last_committed_at_ms, h.marks[0].progress.last_committed_at_ms);
  EXPECT_TRUE(h.all_committed.empty());
  h.Apply(h.c().OnCommitMarked(id));
  ASSERT_EQ(h.all_committed.size(), 1u);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0);
}

TEST(CoordinatorCommit, AMarkThatFailsDuringShutdownIsStillRetried) {
  Harness h(CommitSpec());
  const int64_t id = CompleteFirstRound(h);
  h.auto_commit = false;
  h.CommitAll(id);
  h.Apply(h.c().BeginShutdown());
  h.Apply(h.c().OnCommitMarkFailed(id, Status::Unavailable("disk full")));
  h.RunFor(seconds(2));
  ASSERT_EQ(h.marks.size(), 2u) << "a durable write worth making within the grace period";
  h.Apply(h.c().OnCommitMarked(id));
  EXPECT_EQ(h.all_committed.size(), 1u);
  EXPECT_EQ(h.triggers.size(), 1u) << "and nothing else starts";
}

TEST(CoordinatorCommit, TheSpecChangingWhileTheStoreWritesDoesNotChangeThatRoundsPhase) {
  Harness h(CommitSpec());
  const int64_t id = h.StartToFirstTrigger();
  h.auto_commit = false;
  h.AckAll(id);
  ASSERT_EQ(h.commits[0].commit.checkpoint.commit_status, CommitStatus::kCommitting);
  EXPECT_TRUE(h.c().UpdateSpec(CommitSpec(0)).status.ok());  // the phase turned off meanwhile
  h.Apply(h.c().OnCommitted(id));
  EXPECT_EQ(h.c().CommittingId(), id) << "written COMMITTING: it is COMMITTING, as after a restart";
  ASSERT_FALSE(h.completes.empty());
  EXPECT_TRUE(h.completes.back().commit) << "and the workers are asked to commit it";
  h.CommitAll(id);
  ASSERT_EQ(h.marks.size(), 1u);
}

TEST(CoordinatorCommit, AReturningWorkerIsWelcomedWithCommitPendingAndTheLastCommitted) {
  Harness h(CommitSpec());
  const int64_t first = CompleteFirstRound(h);
  h.CommitAll(first);
  h.RunFor(seconds(1));
  const int64_t second = h.LastTriggerId();
  h.AckAll(second);
  ASSERT_EQ(h.c().CommittingId(), second);
  h.Apply(h.c().OnTaskCommitted(1, second, "a"));
  h.Apply(h.c().OnSessionEnded(1, "crashed"));

  auto reg = h.c().OnRegister(2, "w2", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, second);
  EXPECT_TRUE(reg.welcome.restore.commit_pending);
  EXPECT_EQ(reg.welcome.last_committed_checkpoint_id, first);
  // "a" committed before the crash; its mark is kept in memory, "b" commits now.
  h.Apply(h.c().OnTaskCommitted(2, second, "b"));
  ASSERT_EQ(h.all_committed.size(), 2u);
  EXPECT_EQ(h.all_committed[1].to, std::vector<SessionId>{2});

  auto later = h.c().OnRegister(3, "w3", {"a"}, true);
  ASSERT_TRUE(later.status.ok());
  h.Apply(later.actions);
  EXPECT_FALSE(later.welcome.restore.commit_pending);
  EXPECT_EQ(later.welcome.last_committed_checkpoint_id, second);
}

TEST(CoordinatorCommit, AStreamThatRegisteredWhileTheRoundWasWithTheStoreEndsCommitPending) {
  Harness h(CommitSpec());
  const int64_t id = h.StartToFirstTrigger();
  h.auto_commit = false;
  h.AckAll(id);
  ASSERT_EQ(h.commits.size(), 1u);
  // Task b moves to a new stream while the store writes the round: its welcome names no restore
  // point yet, so it cannot know what checkpoint `id` holds.
  auto reg = h.c().OnRegister(2, "w2", {"b"}, true);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 0);
  h.Apply(h.c().OnCommitted(id));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(std::count(h.completes[0].to.begin(), h.completes[0].to.end(), SessionId{2}), 0)
      << "the stream that cannot know what to commit is not asked to";
  EXPECT_TRUE(h.completes[0].commit);
  bool ended = false;
  for (const EndSession& e : h.ended) {
    if (e.session != 2) continue;
    ended = true;
    EXPECT_EQ(e.status.code(), StatusCode::kAborted);
    EXPECT_NE(e.status.message().find("commit pending"), std::string::npos);
  }
  EXPECT_TRUE(ended);
  auto back = h.c().OnRegister(3, "w2", {"b"}, true);
  ASSERT_TRUE(back.status.ok());
  h.Apply(back.actions);
  EXPECT_TRUE(back.welcome.restore.commit_pending);
  EXPECT_EQ(back.welcome.restore.checkpoint_id, id);
}

TEST(CoordinatorCommit, MinPauseCountsFromCommitted) {
  PipelineSpec spec = CommitSpec();
  spec.min_pause_ms = 3000;
  Harness h(spec);
  const int64_t id = CompleteFirstRound(h);
  h.RunFor(seconds(10));
  h.CommitAll(id);
  h.RunFor(milliseconds(2999));
  EXPECT_EQ(h.triggers.size(), 1u);
  h.RunFor(milliseconds(2));
  EXPECT_EQ(h.triggers.size(), 2u);
}

TEST(CoordinatorCommit, APipelineLoadedCommittingAsksEveryTaskAgain) {
  StoredPipeline stored;
  stored.record.spec = CommitSpec();
  stored.record.last_completed_id = 7;
  stored.record.last_committed_id = 6;
  stored.id_counter = 100;
  stored.history = {{6, CheckpointKind::kCheckpoint}, {7, CheckpointKind::kCheckpoint}};
  CompletedCheckpoint newest;
  newest.checkpoint_id = 7;
  newest.commit_status = CommitStatus::kCommitting;
  newest.task_states = {{"a", {"s/a", 1, ""}}, {"b", {"s/b", 1, ""}}};
  stored.newest = newest;
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  EXPECT_EQ(h.c().CommittingId(), 7);
  auto reg = h.c().OnRegister(1, "w1", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_TRUE(reg.welcome.restore.commit_pending);
  EXPECT_EQ(reg.welcome.last_committed_checkpoint_id, 6);
  h.RunFor(seconds(5));
  EXPECT_TRUE(h.triggers.empty()) << "no round before the commit";
  h.CommitAll(7);
  ASSERT_EQ(h.all_committed.size(), 1u);
  h.RunFor(seconds(1));
  ASSERT_FALSE(h.triggers.empty());
  EXPECT_GT(h.triggers[0].checkpoint_id, 100);
}

TEST(CoordinatorCommit, ASavepointAndStopStaysCommittingUntilItsTasksCommit) {
  Harness h(CommitSpec());
  const int64_t first = CompleteFirstRound(h);
  h.CommitAll(first);
  auto asked = h.c().RequestSavepoint("", /*stop=*/true, seconds(60));
  h.Apply(asked.actions);
  ASSERT_TRUE(asked.status.ok());
  const int64_t id = h.LastTriggerId();
  h.AckAll(id);
  EXPECT_EQ(h.c().State(), PipelineState::kStopped);
  EXPECT_EQ(h.c().CommittingId(), id);
  h.CommitAll(id);
  EXPECT_EQ(h.c().CommittingId(), 0);
  EXPECT_EQ(h.all_committed.back().checkpoint_id, id);
}

}  // namespace
}  // namespace ckpt::testing
