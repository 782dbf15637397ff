// A pipeline as a member of an alignment group (docs/ALIGNMENT.md): it schedules nothing and
// reserves no ids of its own, triggers the group's rounds, hands its part to the group
// (MemberDone) instead of the store, tells the group why it cannot finish (MemberFailed), records
// the group's verdict (EndGroupRound), holds its own progress writes while its part waits for the
// group's commit, and continues above the group's ids when it leaves.
#include <gtest/gtest.h>

#include "coordinator_harness.h"
#include "core/spec_validation.h"

namespace ckpt::testing {
namespace {

AlignmentGroupSpec Ledger() {
  AlignmentGroupSpec spec;
  spec.name = "ledger";
  spec.interval_ms = 1000;
  spec.timeout_ms = 5000;
  return spec;
}

// A member of "ledger", started, both tasks registered on session 1.
struct MemberHarness : Harness {
  MemberHarness() {
    Apply(c().SetGroup(Ledger()));
    Start();
    RegisterAll();
  }
  template <typename T>
  std::vector<T> All() const {
    return ActionsOf<T>(all);
  }
};

TEST(GroupMemberTest, SchedulesNothingAndReservesNoIdsOfItsOwn) {
  MemberHarness h;
  h.RunFor(Millis(10000));
  EXPECT_TRUE(h.triggers.empty()) << "its rounds are the group's";
  EXPECT_TRUE(h.reserve_requests.empty());
  EXPECT_EQ(h.c().GroupReadiness(), (std::pair<bool, std::string>{true, ""}));
  int64_t id = 0;
  EXPECT_EQ(h.c().TriggerCheckpoint(&id).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(h.c().RequestSavepoint("", false, Millis(1000)).status.code(),
            StatusCode::kFailedPrecondition);
}

TEST(GroupMemberTest, TheLastAckGoesToTheGroupAndOnlyItsCommitCompletesTheRound) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(700, CheckpointKind::kCheckpoint, 0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].checkpoint_id, 700) << "the group's id";
  EXPECT_FALSE(h.c().GroupReadiness().first) << "a round is pending here";
  h.AckAll(700);
  EXPECT_TRUE(h.commits.empty()) << "a member never commits by itself";
  auto done = h.All<MemberDone>();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].checkpoint_id, 700);
  EXPECT_EQ(done[0].commit.checkpoint.alignment_group, "ledger");
  EXPECT_EQ(done[0].commit.checkpoint.task_states.size(), 2u);
  EXPECT_EQ(done[0].commit.progress_after.last_completed_id, 700);
  EXPECT_TRUE(h.completes.empty()) << "nothing completes before the group's commit";
  EXPECT_NE(h.c().GroupReadiness().second.find("completing"), std::string::npos);

  h.Apply(h.c().OnCommitted(700));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, 700);
  EXPECT_EQ(h.c().Describe().counters.completed_count, 1);
  EXPECT_EQ(h.c().CurrentRestorePoint().checkpoint_id, 700);
  EXPECT_TRUE(h.c().GroupReadiness().first);
}

TEST(GroupMemberTest, WithTheGroupsCommitPhaseItMarksOnlyOnceEveryMemberCommitted) {
  MemberHarness h;
  AlignmentGroupSpec spec = Ledger();
  spec.commit_timeout_ms = 30000;  // the group's replaces the member's own (none)
  h.Apply(h.c().SetGroup(spec));
  h.Apply(h.c().StartGroupRound(700, CheckpointKind::kCheckpoint, 0));
  h.AckAll(700);
  auto done = h.All<MemberDone>();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].commit.checkpoint.commit_status, CommitStatus::kCommitting);
  h.Apply(h.c().OnCommitted(700));
  EXPECT_EQ(h.c().CommittingId(), 700);
  EXPECT_FALSE(h.c().GroupReadiness().first) << "COMMITTING holds the group";

  h.CommitAll(700);
  ASSERT_EQ(h.All<MemberCommitted>().size(), 1u) << "its part goes to the group";
  EXPECT_TRUE(h.marks.empty()) << "no mark before every member committed";
  EXPECT_TRUE(h.all_committed.empty());
  h.Apply(h.c().OnGroupCommitted(699));  // another round: nothing
  EXPECT_TRUE(h.marks.empty());
  h.Apply(h.c().OnGroupCommitted(700));
  ASSERT_EQ(h.marks.size(), 1u);
  ASSERT_EQ(h.all_committed.size(), 1u);
  EXPECT_EQ(h.all_committed[0].checkpoint_id, 700);
  EXPECT_TRUE(h.c().GroupReadiness().first);
}

TEST(GroupMemberTest, AMemberLeavingWhileCommittingMarksItsPartAlone) {
  MemberHarness h;
  AlignmentGroupSpec spec = Ledger();
  spec.commit_timeout_ms = 30000;
  h.Apply(h.c().SetGroup(spec));
  h.Apply(h.c().StartGroupRound(700, CheckpointKind::kCheckpoint, 0));
  h.AckAll(700);
  h.Apply(h.c().OnCommitted(700));
  h.CommitAll(700);
  EXPECT_TRUE(h.marks.empty());
  h.Apply(h.c().SetGroup(std::nullopt, 700));
  ASSERT_EQ(h.marks.size(), 1u) << "on its own: no group to wait for";
  EXPECT_EQ(h.all_committed.size(), 1u);
}

TEST(GroupMemberTest, AnIdItsHistoryCouldNotHoldIsRefused) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(kMaxCheckpointId + 1, CheckpointKind::kCheckpoint, 0));
  EXPECT_TRUE(h.triggers.empty()) << "no trigger with an id outside 1..kMaxCheckpointId";
  auto failed = h.All<MemberFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].failure, MemberFailure::kAborted);
  EXPECT_NE(failed[0].reason.find("outside 1.."), std::string::npos) << failed[0].reason;
  EXPECT_TRUE(h.c().GroupReadiness().first) << "no round pending here";
  h.Apply(h.c().StartGroupRound(kMaxCheckpointId, CheckpointKind::kCheckpoint, 0));
  ASSERT_EQ(h.triggers.size(), 1u) << "the bound itself is an id";
  EXPECT_EQ(h.triggers[0].checkpoint_id, kMaxCheckpointId);
}

TEST(GroupMemberTest, AGroupSavepointIsRefusedForAllByAMemberAtItsSavepointCap) {
  CoordinatorOptions options;
  options.max_savepoints = 1;
  Harness h(MakeSpec(), 0, options);
  h.Apply(h.c().SetGroup(Ledger()));
  h.Start();
  h.RegisterAll();
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kSavepoint, 0));
  h.AckAll(10);
  h.Apply(h.c().OnCommitted(10));
  ASSERT_EQ(h.completes.size(), 1u) << "the one savepoint it may hold";
  h.Apply(h.c().StartGroupRound(11, CheckpointKind::kSavepoint, 0));
  EXPECT_EQ(h.triggers.size(), 1u) << "no trigger for a savepoint its history cannot hold";
  auto failed = ActionsOf<MemberFailed>(h.all);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].checkpoint_id, 11);
  EXPECT_NE(failed[0].reason.find("limits.max_savepoints_per_pipeline (1)"), std::string::npos)
      << failed[0].reason;
  EXPECT_EQ(failed[0].limit, CountedLimit::kMaxSavepointsPerPipeline);
  // Declined: the group expects no "not ready" after it (GroupTest.AMemberThatRefusesASavepoint...)
  EXPECT_EQ(failed[0].failure, MemberFailure::kDeclined);
  h.Apply(h.c().StartGroupRound(12, CheckpointKind::kCheckpoint, 0));
  ASSERT_EQ(h.triggers.size(), 2u) << "checkpoints go on";
  EXPECT_EQ(h.triggers.back().checkpoint_id, 12);
}

TEST(GroupMemberTest, ADeclineHereFailsItHereAndTellsTheGroup) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.Apply(h.c().OnDecline(1, 10, "a", "disk full", false));
  auto failed = h.All<MemberFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].checkpoint_id, 10);
  EXPECT_EQ(failed[0].failure, MemberFailure::kDeclined);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 1) << "this member's failure";
  ASSERT_EQ(h.aborts.size(), 1u);
  // The group's abort that follows is for a round already over here: nothing more.
  const size_t before = h.all.size();
  h.Apply(h.c().EndGroupRound(10, MemberOutcome::kFailed, "a task of job/pipe declined"));
  EXPECT_EQ(h.all.size(), before);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 1) << "counted once";
}

TEST(GroupMemberTest, AnotherMembersFailureIsRecordedAbortedAndCountsNothing) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.AckAll(10);  // this member is done; another is not
  h.Apply(h.c().EndGroupRound(10, MemberOutcome::kAborted, "job/other: task x declined"));
  EXPECT_TRUE(h.All<MemberFailed>().empty()) << "the group ended it: nothing to tell it";
  ASSERT_EQ(h.aborts.size(), 1u);
  EXPECT_TRUE(h.completes.empty());
  const auto counters = h.c().Describe().counters;
  EXPECT_EQ(counters.failed_count, 0);
  EXPECT_EQ(counters.expired_count, 0);
  EXPECT_EQ(counters.consecutive_failures, 0);
  ASSERT_FALSE(h.c().RecentRounds().empty());
  EXPECT_EQ(h.c().RecentRounds().front().status, CheckpointStatus::kAborted);
  EXPECT_TRUE(h.c().GroupReadiness().first) << "ready for the next round";
}

TEST(GroupMemberTest, TheGroupsDeadlineExpiresTheRoundForTheMemberThatHeldIt) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.Apply(h.c().OnAck(1, 10, "a", TaskState{"mem://a", 1, "c"}));
  h.RunFor(Millis(60000));
  EXPECT_TRUE(h.c().HasPendingRound()) << "no timer of its own: the group keeps the deadline";
  h.Apply(h.c().EndGroupRound(10, MemberOutcome::kExpired, "timed out"));
  EXPECT_EQ(h.c().Describe().counters.expired_count, 1);
}

TEST(GroupMemberTest, ALostTaskAbortsItsPartAndHoldsTheGroupNamingTheTask) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.Apply(h.c().OnSessionEnded(1, "stream broke"));
  auto failed = h.All<MemberFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].failure, MemberFailure::kAborted);
  EXPECT_EQ(h.c().Describe().counters.failed_count, 0) << "task loss is nobody's failure";
  auto [ready, holdup] = h.c().GroupReadiness();
  EXPECT_FALSE(ready);
  EXPECT_NE(holdup.find("waiting for 2 of 2 tasks"), std::string::npos) << holdup;
}

TEST(GroupMemberTest, AnAckAtAnotherPositionTellsTheGroupThePositionWasPassed) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 300));
  EXPECT_EQ(h.triggers.back().position, 300);
  h.Apply(h.c().OnAck(1, 10, "a", TaskState{"mem://a", 1, "c"}, {}, 340));
  auto failed = h.All<MemberFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].failure, MemberFailure::kPassedPosition);
}

TEST(GroupMemberTest, NotReadyAnswersTheGroupsStartAtOnceAndSendsNothing) {
  MemberHarness h;
  ASSERT_TRUE(h.c().Pause().status.ok());
  EXPECT_EQ(h.c().GroupReadiness().second, "PAUSED");
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  EXPECT_TRUE(h.triggers.empty());
  auto failed = h.All<MemberFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].failure, MemberFailure::kAborted);
}

TEST(GroupMemberTest, ProgressWritesWaitWhileItsPartWaitsForTheGroupsCommit) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.AckAll(10);
  const size_t persisted = h.persisted.size();
  // A takeover of the stream bumps the generation, which is written, but only after the group's
  // commit: written first, the commit's older progress would overwrite it.
  auto reg = h.c().OnRegister(2, "w2", {"a", "b"}, /*takeover=*/true);
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  EXPECT_EQ(h.persisted.size(), persisted) << "written before the group's commit";
  h.Apply(h.c().OnCommitted(10));
  ASSERT_GT(h.persisted.size(), persisted);
  EXPECT_EQ(h.persisted.back().generation, h.c().Describe().generation);
  EXPECT_EQ(h.persisted.back().last_completed_id, 10);
}

// Round 10's part done and waiting for the group's commit, the member's spec changes: its
// interval, by `delta` ms. Returns the new spec; `*records` is the count of whole-record writes
// before the change.
PipelineSpec ChangeTheSpecWhileRoundTenWaits(MemberHarness& h, int64_t delta, size_t* records) {
  h.Apply(h.c().StartGroupRound(10, CheckpointKind::kCheckpoint, 0));
  h.AckAll(10);
  *records = h.persisted_records.size();
  PipelineSpec spec = h.c().spec();
  spec.interval_ms += delta;
  auto update = h.c().UpdateSpec(spec);
  EXPECT_TRUE(update.status.ok()) << update.status.ToString();
  h.Apply(update.actions);
  return spec;
}

TEST(GroupMemberTest, ASpecChangeWhileItsPartWaitsIsWrittenWhenTheRoundEnds) {
  MemberHarness h;
  size_t records = 0;
  const PipelineSpec spec = ChangeTheSpecWhileRoundTenWaits(h, 500, &records);
  // Written now, the record would carry the progress before round 10 and, behind a group commit
  // already with the store, take its completion back.
  EXPECT_EQ(h.persisted_records.size(), records) << "written before the group's commit";
  EXPECT_EQ(h.c().spec(), spec) << "in force at once";
  h.Apply(h.c().OnCommitted(10));
  ASSERT_EQ(h.persisted_records.size(), records + 1);
  EXPECT_EQ(h.persisted_records.back().spec, spec);
  EXPECT_EQ(h.persisted_records.back().last_completed_id, 10);
}

TEST(GroupMemberTest, ASpecChangeWhileItsPartWaitsIsWrittenWhenTheGroupAbortsTheRound) {
  MemberHarness h;
  size_t records = 0;
  const PipelineSpec spec = ChangeTheSpecWhileRoundTenWaits(h, 700, &records);
  EXPECT_EQ(h.persisted_records.size(), records);
  h.Apply(h.c().EndGroupRound(10, MemberOutcome::kAborted, "another member lost a task"));
  ASSERT_EQ(h.persisted_records.size(), records + 1);
  EXPECT_EQ(h.persisted_records.back().spec, spec);
  EXPECT_EQ(h.persisted_records.back().last_completed_id, 0) << "round 10 never completed";
}

TEST(GroupMemberTest, AWorkersSavepointRequestIsCheckedHereBeforeItGoesToTheGroup) {
  CoordinatorOptions options;
  options.savepoint_requests_per_minute = 1;
  Harness h(MakeSpec(), 0, options);
  h.Apply(h.c().SetGroup(Ledger()));
  h.Start();
  h.RegisterAll();
  auto targeted = h.c().AdmitGroupSavepointRequest(1, "/data/savepoints/x", false);
  EXPECT_EQ(targeted.status.code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(ActionsOf<SendSavepointRefused>(targeted.actions).size(), 1u);
  auto first = h.c().AdmitGroupSavepointRequest(1, "", true);
  EXPECT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_TRUE(ActionsOf<SendSavepointRefused>(first.actions).empty());
  h.Apply(first.actions);
  EXPECT_TRUE(h.triggers.empty()) << "the group starts the round, not the member";
  auto second = h.c().AdmitGroupSavepointRequest(1, "", false);
  EXPECT_EQ(second.status.code(), StatusCode::kResourceExhausted);
  auto refused = ActionsOf<SendSavepointRefused>(second.actions);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].reason.find("limits.savepoint_requests_per_minute (1)"), std::string::npos)
      << refused[0].reason;
  EXPECT_EQ(refused[0].limit, CountedLimit::kSavepointRequestsPerMinute);
  auto gone = h.c().AdmitGroupSavepointRequest(9, "", false);
  EXPECT_FALSE(gone.status.ok());
  EXPECT_TRUE(gone.actions.empty()) << "nobody to answer";
}

TEST(GroupMemberTest, LeavingTheGroupContinuesAboveTheGroupsIds) {
  MemberHarness h;
  h.Apply(h.c().StartGroupRound(40, CheckpointKind::kCheckpoint, 0));
  h.AckAll(40);
  h.Apply(h.c().OnCommitted(40));
  EXPECT_GE(h.c().IdFloor(), 40);
  h.Apply(h.c().SetGroup(std::nullopt, /*id_floor=*/500));
  h.RunFor(Millis(2000));
  ASSERT_FALSE(h.triggers.empty()) << "on its own again";
  EXPECT_GT(h.triggers.back().checkpoint_id, 500);
  ASSERT_FALSE(h.reserve_requests.empty());
  EXPECT_GT(h.reserve_requests.front(), 500) << "reserved above the group's ids first";
}

TEST(GroupMemberTest, ReportsTheLowestAndHighestPositionOfItsTasks) {
  MemberHarness h;
  EXPECT_FALSE(h.c().GroupPositions().all_reported);
  h.Apply(h.c().OnPositions(1, {{"a", 120}}));
  EXPECT_FALSE(h.c().GroupPositions().all_reported) << "b has not reported";
  h.Apply(h.c().OnPositions(1, {{"b", 90}}));
  const MemberPositions p = h.c().GroupPositions();
  EXPECT_TRUE(p.all_reported);
  EXPECT_EQ(p.min, 90);
  EXPECT_EQ(p.max, 120);
}

TEST(GroupMemberTest, WhySaysWhatHoldsItsGroup) {
  MemberHarness h;
  Explanation e = h.c().Explain();
  EXPECT_EQ(e.holdup, Holdup::kWaitingForGroup) << "nothing of its own holds it";
  EXPECT_EQ(e.alignment_group, "ledger");
  EXPECT_EQ(e.interval_ms, 1000) << "the group's policy";
  // The runtime adds the group's side.
  e.group_holding = {{PipelineKey{"job", "other"}, "has not acked group round 9"}};
  e.group_pending_checkpoint_id = 9;
  EXPECT_EQ(ExplainSentence(h.c().key(), e, 0),
            "waiting for alignment group ledger: job/other has not acked group round 9");
  e.group_holding.clear();
  EXPECT_EQ(ExplainSentence(h.c().key(), e, 0),
            "waiting for alignment group ledger: group round 9 is with the store");
  e.group_pending_checkpoint_id = 0;
  e.group_waiting_for_positions = true;
  EXPECT_NE(ExplainSentence(h.c().key(), e, 0).find("report positions"), std::string::npos);
  e.group_waiting_for_positions = false;
  e.next_trigger_in_ms = 800;
  EXPECT_EQ(ExplainSentence(h.c().key(), e, 0),
            "waiting for alignment group ledger: the next group round is due in 800ms");

  // Its part done, the others not: the group holds it, not a task of its own.
  h.Apply(h.c().StartGroupRound(9, CheckpointKind::kCheckpoint, 0));
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kRoundPending) << "its own tasks have not acked";
  h.AckAll(9);
  EXPECT_EQ(h.c().Explain().holdup, Holdup::kWaitingForGroup);
}

}  // namespace
}  // namespace ckpt::testing
