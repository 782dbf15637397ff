// A pipeline under the daemon's admission caps (docs/PROTOCOL.md, "Admission"): a round ready to
// trigger asks first and goes only once admitted; the admission is left when the round ends or
// when the pipeline stops wanting one; a savepoint asks in the savepoints' line; TriggerCheckpoint
// goes now or is refused naming the cap; `pipeline why` says it waits in line. Every step is also
// held to the invariant model (support/coordinator_invariants.h), which checks that no round
// triggers unadmitted and that no admission is held without a round.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

CoordinatorOptions WithAdmission(const RoundAdmission& admission) {
  CoordinatorOptions options;
  options.admission = &admission;
  return options;
}

class CoordinatorAdmissionTest : public ::testing::Test {
 protected:
  RoundAdmission admission_{AdmissionCaps{1, 0}};  // the coordinator only reads that a cap is set
  Harness h_{MakeSpec(), 0, WithAdmission(admission_)};
};

TEST_F(CoordinatorAdmissionTest, ARoundReadyToTriggerAsksAndGoesOnlyOnceAdmitted) {
  h_.Start();
  h_.RegisterAll();
  h_.RunFor(Millis(0));
  ASSERT_EQ(h_.asks.size(), 1u);
  EXPECT_EQ(h_.asks[0].request.line, AdmissionClass::kPeriodic);
  EXPECT_EQ(h_.asks[0].request.rounds, 1);
  EXPECT_EQ(h_.asks[0].request.bytes, 0);  // nothing completed yet
  EXPECT_TRUE(h_.triggers.empty());
  h_.RunFor(Millis(5000));  // no timer drives it meanwhile, and it asks only once
  EXPECT_TRUE(h_.triggers.empty());
  EXPECT_EQ(h_.asks.size(), 1u);
  EXPECT_EQ(h_.c().Explain().holdup, Holdup::kWaitingForAdmission);

  h_.Apply(h_.c().OnAdmitted());
  ASSERT_EQ(h_.triggers.size(), 1u);
  EXPECT_EQ(h_.leaves, 0);
  // The wait in line is not the scheduler's lateness: counted as held by the other rounds.
  ASSERT_EQ(h_.delays.size(), 1u);
  EXPECT_EQ(h_.delays[0], std::chrono::microseconds(0));
  EXPECT_GE(h_.holds[0], Millis(5000));
  h_.AckAll(h_.LastTriggerId());  // durable at once (auto_commit)
  EXPECT_EQ(h_.completes.size(), 1u);
  EXPECT_EQ(h_.leaves, 1);  // the round ended: its place goes

  // The next round asks with the last completed size: two tasks of 1 byte each.
  h_.RunFor(Millis(1000));
  ASSERT_EQ(h_.asks.size(), 2u);
  EXPECT_EQ(h_.asks[1].request.bytes, 2);
  EXPECT_EQ(h_.triggers.size(), 1u);
}

TEST_F(CoordinatorAdmissionTest, APipelineThatStopsBeingReadyLeavesTheLine) {
  h_.Start();
  h_.RegisterAll();
  h_.RunFor(Millis(0));
  ASSERT_EQ(h_.asks.size(), 1u);
  h_.Apply(h_.c().OnSessionEnded(1, "lost"));
  EXPECT_EQ(h_.leaves, 1);
  // A late answer to the ask it left is ignored.
  h_.Apply(h_.c().OnAdmitted());
  EXPECT_TRUE(h_.triggers.empty());

  h_.RegisterAll(2);
  h_.RunFor(Millis(0));
  ASSERT_EQ(h_.asks.size(), 2u);
  auto paused = h_.c().Pause();
  h_.Apply(paused.actions);
  EXPECT_EQ(h_.leaves, 2);
}

TEST_F(CoordinatorAdmissionTest, ASavepointMovesAheadToTheSavepointsLine) {
  h_.Start();
  h_.RegisterAll();
  h_.RunFor(Millis(0));
  ASSERT_EQ(h_.asks.size(), 1u);
  auto o = h_.c().RequestSavepoint("", false, Millis(60000));
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  h_.Apply(o.actions);
  h_.RunFor(Millis(0));
  ASSERT_EQ(h_.asks.size(), 2u);
  EXPECT_EQ(h_.asks[1].request.line, AdmissionClass::kSavepoint);
  EXPECT_TRUE(h_.triggers.empty());
  h_.Apply(h_.c().OnAdmitted());
  ASSERT_EQ(h_.triggers.size(), 1u);
  EXPECT_EQ(h_.triggers[0].kind, CheckpointKind::kSavepoint);
}

TEST_F(CoordinatorAdmissionTest, TriggerCheckpointGoesNowOrIsRefusedNamingTheCap) {
  h_.Start();
  h_.RegisterAll();
  h_.c().Pause();  // no periodic round asks meanwhile
  h_.Apply(h_.c().Resume().actions);
  int64_t id = 0;
  auto refused = h_.c().TriggerCheckpoint(&id, [](const AdmissionRequest&) {
    return Status::ResourceExhausted("admission.max_concurrent_rounds 1 is full (1 rounds)");
  });
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status.message().find("admission.max_concurrent_rounds"), std::string::npos);
  h_.Apply(refused.actions);
  EXPECT_TRUE(h_.triggers.empty());

  int admitted_now = 0;
  auto went = h_.c().TriggerCheckpoint(&id, [&](const AdmissionRequest& request) {
    ++admitted_now;
    EXPECT_EQ(request.rounds, 1);
    return Status::Ok();
  });
  ASSERT_TRUE(went.status.ok()) << went.status.ToString();
  h_.Apply(went.actions);
  EXPECT_EQ(admitted_now, 1);
  ASSERT_EQ(h_.triggers.size(), 1u);
  const int leaves_before = h_.leaves;
  h_.AckAll(id);
  EXPECT_EQ(h_.leaves, leaves_before + 1);
}

TEST(CoordinatorAdmissionOffTest, WithoutACapNoRoundAsks) {
  RoundAdmission admission{AdmissionCaps{}};
  Harness h(MakeSpec(), 0, WithAdmission(admission));
  h.StartToFirstTrigger();
  EXPECT_EQ(h.triggers.size(), 1u);
  EXPECT_TRUE(h.asks.empty());
}

}  // namespace
}  // namespace ckpt::testing
