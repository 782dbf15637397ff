// GroupCoordinator: every rule of a group round (docs/ALIGNMENT.md), with a clock moved by hand.
// One class's rules over one fixture (GroupTest: members, a hand-moved clock, the actions it reads
// back), in the order docs/ALIGNMENT.md gives them; split by rule, that fixture would move to a
// header for files of a few tests each.
#include "core/group_coordinator.h"
#include "core/start_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/spec_validation.h"

namespace ckpt {
namespace {

class HandClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override { return now_; }
  int64_t WallMs() const override {
    return 1'700'000'000'000 + std::chrono::duration_cast<Millis>(now_.time_since_epoch()).count();
  }
  void Advance(Millis by) { now_ += by; }

 private:
  SteadyTime now_{Millis(1'000'000)};
};

template <typename T>
std::vector<T> Of(const GroupActions& actions) {
  std::vector<T> found;
  for (const auto& a : actions) {
    if (auto* t = std::get_if<T>(&a)) found.push_back(*t);
  }
  return found;
}

const PipelineKey kA{"etl", "a"};
const PipelineKey kB{"etl", "b"};
const PipelineKey kC{"billing", "c"};

CheckpointCommit CommitOf(const PipelineKey& key, int64_t id) {
  CheckpointCommit c;
  c.key = key;
  c.checkpoint.checkpoint_id = id;
  return c;
}

class GroupTest : public ::testing::Test {
 protected:
  void Make(AlignmentGroupSpec spec = {}, GroupProgress progress = {}, GroupOptions options = {}) {
    if (spec.name.empty()) spec.name = "g";
    spec.interval_ms = spec.interval_ms == 10000 ? 1000 : spec.interval_ms;
    spec.timeout_ms = spec.timeout_ms == 600000 ? 5000 : spec.timeout_ms;
    group_.emplace(spec, progress, clock_, options);
    Run(group_->Start());
  }

  // Adds the members and reports each ready.
  void Join(std::vector<PipelineKey> members, int64_t member_counter = 0) {
    for (const auto& m : members) Run(group_->AddMember(m, member_counter));
    for (const auto& m : members) Run(group_->OnMemberState(m, true, ""));
  }

  // Records what the group asked for; answers id reservations at once (unless told not to).
  void Run(GroupActions actions) {
    for (auto& a : actions) {
      if (auto* r = std::get_if<ReserveGroupIds>(&a); r && reserve_at_once_) {
        auto more = group_->OnIdsReserved(r->new_counter);
        Run(std::move(more));
      }
      log_.push_back(a);
    }
  }
  // The actions recorded since the last call.
  GroupActions Take() {
    GroupActions taken;
    taken.swap(log_);
    return taken;
  }
  // The id of the newest round started among the recorded actions (0: none).
  int64_t Started() const {
    auto starts = Of<StartMemberRound>(log_);
    return starts.empty() ? 0 : starts.back().checkpoint_id;
  }
  // Every member in `members` is done with round `id`, and its commit is durable.
  void CompleteRound(int64_t id, std::initializer_list<PipelineKey> members) {
    for (const auto& m : members) Run(group_->OnMemberDone(m, id, CommitOf(m, id)));
    Run(group_->OnCommitted(id));
  }
  // Moves time on by one interval, wakes the group, and returns the id it started (0: none).
  int64_t NextRound() {
    clock_.Advance(Millis(1000));
    Run(group_->OnWakeup());
    return Started();
  }

  HandClock clock_;
  std::optional<GroupCoordinator> group_;
  GroupActions log_;
  bool reserve_at_once_ = true;
};

TEST_F(GroupTest, UnderAdmissionCapsARoundAsksAsOneUnitCountingItsMembers) {
  GroupOptions options;
  options.admission = std::make_shared<RoundAdmission>(AdmissionCaps{10, 0});
  Make({}, {}, options);
  for (const auto& m : {kA, kB, kC}) Run(group_->AddMember(m, 0));
  Run(group_->OnMemberState(kA, true, "", 100));
  Run(group_->OnMemberState(kB, true, "", 20));
  Run(group_->OnMemberState(kC, true, "", 0));
  auto asks = Of<AskAdmission>(Take());
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].request.rounds, 3);
  EXPECT_EQ(asks[0].request.bytes, 120);
  EXPECT_EQ(Started(), 0) << "no round before it is admitted";
  EXPECT_TRUE(group_->Explain().waiting_for_admission);

  // A member that stops being ready takes the group out of the line.
  Run(group_->OnMemberState(kB, false, "PAUSED"));
  EXPECT_EQ(Of<LeaveAdmission>(Take()).size(), 1u);
  Run(group_->OnAdmitted());  // a late answer to the ask it left
  EXPECT_EQ(Started(), 0);
  Run(group_->OnMemberState(kB, true, "", 20));
  ASSERT_EQ(Of<AskAdmission>(Take()).size(), 1u);

  Run(group_->OnAdmitted());
  const int64_t id = Started();
  ASSERT_GT(id, 0);
  EXPECT_TRUE(Of<LeaveAdmission>(log_).empty()) << "held while the round flies";
  CompleteRound(id, {kA, kB, kC});
  auto after = Take();
  EXPECT_EQ(Of<LeaveAdmission>(after).size(), 1u) << "left when the round ended";

  // A member's TriggerCheckpoint goes now or is refused with the cap's name.
  clock_.Advance(Millis(1000));
  auto refused = group_->RequestRound(
      CheckpointKind::kCheckpoint, nullptr, Millis(1000), [](const AdmissionRequest&) {
        return Status::ResourceExhausted("admission.max_concurrent_rounds 10 is full");
      });
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Of<StartMemberRound>(refused.actions).empty());
}

TEST_F(GroupTest, OneIdForAllAndCompleteOnlyOnceTheCommitOfAllIsDurable) {
  Make();
  Join({kA, kB, kC});
  const int64_t id = Started();  // the first round: as soon as every member is ready
  ASSERT_GT(id, 0);
  auto starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 3u);
  for (const auto& s : starts) EXPECT_EQ(s.checkpoint_id, id);

  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnMemberDone(kB, id, CommitOf(kB, id)));
  EXPECT_TRUE(Of<CommitGroupRound>(log_).empty()) << "not before every member is done";
  Run(group_->OnMemberDone(kC, id, CommitOf(kC, id)));
  EXPECT_TRUE(Of<MemberRoundDurable>(log_).empty()) << "nobody hears before it is durable";
  auto commits = Of<CommitGroupRound>(Take());
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(commits[0].members.size(), 3u) << "one commit for all members";
  EXPECT_EQ(commits[0].progress_after.last_round_id, id);
  // A failure now changes nothing: the commit is with the store.
  Run(group_->OnMemberFailed(kA, id, MemberFailure::kTaskLost, "stream ended"));
  EXPECT_TRUE(Of<AbortMemberRound>(Take()).empty());

  Run(group_->OnCommitted(id));
  auto durable = Of<MemberRoundDurable>(log_);
  ASSERT_EQ(durable.size(), 3u);
  auto finished = Of<GroupRoundFinished>(Take());
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].result, GroupRoundResult::kCompleted);
  EXPECT_EQ(group_->progress().last_round_id, id);
  EXPECT_EQ(NextRound(), id + 1);
}

TEST_F(GroupTest, WithACommitPhaseTheGroupCommitsAsOneAndHoldsRoundsUntilThen) {
  AlignmentGroupSpec spec;
  spec.commit_timeout_ms = 30000;
  Make(spec);
  Join({kA, kB, kC});
  const int64_t id = Started();
  Take();
  CompleteRound(id, {kA, kB, kC});
  Take();
  EXPECT_EQ(group_->CommittingRoundId(), id);
  EXPECT_EQ(NextRound(), 0) << "no round while the last one is COMMITTING";
  const GroupExplanation e = group_->Explain();
  EXPECT_EQ(e.committing_checkpoint_id, id);
  EXPECT_EQ(e.holding.size(), 3u);

  Run(group_->OnMemberCommitted(kA, id));
  Run(group_->OnMemberCommitted(kB, id));
  Run(group_->OnMemberCommitted(kB, id));  // again: nothing more
  EXPECT_TRUE(Of<MarkMemberCommitted>(Take()).empty()) << "not before every member committed";
  Run(group_->OnMemberCommitted(kC, id));
  auto marks = Of<MarkMemberCommitted>(Take());
  ASSERT_EQ(marks.size(), 3u) << "every member is told at once";
  std::set<PipelineKey> told;
  for (const auto& m : marks) {
    EXPECT_EQ(m.checkpoint_id, id);
    told.insert(m.member);
  }
  EXPECT_EQ(told, (std::set<PipelineKey>{kA, kB, kC}));
  EXPECT_EQ(group_->CommittingRoundId(), 0);
  // The members report ready once their marks are durable; then rounds go on.
  for (const auto& m : {kA, kB, kC}) Run(group_->OnMemberState(m, true, ""));
  EXPECT_EQ(NextRound(), id + 1);
}

TEST_F(GroupTest, AMemberLeavingOrARoundTheGroupDoesNotTrackIsMarkedAlone) {
  AlignmentGroupSpec spec;
  spec.commit_timeout_ms = 30000;
  Make(spec);
  Join({kA, kB});
  const int64_t id = Started();
  CompleteRound(id, {kA, kB});
  Take();
  Run(group_->OnMemberCommitted(kA, id));
  EXPECT_TRUE(Of<MarkMemberCommitted>(Take()).empty());
  // B leaves while COMMITTING: A no longer waits for it.
  Run(group_->RemoveMember(kB, "deleted"));
  auto marks = Of<MarkMemberCommitted>(Take());
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].member, kA);
  // A round the group does not hold COMMITTING (after a restart): the member marks alone.
  Run(group_->OnMemberCommitted(kA, id - 1));
  marks = Of<MarkMemberCommitted>(Take());
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].checkpoint_id, id - 1);
}

TEST_F(GroupTest, ADeclineFailsTheRoundForItsMemberAndAbortsItForTheOthers) {
  Make();
  Join({kA, kB, kC});
  const int64_t id = Started();
  Take();
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnMemberFailed(kB, id, MemberFailure::kDeclined, "task 3 declined: disk full"));
  auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 3u) << "every member of the round hears it, the done one too";
  for (const auto& a : aborts) {
    EXPECT_EQ(a.outcome, a.member == kB ? MemberOutcome::kFailed : MemberOutcome::kAborted)
        << a.member.ToString();
    EXPECT_NE(a.reason.find("disk full"), std::string::npos);
  }
  auto finished = Of<GroupRoundFinished>(Take());
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].result, GroupRoundResult::kFailed);
  // A late ack of the aborted round is ignored.
  EXPECT_TRUE(group_->OnMemberDone(kC, id, CommitOf(kC, id)).empty());
  EXPECT_FALSE(group_->HasPendingRound());
}

TEST_F(GroupTest, ALostTaskAbortsTheRoundForEveryoneAndCountsForNobody) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Take();
  Run(group_->OnMemberFailed(kA, id, MemberFailure::kTaskLost, "task 0 lost its stream"));
  const auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 2u);
  for (const auto& a : aborts) EXPECT_EQ(a.outcome, MemberOutcome::kAborted);
  const auto finished = Of<GroupRoundFinished>(Take());
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].result, GroupRoundResult::kAborted);
  // The member that lost a task is not ready until it says so: no round with it meanwhile.
  EXPECT_EQ(NextRound(), 0);
  EXPECT_EQ(group_->Explain().holding.at(0).first, kA);
  Run(group_->OnMemberState(kA, true, ""));
  EXPECT_EQ(Started(), id + 1);
}

TEST_F(GroupTest, AtTheDeadlineTheLateMembersExpireAndTheOthersAreAborted) {
  Make();
  Join({kA, kB, kC});
  const int64_t id = Started();
  auto deadlines = Of<ArmGroupDeadline>(Take());
  ASSERT_EQ(deadlines.size(), 1u);
  EXPECT_EQ(deadlines[0].at, clock_.SteadyNow() + Millis(5000));
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  EXPECT_TRUE(group_->OnDeadline(id - 1).empty()) << "a stale deadline";
  Run(group_->OnDeadline(id));
  const auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 3u);
  for (const auto& a : aborts) {
    EXPECT_EQ(a.outcome, a.member == kA ? MemberOutcome::kAborted : MemberOutcome::kExpired);
  }
  const auto finished = Of<GroupRoundFinished>(Take());
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].result, GroupRoundResult::kExpired);
  EXPECT_NE(finished[0].reason.find("etl/b"), std::string::npos) << finished[0].reason;
  EXPECT_NE(finished[0].reason.find("billing/c"), std::string::npos);
}

TEST_F(GroupTest, AMemberNotReadyHoldsTheGroupAndIsNamed) {
  Make();
  Run(group_->AddMember(kA, 0));
  Run(group_->AddMember(kB, 0));
  Run(group_->OnMemberState(kA, true, ""));
  EXPECT_EQ(group_->Explain().holding.at(0).second, "has not reported yet");
  Run(group_->OnMemberState(kB, false, "task 2 has no worker"));
  EXPECT_EQ(Started(), 0);
  EXPECT_EQ(NextRound(), 0) << "held";
  GroupExplanation e = group_->Explain();
  ASSERT_EQ(e.holding.size(), 1u);
  EXPECT_EQ(e.holding[0].first, kB);
  EXPECT_EQ(e.holding[0].second, "task 2 has no worker");
  EXPECT_EQ(e.next_trigger_in_ms, -1);
  Run(group_->OnMemberState(kB, true, ""));
  EXPECT_EQ(Of<StartMemberRound>(Take()).size(), 2u) << "overdue: starts as soon as it is ready";
}

TEST_F(GroupTest, ThePendingRoundNamesTheMembersItWaitsFor) {
  Make();
  Join({kA, kB, kC});
  const int64_t id = Started();
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  GroupExplanation e = group_->Explain();
  EXPECT_EQ(e.pending_checkpoint_id, id);
  ASSERT_EQ(e.holding.size(), 2u);
  EXPECT_EQ(e.holding[0].first, kC);  // by key: billing/c, then etl/b
  EXPECT_EQ(e.holding[1].first, kB);
}

TEST_F(GroupTest, TheIdsGoAboveEveryIdAnyMemberUsedAndAboveTheStoredCounter) {
  Make({}, GroupProgress{/*id_counter=*/200, /*last_round_id=*/150, 0, 0});
  Run(group_->AddMember(kA, 120));
  Run(group_->AddMember(kB, 480));
  Run(group_->OnMemberState(kA, true, ""));
  Run(group_->OnMemberState(kB, true, ""));
  EXPECT_EQ(Started(), 481);
  auto reserves = Of<ReserveGroupIds>(Take());
  ASSERT_FALSE(reserves.empty());
  EXPECT_GE(reserves.back().new_counter, 481) << "reserved durably before it was used";
  GroupCoordinator restarted(AlignmentGroupSpec{"g"}, GroupProgress{200, 150, 0, 0}, clock_);
  restarted.AddMember(kA, 0);
  GroupActions out = restarted.OnMemberState(kA, true, "");
  ASSERT_EQ(Of<ReserveGroupIds>(out).size(), 1u) << "the first round needs ids above 200";
  EXPECT_TRUE(Of<StartMemberRound>(out).empty());
  EXPECT_EQ(restarted.RequestRound(CheckpointKind::kCheckpoint).status.code(),
            StatusCode::kUnavailable)
      << "an operator's round cannot start before the ids are durable either";
  out = restarted.OnIdsReserved(Of<ReserveGroupIds>(out)[0].new_counter);
  ASSERT_EQ(Of<StartMemberRound>(out).size(), 1u);
  EXPECT_EQ(Of<StartMemberRound>(out)[0].checkpoint_id, 201)
      << "ids up to the stored counter may have been handed out before the restart";
}

TEST_F(GroupTest, NoIdAboveTheBoundIsHandedOutOrReserved) {
  Make();
  Take();                                            // the start's first block
  Run(group_->AddMember(kA, kMaxCheckpointId - 1));  // a member whose own ids reached the bound
  Run(group_->OnMemberState(kA, true, ""));
  GroupActions out = Take();
  EXPECT_EQ(Started(), 0) << "no round with an id its members' histories could not hold";
  EXPECT_TRUE(Of<ReserveGroupIds>(out).empty());
  auto logs = Of<Log>(out);
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs.back().level, LogLevel::kError);
  EXPECT_NE(logs.back().text.find("exhausted"), std::string::npos) << logs.back().text;
}

TEST_F(GroupTest, TheFirstRoundWaitsForItsIdsAndLaterOnesFindThemReserved) {
  reserve_at_once_ = false;
  GroupOptions options;
  options.id_block = 4;
  group_.emplace(AlignmentGroupSpec{"g", 1000, 5000, 0, 0}, GroupProgress{}, clock_, options);
  auto reserves = Of<ReserveGroupIds>(group_->Start());
  ASSERT_EQ(reserves.size(), 1u) << "at the start, before any round";
  Join({kA});
  EXPECT_EQ(Started(), 0);
  EXPECT_TRUE(group_->Explain().waiting_for_ids);
  Run(group_->OnIdsReserved(reserves[0].new_counter));
  int64_t id = Started();
  ASSERT_EQ(id, 1);
  for (int round = 0; round < 6; ++round) {
    Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
    Run(group_->OnCommitted(id));
    // The store answers every reservation before the next round is due.
    for (const auto& r : Of<ReserveGroupIds>(Take())) Run(group_->OnIdsReserved(r.new_counter));
    Take();
    const int64_t next = NextRound();
    ASSERT_EQ(next, id + 1) << "round " << round << " waited for its id";
    id = next;
  }
}

TEST_F(GroupTest, BothGatesTheIntervalAndThePositions) {
  Make(AlignmentGroupSpec{"g", 1000, 5000, 0, /*position_interval=*/100});
  Join({kA, kB});
  Take();
  EXPECT_EQ(NextRound(), 0) << "no positions yet";
  EXPECT_TRUE(group_->Explain().waiting_for_positions);
  EXPECT_EQ(group_->Explain().without_positions.size(), 2u);
  Run(group_->OnMemberPositions(kA, {120, 180, true}));
  Run(group_->OnMemberPositions(kB, {90, 250, true}));
  EXPECT_TRUE(Of<StartMemberRound>(Take()).empty()) << "b's lowest task is not 100 past 0 yet";
  Run(group_->OnMemberPositions(kB, {130, 250, true}));
  auto starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 2u);
  // The smallest multiple of 100 strictly above every reported position.
  EXPECT_EQ(starts[0].position, 300);
  EXPECT_EQ(starts[1].position, 300);
  const int64_t id = starts[0].checkpoint_id;
  CompleteRound(id, {kA, kB});
  EXPECT_EQ(group_->progress().last_position, 300);
  Take();
  // Positions far enough already: the interval still holds the next round back.
  Run(group_->OnMemberPositions(kA, {420, 450, true}));
  Run(group_->OnMemberPositions(kB, {400, 400, true}));
  EXPECT_TRUE(Of<StartMemberRound>(log_).empty());
  EXPECT_FALSE(Of<ArmGroupWakeup>(Take()).empty());
  clock_.Advance(Millis(1000));
  Run(group_->OnWakeup());
  starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].position, 500) << "strictly above 450";
}

TEST_F(GroupTest, APassedPositionMovesTheNextRoundOneIntervalFurtherOnce) {
  Make(AlignmentGroupSpec{"g", 1000, 5000, 0, 100});
  Join({kA});
  Run(group_->OnMemberPositions(kA, {150, 150, true}));
  auto starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].position, 200);
  Run(group_->OnMemberFailed(kA, starts[0].checkpoint_id, MemberFailure::kPassedPosition,
                             "task 0 was at 230"));
  EXPECT_EQ(Of<AbortMemberRound>(log_)[0].outcome, MemberOutcome::kFailed) << "a decline";
  Take();
  Run(group_->OnMemberPositions(kA, {230, 230, true}));
  clock_.Advance(Millis(1000));
  Run(group_->OnWakeup());
  starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].position, 400) << "300, and one more interval after the passed round";
  const int64_t id = starts[0].checkpoint_id;
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnCommitted(id));
  Take();
  Run(group_->OnMemberPositions(kA, {510, 510, true}));
  clock_.Advance(Millis(1000));
  Run(group_->OnWakeup());
  starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].position, 600) << "not cumulative: back to the plain rule";
}

TEST_F(GroupTest, AMemberAddedDuringARoundJoinsTheNextOne) {
  Make();
  Join({kA});
  const int64_t id = Started();
  Take();
  Join({kB});
  EXPECT_TRUE(Of<StartMemberRound>(Take()).empty());
  EXPECT_TRUE(group_->OnMemberDone(kB, id, CommitOf(kB, id)).empty()) << "not in this round";
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  auto commits = Of<CommitGroupRound>(Take());
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(commits[0].members.size(), 1u);
  Run(group_->OnCommitted(id));
  EXPECT_EQ(Of<MemberRoundDurable>(Take()).size(), 1u);
  EXPECT_EQ(NextRound(), id + 1);
  EXPECT_EQ(Of<StartMemberRound>(Take()).size(), 2u);
}

TEST_F(GroupTest, AMemberLeavingAbortsThePendingRound) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Take();
  Run(group_->RemoveMember(kB, "deleted"));
  auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 2u);
  for (const auto& a : aborts) EXPECT_EQ(a.outcome, MemberOutcome::kAborted);
  EXPECT_EQ(group_->Members(), std::vector<PipelineKey>{kA});
  Take();
  EXPECT_EQ(NextRound(), id + 1);
  EXPECT_EQ(Of<StartMemberRound>(Take()).size(), 1u);
}

TEST_F(GroupTest, AFailedCommitFailsTheRoundForEveryoneAsTheStores) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnMemberDone(kB, id, CommitOf(kB, id)));
  Take();
  Run(group_->OnCommitFailed(id, Status::Unavailable("disk full")));
  auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 2u);
  for (const auto& a : aborts) EXPECT_EQ(a.outcome, MemberOutcome::kStoreFailed);
  EXPECT_TRUE(Of<MemberRoundDurable>(Take()).empty());
}

TEST_F(GroupTest, ASavepointWaitsForThePendingRoundAndThenSkipsTheInterval) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Take();
  auto checkpoint = group_->RequestRound(CheckpointKind::kCheckpoint);
  EXPECT_EQ(checkpoint.status.code(), StatusCode::kFailedPrecondition);
  auto savepoint = group_->RequestRound(CheckpointKind::kSavepoint);
  ASSERT_TRUE(savepoint.status.ok());
  EXPECT_TRUE(Of<StartMemberRound>(savepoint.actions).empty()) << "queued";
  EXPECT_EQ(group_->RequestRound(CheckpointKind::kSavepoint).status.code(),
            StatusCode::kFailedPrecondition)
      << "one at a time";
  CompleteRound(id, {kA, kB});
  auto starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 2u) << "at once, not an interval later";
  EXPECT_EQ(starts[0].kind, CheckpointKind::kSavepoint);
  EXPECT_EQ(starts[0].checkpoint_id, id + 1);
}

// A member at its savepoint cap declines the group's savepoint (GroupMemberTest.AGroupSavepoint
// IsRefusedForAllByAMemberAtItsSavepointCap): the savepoint fails for all, and the member, still
// ready, is in the next round.
TEST_F(GroupTest, AMemberThatRefusesASavepointFailsItAndTheGroupGoesOn) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  CompleteRound(id, {kA, kB});
  Take();
  auto savepoint = group_->RequestRound(CheckpointKind::kSavepoint);
  ASSERT_TRUE(savepoint.status.ok());
  Run(std::move(savepoint.actions));
  const int64_t refused = Started();
  ASSERT_EQ(refused, id + 1);
  Take();
  Run(group_->OnMemberFailed(kB, refused, MemberFailure::kDeclined,
                             "savepoint refused: limits.max_savepoints_per_pipeline (1) reached"));
  auto finished = Of<GroupRoundFinished>(Take());
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].result, GroupRoundResult::kFailed);
  EXPECT_EQ(NextRound(), refused + 1) << "no member waits to be ready again";
}

TEST_F(GroupTest, MinPauseCountsFromTheEndOfTheLastRound) {
  Make(AlignmentGroupSpec{"g", 1000, 5000, /*min_pause_ms=*/800, 0});
  Join({kA});
  const int64_t id = Started();
  clock_.Advance(Millis(900));  // the round took 900 ms
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnCommitted(id));
  auto wakeups = Of<ArmGroupWakeup>(Take());
  ASSERT_FALSE(wakeups.empty());
  EXPECT_EQ(wakeups.back().at, clock_.SteadyNow() + Millis(800))
      << "800 ms after the end, later than 1 s after the trigger";
}

TEST_F(GroupTest, AnOperatorRoundStartsAtOnceWithAPositionByTheSameRule) {
  Make(AlignmentGroupSpec{"g", 60000, 5000, 0, 100});
  Join({kA});
  Run(group_->OnMemberPositions(kA, {10, 42, true}));  // the gate is closed: 10 < 100
  Take();
  int64_t id = 0;
  auto outcome = group_->RequestRound(CheckpointKind::kCheckpoint, &id);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
  auto starts = Of<StartMemberRound>(outcome.actions);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].checkpoint_id, id);
  EXPECT_EQ(starts[0].position, 100);
  EXPECT_EQ(group_->RequestRound(CheckpointKind::kCheckpoint).status.code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(GroupTest, AnExpiryATaskReportsCountsForItsMemberOnly) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Take();
  EXPECT_TRUE(group_->OnMemberFailed(kA, id - 1, MemberFailure::kDeclined, "old").empty())
      << "a failure of an earlier round";
  Run(group_->OnMemberDone(kB, id, CommitOf(kB, id)));
  EXPECT_TRUE(group_->OnMemberFailed(kB, id, MemberFailure::kTaskLost, "after it was done").empty())
      << "a member that is done has every ack it needs";
  Run(group_->OnMemberFailed(kA, id, MemberFailure::kExpired, "task 1 expired"));
  const auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 2u);
  for (const auto& a : aborts) {
    EXPECT_EQ(a.outcome, a.member == kA ? MemberOutcome::kExpired : MemberOutcome::kAborted);
  }
  EXPECT_EQ(Of<GroupRoundFinished>(Take()).at(0).result, GroupRoundResult::kExpired);
}

TEST_F(GroupTest, ALeavingMemberIsInNoRoundStartedAfterIt) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  ASSERT_TRUE(group_->RequestRound(CheckpointKind::kSavepoint).status.ok());
  Take();
  Run(group_->RemoveMember(kB, "deleted"));
  const auto aborts = Of<AbortMemberRound>(log_);
  ASSERT_EQ(aborts.size(), 2u) << "both members of the pending round hear it";
  auto starts = Of<StartMemberRound>(Take());
  ASSERT_EQ(starts.size(), 1u) << "the queued savepoint starts at once, without the leaver";
  EXPECT_EQ(starts[0].member, kA);
  EXPECT_EQ(starts[0].checkpoint_id, id + 1);
  EXPECT_EQ(starts[0].kind, CheckpointKind::kSavepoint);
}

TEST_F(GroupTest, AMemberLeavingWhileTheCommitIsInFlightStaysInThatCommit) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnMemberDone(kB, id, CommitOf(kB, id)));
  Take();
  Run(group_->RemoveMember(kB, "deleted"));
  EXPECT_TRUE(Of<AbortMemberRound>(log_).empty()) << "the commit is with the store";
  EXPECT_EQ(group_->Members(), std::vector<PipelineKey>{kA});
  Take();
  Run(group_->OnCommitted(id));
  EXPECT_EQ(Of<MemberRoundDurable>(Take()).size(), 2u);
  EXPECT_EQ(NextRound(), id + 1);
  EXPECT_EQ(Of<StartMemberRound>(Take()).size(), 1u);
}

TEST_F(GroupTest, AFailedReservationIsTriedAgainAtTheNextWakeup) {
  reserve_at_once_ = false;
  group_.emplace(AlignmentGroupSpec{"g", 1000, 5000, 0, 0}, GroupProgress{}, clock_);
  ASSERT_EQ(Of<ReserveGroupIds>(group_->Start()).size(), 1u);
  Join({kA});
  Take();
  Run(group_->OnIdsReserveFailed(Status::Unavailable("disk full")));
  EXPECT_EQ(group_->RequestRound(CheckpointKind::kCheckpoint).status.code(),
            StatusCode::kUnavailable);
  auto wakeups = Of<ArmGroupWakeup>(Take());
  ASSERT_EQ(wakeups.size(), 1u);
  clock_.Advance(Millis(1000));
  auto reserves = Of<ReserveGroupIds>(group_->OnWakeup());
  ASSERT_EQ(reserves.size(), 1u) << "asked again";
  Run(group_->OnIdsReserved(reserves[0].new_counter));
  EXPECT_EQ(Started(), 1);
}

TEST_F(GroupTest, AQueuedSavepointWaitsForEveryMemberOrItsTimeout) {
  Make();
  Run(group_->AddMember(kA, 0));
  Run(group_->AddMember(kB, 0));
  Run(group_->OnMemberState(kA, true, ""));
  Run(group_->OnMemberState(kB, false, "paused by an operator"));
  auto queued = group_->RequestRound(CheckpointKind::kSavepoint, nullptr, Millis(3000));
  ASSERT_TRUE(queued.status.ok());
  auto wakeups = Of<ArmGroupWakeup>(queued.actions);
  ASSERT_EQ(wakeups.size(), 1u);
  EXPECT_EQ(wakeups[0].at, clock_.SteadyNow() + Millis(3000)) << "woken at its timeout";
  clock_.Advance(Millis(3000));
  Run(group_->OnWakeup());
  const auto dropped = Of<GroupSavepointDropped>(Take());
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].reason.find("etl/b: paused by an operator"), std::string::npos)
      << dropped[0].reason;
  // Asked again, it starts as soon as the member is ready.
  ASSERT_TRUE(group_->RequestRound(CheckpointKind::kSavepointAndStop).status.ok());
  Run(group_->OnMemberState(kB, true, ""));
  const auto started = Of<GroupRoundStarted>(Take());
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].kind, CheckpointKind::kSavepointAndStop);
  EXPECT_TRUE(group_->CancelQueuedSavepoint().empty()) << "nothing queued any more";
}

// The group's wakeup for the next round comes before the savepoint's timeout, while a member
// still holds the group: that wakeup arms the timeout, or the savepoint would wait for as long as
// the member does.
TEST_F(GroupTest, AQueuedSavepointIsDroppedAtItsTimeoutAfterAnEarlierWakeup) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  CompleteRound(id, {kA, kB});  // the next round's wakeup: one interval (1 s) from now
  Run(group_->OnMemberState(kB, false, "paused by an operator"));
  Take();
  auto queued = group_->RequestRound(CheckpointKind::kSavepoint, nullptr, Millis(3000));
  ASSERT_TRUE(queued.status.ok());
  EXPECT_TRUE(Of<ArmGroupWakeup>(queued.actions).empty()) << "the earlier wakeup comes first";
  clock_.Advance(Millis(1000));
  const auto wakeups = Of<ArmGroupWakeup>(group_->OnWakeup());
  ASSERT_EQ(wakeups.size(), 1u) << "still held: the savepoint's timeout is armed";
  EXPECT_EQ(wakeups[0].at, clock_.SteadyNow() + Millis(2000));
  clock_.Advance(Millis(2000));
  EXPECT_EQ(Of<GroupSavepointDropped>(group_->OnWakeup()).size(), 1u);
}

TEST_F(GroupTest, ASavepointSkipsThePositionGateButTakesAPosition) {
  Make(AlignmentGroupSpec{"g", 1000, 5000, 0, 100});
  Join({kA});
  Run(group_->OnMemberPositions(kA, {40, 70, true}));
  Take();
  auto outcome = group_->RequestRound(CheckpointKind::kSavepoint);
  ASSERT_TRUE(outcome.status.ok());
  const auto starts = Of<StartMemberRound>(outcome.actions);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].position, 100);
}

TEST_F(GroupTest, AMemberJoiningLaterWithHigherIdsLiftsTheNextId) {
  Make();
  Join({kA});
  const int64_t id = Started();
  Run(group_->OnMemberDone(kA, id, CommitOf(kA, id)));
  Run(group_->OnCommitted(id));
  Run(group_->AddMember(kB, 7000));
  Run(group_->OnMemberState(kB, true, ""));
  EXPECT_EQ(NextRound(), 7001);
  EXPECT_EQ(group_->Explain().holding.size(), 2u) << "both members are in the round";
}

TEST_F(GroupTest, AfterARestartTheScheduleContinuesFromTheLastRound) {
  // The last round completed 300 ms ago (wall clock): the next is due 700 ms from now.
  Make(AlignmentGroupSpec{}, GroupProgress{100, 42, 0, clock_.WallMs() - 300});
  Join({kA});
  EXPECT_EQ(Started(), 0);
  const auto wakeups = Of<ArmGroupWakeup>(Take());
  ASSERT_FALSE(wakeups.empty());
  EXPECT_EQ(wakeups.back().at, clock_.SteadyNow() + Millis(700));
}

TEST_F(GroupTest, ReportsDoNotArmTheSameWakeupAgain) {
  Make();
  Join({kA, kB});
  const int64_t id = Started();
  CompleteRound(id, {kA, kB});
  Take();
  for (int i = 0; i < 10; ++i) Run(group_->OnMemberPositions(kA, {i, i, true}));
  Run(group_->OnMemberState(kB, true, ""));
  EXPECT_TRUE(Of<ArmGroupWakeup>(Take()).empty()) << "armed once, when the round ended";
}

TEST_F(GroupTest, TasksThatNeverReportPositionsAreNamedOnceAMinute) {
  Make(AlignmentGroupSpec{"g", 1000, 5000, 0, 100});
  Join({kA, kB});
  Run(group_->OnMemberPositions(kA, {100, 100, true}));
  auto warnings = Of<Log>(Take());
  auto named = std::count_if(warnings.begin(), warnings.end(), [](const Log& l) {
    return l.level == LogLevel::kWarn && l.text.find("etl/b") != std::string::npos;
  });
  EXPECT_EQ(named, 1) << "b has reported nothing";
  for (int i = 0; i < 5; ++i) Run(group_->OnMemberPositions(kA, {100 + i, 100 + i, true}));
  EXPECT_TRUE(Of<Log>(Take()).empty()) << "not again within the minute";
  clock_.Advance(Millis(60000));
  Run(group_->OnWakeup());
  EXPECT_EQ(Of<Log>(Take()).size(), 1u);
}

// The start offset (core/start_spread.h): a group overdue when its members become all ready waits
// its slot's fraction of the interval, as a pipeline does; one not yet due keeps its schedule.
class GroupStartSpreadTest : public GroupTest {
 protected:
  void MakeSpread(GroupProgress progress = {}) {
    GroupOptions options;
    options.start_spread = std::nullopt;  // the whole interval
    options.start_slot = 1;               // 618 ms of 1 s
    group_.emplace(AlignmentGroupSpec{"g", 1000, 5000, 0, 0}, progress, clock_, options);
    Run(group_->Start());
  }
  // Moves time on by `by` and wakes the group.
  void Wake(Millis by) {
    clock_.Advance(by);
    Run(group_->OnWakeup());
  }
};

TEST_F(GroupStartSpreadTest, AnOverdueGroupWaitsItsOffsetOnceItsMembersAreReady) {
  MakeSpread();
  ASSERT_EQ(StartOffset(StartSlotFraction(1), std::nullopt, 1000),
            std::chrono::microseconds(618'033));
  Join({kA, kB});
  EXPECT_EQ(Started(), 0) << "never triggered, so overdue: it waits its offset";
  Wake(Millis(618));
  EXPECT_EQ(Started(), 0);
  Wake(Millis(1));
  const int64_t first = Started();
  EXPECT_GT(first, 0) << "at its offset";
  // The interval counts from that round as always.
  CompleteRound(first, {kA, kB});
  Take();
  Wake(Millis(999));
  EXPECT_EQ(Started(), 0);
  Wake(Millis(1));
  EXPECT_GT(Started(), first);
}

TEST_F(GroupStartSpreadTest, AGroupNotYetDueAfterARestartKeepsItsSchedule) {
  GroupProgress progress;
  progress.last_completed_at_ms = clock_.WallMs() - 900;  // due in 100 ms
  progress.last_round_id = 5;
  progress.id_counter = 5;
  MakeSpread(progress);
  Join({kA, kB});
  EXPECT_EQ(Started(), 0);
  Wake(Millis(100));
  EXPECT_GT(Started(), 0) << "its own schedule, not the 618 ms offset";
}

TEST_F(GroupStartSpreadTest, ASavepointDoesNotWaitForTheOffset) {
  MakeSpread();
  Join({kA, kB});
  ASSERT_EQ(Started(), 0);
  int64_t id = 0;
  auto asked = group_->RequestRound(CheckpointKind::kSavepoint, &id, Millis(10000));
  ASSERT_TRUE(asked.status.ok()) << asked.status.ToString();
  Run(std::move(asked.actions));
  EXPECT_GT(Started(), 0);
  EXPECT_EQ(Started(), id);
}

}  // namespace
}  // namespace ckpt
