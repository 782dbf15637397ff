// Verified restore in the coordinator (docs/PROTOCOL.md, "Verified restore"): a task's failed
// restore_result marks the restore point unrestorable and moves the pipeline to the newest older
// checkpoint of its history (read from the store: ReadRestoreCandidate), or fails it when no
// fallback is allowed or none is left. Never a welcome without state for a pipeline that has some.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

// Three rounds completed on session 1 (every task); their ids, oldest first.
std::vector<int64_t> ThreeCompletedRounds(Harness& h) {
  std::vector<int64_t> ids;
  ids.push_back(h.StartToFirstTrigger());
  h.AckAll(ids.back());
  for (int i = 0; i < 2; ++i) {
    h.RunFor(milliseconds(1000));
    ids.push_back(h.LastTriggerId());
    h.AckAll(ids.back());
  }
  return ids;
}

// What the store holds of checkpoint `id` (as the harness's rounds acked it).
CompletedCheckpoint Stored(int64_t id) {
  CompletedCheckpoint checkpoint;
  checkpoint.checkpoint_id = id;
  checkpoint.task_states = {{"a", {"mem://a", 1, "c"}}, {"b", {"mem://b", 1, "c"}}};
  return checkpoint;
}

// The next round, every task acked: it is with the store, which has not answered yet.
int64_t RoundWithTheStore(Harness& h) {
  h.auto_commit = false;
  h.RunFor(milliseconds(1000));
  const int64_t id = h.LastTriggerId();
  h.AckAll(id);
  return id;
}

Actions FailRestore(Harness& h, int64_t id, SessionId session = 1, const std::string& task = "a") {
  Actions out = h.c().OnRestoreResult(session, id, task, false, "state file is corrupt");
  h.Apply(out);
  return out;
}

TEST(CoordinatorVerifiedRestore, AFailedRestoreFallsBackToTheNewestOlderCheckpoint) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  const int64_t generation = h.c().Describe().generation;

  Actions failed = FailRestore(h, ids[2]);
  EXPECT_EQ(ActionsOf<RestoreFailed>(failed).size(), 1u);
  const auto reads = ActionsOf<ReadRestoreCandidate>(failed);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].failed_id, ids[2]);
  EXPECT_EQ(reads[0].checkpoint_id, ids[1]) << "the newest older one";
  ASSERT_FALSE(h.persisted.empty());
  EXPECT_EQ(h.persisted.back().unrestorable_ids, std::vector<int64_t>{ids[2]})
      << "the mark rides with the progress";
  EXPECT_EQ(h.c().UnrestorableIds(), std::vector<int64_t>{ids[2]});

  // While the older one is read: no round, and a hello comes back later.
  const size_t triggers = h.triggers.size();
  h.RunFor(milliseconds(5000));
  EXPECT_EQ(h.triggers.size(), triggers) << "no round while the restore point is being replaced";
  auto refused = h.c().OnRegister(2, "w2", {"a"}, true);
  EXPECT_EQ(refused.status.code(), StatusCode::kUnavailable) << refused.status.ToString();
  EXPECT_NE(h.c().Describe().state_reason.find("choosing an older restore point"),
            std::string::npos);

  h.Apply(h.c().OnRestoreCandidate(ids[2], ids[1], Stored(ids[1])));
  ASSERT_EQ(h.ended.size(), 1u) << "the stream ends, to come back to the new restore point";
  EXPECT_EQ(h.ended[0].status.code(), StatusCode::kAborted);
  EXPECT_EQ(h.ended[0].status.message(),
            "restored to checkpoint job/pipe@" + std::to_string(ids[1]) + ": restore of " +
                std::to_string(ids[2]) + " failed on task a: state file is corrupt");
  EXPECT_GT(h.c().Describe().generation, generation);

  auto again = h.c().OnRegister(3, "w3", {"a", "b"}, false);
  ASSERT_TRUE(again.status.ok());
  h.Apply(again.actions);
  EXPECT_EQ(again.welcome.restore.checkpoint_id, ids[1]);
  EXPECT_EQ(again.welcome.restore.task_states.size(), 2u);
  EXPECT_FALSE(again.welcome.restore_withheld);
  EXPECT_EQ(again.welcome.last_completed_checkpoint_id, ids[2]);

  // Rounds go on, with ids above every one handed out before.
  h.RunFor(milliseconds(2000));
  ASSERT_GT(h.triggers.size(), triggers);
  EXPECT_GT(h.LastTriggerId(), ids[2]) << "no id is reused";
  h.AckAll(h.LastTriggerId(), 3);
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, h.LastTriggerId());
  EXPECT_EQ(h.c().UnrestorableIds(), std::vector<int64_t>{ids[2]})
      << "still in the history, still marked";
}

TEST(CoordinatorVerifiedRestore, OnlyAFirstFailureOfTheRestorePointFromItsTasksStreamCounts) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  EXPECT_TRUE(h.c().OnRestoreResult(1, ids[2], "a", true, "").empty()) << "a success";
  EXPECT_TRUE(h.c().OnRestoreResult(1, ids[1], "a", false, "x").empty()) << "not the restore point";
  Actions stranger = h.c().OnRestoreResult(9, ids[2], "a", false, "x");
  EXPECT_TRUE(ActionsOf<RestoreFailed>(stranger).empty()) << "a stream that does not hold a";
  EXPECT_EQ(ActionsOf<RestoreFailed>(FailRestore(h, ids[2])).size(), 1u);
  EXPECT_TRUE(ActionsOf<RestoreFailed>(FailRestore(h, ids[2], 1, "b")).empty())
      << "a second result for a marked checkpoint is ignored";
}

TEST(CoordinatorVerifiedRestore, APendingRoundIsAborted) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  h.RunFor(milliseconds(1000));
  const int64_t pending = h.LastTriggerId();
  ASSERT_GT(pending, ids[2]);
  FailRestore(h, ids[2]);
  EXPECT_FALSE(h.c().HasPendingRound());
  ASSERT_FALSE(h.finished.empty());
  EXPECT_EQ(h.finished.back().checkpoint_id, pending);
  EXPECT_EQ(h.finished.back().status, CheckpointStatus::kAborted);
}

TEST(CoordinatorVerifiedRestore, ACheckpointTheStoreNoLongerHoldsIsPassedOver) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  FailRestore(h, ids[2]);
  Actions next = h.c().OnRestoreCandidate(ids[2], ids[1], std::nullopt);
  h.Apply(next);
  const auto reads = ActionsOf<ReadRestoreCandidate>(next);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].checkpoint_id, ids[0]);
  h.Apply(h.c().OnRestoreCandidate(ids[2], ids[0], Stored(ids[0])));
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, ids[0]);
}

TEST(CoordinatorVerifiedRestore, TheCheckpointBeingReadForTheFallbackStays) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  FailRestore(h, ids[2]);
  EXPECT_EQ(h.c().DeleteCheckpoint(ids[1]).status.code(), StatusCode::kFailedPrecondition)
      << "it is about to be the restore point";
  // Deleted anyway (a delete already in flight), it is passed over when the read comes back.
  auto deleted = h.c().DeleteCheckpoint(ids[0]);
  ASSERT_TRUE(deleted.status.ok());
  h.Apply(deleted.actions);
  h.Apply(h.c().OnCheckpointsDeleted({ids[0]}));
  Actions next = h.c().OnRestoreCandidate(ids[2], ids[1], Stored(ids[1]));
  h.Apply(next);
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, ids[1]);
}

TEST(CoordinatorVerifiedRestore, WithNoOlderCheckpointThePipelineFailsAndOffersNoState) {
  Harness h;
  const int64_t only = h.StartToFirstTrigger();
  h.AckAll(only);
  Actions failed = FailRestore(h, only);
  EXPECT_TRUE(ActionsOf<ReadRestoreCandidate>(failed).empty());
  EXPECT_EQ(h.c().State(), PipelineState::kFailed);
  const std::string reason = h.c().Describe().state_reason;
  EXPECT_NE(reason.find("restore of " + std::to_string(only) + " failed on task a"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("no older retained checkpoint"), std::string::npos) << reason;
  EXPECT_EQ(h.c().Explain().state_reason, reason);

  auto reg = h.c().OnRegister(2, "w2", {"a"}, true);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(reg.welcome.state, PipelineState::kFailed);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 0) << "never the failed checkpoint";
  EXPECT_TRUE(reg.welcome.restore_withheld) << "and never a fresh start either";
  EXPECT_EQ(h.c().Resume().status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(h.c().AddPin(only, {"job", "pipe"}).code(), StatusCode::kFailedPrecondition)
      << "an unrestorable checkpoint is never a restore point again";
}

TEST(CoordinatorVerifiedRestore, AnOperatorsRestoreEndsTheFailure) {
  Harness h;
  const int64_t only = h.StartToFirstTrigger();
  h.AckAll(only);
  FailRestore(h, only);
  ASSERT_EQ(h.c().State(), PipelineState::kFailed);
  CompletedCheckpoint other = Stored(3);
  auto restored = h.c().Restore({"other", "p"}, other);
  ASSERT_TRUE(restored.status.ok()) << restored.status.ToString();
  h.Apply(restored.actions);
  EXPECT_EQ(h.c().State(), PipelineState::kPaused);
  EXPECT_TRUE(h.c().Describe().state_reason.empty());
  auto reg = h.c().OnRegister(7, "w7", {"a"}, true);
  ASSERT_TRUE(reg.status.ok());
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 3);
  EXPECT_FALSE(reg.welcome.restore_withheld);
}

TEST(CoordinatorVerifiedRestore, AnOperatorsRollbackThatFailsFallsBackAndStaysTheOperators) {
  RestorePins pins;
  CoordinatorOptions options;
  options.pins = &pins;
  Harness h(MakeSpec(), 0, options);
  const auto ids = ThreeCompletedRounds(h);
  // An operator rolls back to the middle one (the host pins it first).
  h.Apply(h.c().Pause().actions);
  ASSERT_TRUE(h.c().AddPin(ids[1], {"job", "pipe"}).ok());
  auto rolled = h.c().Restore({"job", "pipe"}, Stored(ids[1]));
  ASSERT_TRUE(rolled.status.ok()) << rolled.status.ToString();
  h.Apply(rolled.actions);
  auto reg = h.c().OnRegister(2, "w2", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  ASSERT_EQ(reg.welcome.restore.checkpoint_id, ids[1]);

  FailRestore(h, ids[1], 2);
  h.Apply(h.c().OnRestoreCandidate(ids[1], ids[0], Stored(ids[0])));
  const RestorePoint now = h.c().CurrentRestorePoint();
  EXPECT_EQ(now.checkpoint_id, ids[0]) << "older than the operator's choice, not the newest";
  EXPECT_TRUE(now.operator_set);
  EXPECT_TRUE(pins.IsPinned({"job", "pipe"}, ids[0]));
  EXPECT_FALSE(pins.IsPinned({"job", "pipe"}, ids[1])) << "the failed one's pin is let go";
  ASSERT_FALSE(h.persisted.empty());
  EXPECT_EQ(h.persisted.back().restore_from, (CheckpointRef{{"job", "pipe"}, ids[0]}))
      << "a restart keeps the rollback";
}

TEST(CoordinatorVerifiedRestore, AnotherPipelinesCheckpointIsNotFallenBackFrom) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.restore_from = CheckpointRef{{"old", "p"}, 40};
  stored.restore_source = Stored(40);
  Harness h(stored, {});
  h.Start();
  h.RegisterAll();
  Actions failed = FailRestore(h, 40);
  EXPECT_TRUE(ActionsOf<ReadRestoreCandidate>(failed).empty());
  EXPECT_EQ(h.c().State(), PipelineState::kFailed);
  EXPECT_NE(h.c().Describe().state_reason.find("restore_from"), std::string::npos);
  EXPECT_TRUE(h.c().UnrestorableIds().empty()) << "marks are of this pipeline's checkpoints";
  ASSERT_FALSE(h.persisted.empty());
  EXPECT_TRUE(h.persisted.back().restore_from_failed) << "the failure is durable instead";

  // After a restart: still FAILED, still withheld.
  stored.record = h.persisted.back();
  Harness again(stored, {});
  again.Start(/*restarted=*/true);
  EXPECT_EQ(again.c().State(), PipelineState::kFailed);
  auto reg = again.c().OnRegister(1, "w1", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  again.Apply(reg.actions);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 0);
  EXPECT_TRUE(reg.welcome.restore_withheld);
  EXPECT_NE(again.c().Describe().state_reason.find("restore_from"), std::string::npos);
}

TEST(CoordinatorVerifiedRestore, AFailureWhileARoundIsWithTheStoreWaitsForIt) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  const int64_t with_store = RoundWithTheStore(h);
  Actions failed = FailRestore(h, ids[2]);
  EXPECT_TRUE(ActionsOf<ReadRestoreCandidate>(failed).empty()) << "the round may still land";
  // It does not: the fallback is decided then.
  Actions store_failed = h.c().OnCommitFailed(with_store, Status::Unavailable("disk full"));
  h.Apply(store_failed);
  const auto reads = ActionsOf<ReadRestoreCandidate>(store_failed);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].checkpoint_id, ids[1]);
}

TEST(CoordinatorVerifiedRestore, ARoundThatLandsAfterAFailureSendsTheWorkersToIt) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  const int64_t with_store = RoundWithTheStore(h);
  FailRestore(h, ids[2]);
  h.ended.clear();
  h.Apply(h.c().OnCommitted(with_store));
  ASSERT_EQ(h.ended.size(), 1u) << "the worker whose restore failed comes back";
  EXPECT_EQ(h.ended[0].status.message(),
            "restored to checkpoint job/pipe@" + std::to_string(with_store) + ": restore of " +
                std::to_string(ids[2]) + " failed on task a: state file is corrupt");
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, with_store);
}

TEST(CoordinatorVerifiedRestore, AFallbackIsFoundAgainAfterARestartWhateverTheState) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.last_completed_id = 7;
  stored.record.unrestorable_ids = {7};
  stored.record.sticky = StickyState::kFailed;  // later rounds failed past tolerable_failures
  stored.id_counter = 100;
  stored.history = {{6, CheckpointKind::kCheckpoint}, {7, CheckpointKind::kCheckpoint}};
  stored.newest = Stored(7);
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  const auto reads = ActionsOf<ReadRestoreCandidate>(h.all);
  ASSERT_EQ(reads.size(), 1u);
  h.Apply(h.c().OnRestoreCandidate(7, 6, Stored(6)));
  auto reg = h.c().OnRegister(1, "w1", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 6);
  EXPECT_FALSE(reg.welcome.restore_withheld);
  EXPECT_EQ(reg.welcome.state, PipelineState::kFailed) << "as it was";
  EXPECT_TRUE(h.c().Resume().status.ok()) << "a restore point to resume from";
}

TEST(CoordinatorVerifiedRestore, ACommittedCheckpointIsNotFallenBackFrom) {
  PipelineSpec spec = MakeSpec();
  spec.commit_timeout_ms = 30000;
  Harness h(spec);
  const int64_t first = h.StartToFirstTrigger();
  h.AckAll(first);
  h.CommitAll(first);
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  h.AckAll(second);
  h.CommitAll(second);
  ASSERT_EQ(h.c().LastCommittedId(), second);
  Actions failed = FailRestore(h, second);
  EXPECT_TRUE(ActionsOf<ReadRestoreCandidate>(failed).empty()) << "its side effects are done";
  EXPECT_EQ(h.c().State(), PipelineState::kFailed);
  EXPECT_NE(h.c().Describe().state_reason.find("COMMITTED"), std::string::npos);
}

TEST(CoordinatorVerifiedRestore, AnAlignmentGroupMemberIsNotFallenBackFrom) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.last_completed_id = 5;
  stored.history = {{4, CheckpointKind::kCheckpoint}, {5, CheckpointKind::kCheckpoint}};
  stored.newest = Stored(5);
  Harness h(stored, {});
  AlignmentGroupSpec group;
  group.name = "ledger";
  h.Apply(h.c().SetGroup(group));
  h.Start(/*restarted=*/true);
  h.RegisterAll();
  Actions failed = FailRestore(h, 5);
  EXPECT_TRUE(ActionsOf<ReadRestoreCandidate>(failed).empty());
  EXPECT_EQ(h.c().State(), PipelineState::kFailed);
  EXPECT_NE(h.c().Describe().state_reason.find("alignment group ledger"), std::string::npos);
}

TEST(CoordinatorVerifiedRestore, AfterARestartAMarkedNewestCheckpointIsPassedOver) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.last_completed_id = 7;
  stored.record.unrestorable_ids = {7};
  stored.id_counter = 100;
  stored.history = {{5, CheckpointKind::kCheckpoint},
                    {6, CheckpointKind::kSavepoint},
                    {7, CheckpointKind::kCheckpoint}};
  stored.newest = Stored(7);
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  const auto reads = ActionsOf<ReadRestoreCandidate>(h.all);
  ASSERT_EQ(reads.size(), 1u) << "the fallback again: the daemon may have died before it";
  EXPECT_EQ(reads[0].checkpoint_id, 6) << "a savepoint is a completed checkpoint too";
  CompletedCheckpoint savepoint = Stored(6);
  savepoint.kind = CheckpointKind::kSavepoint;
  h.Apply(h.c().OnRestoreCandidate(7, 6, savepoint));
  auto reg = h.c().OnRegister(1, "w1", {"a", "b"}, false);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 6);
  EXPECT_EQ(reg.welcome.restore.kind, CheckpointKind::kSavepoint);
  h.RunFor(milliseconds(2000));
  EXPECT_GT(h.LastTriggerId(), 100) << "ids continue above the stored counter";
}

TEST(CoordinatorVerifiedRestore, ALateAnswerIsIgnoredOnceACompletionMovedTheRestorePoint) {
  Harness h;
  const auto ids = ThreeCompletedRounds(h);
  const int64_t with_store = RoundWithTheStore(h);
  FailRestore(h, ids[2]);  // the round with the store is not aborted
  h.Apply(h.c().OnCommitted(with_store));
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, with_store);
  EXPECT_TRUE(h.c().OnRestoreCandidate(ids[2], ids[1], Stored(ids[1])).empty());
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, with_store);
}

}  // namespace
}  // namespace ckpt::testing
