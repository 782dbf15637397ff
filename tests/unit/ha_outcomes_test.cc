// The HA outcome table (ha/etcd_outcomes.h): one test per row, and how etcd's answers are
// classified into the rows. What each action does is tested where it is done (the etcd store's
// tests against a real etcd, the e2e HA tests).
#include "ha/etcd_outcomes.h"

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "ha/takeover.h"

namespace ckpt {
namespace {

TEST(HaOutcomeTable, AnAppliedWriteIsAnswered) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kApplied), HaAction::kAnswer);
  EXPECT_EQ(ExitCodeOf(ActionFor(EtcdOutcome::kApplied)), 0);
}

TEST(HaOutcomeTable, ARequestRefusedForItsShapeFailsOnlyItsRounds) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kRequestRefused), HaAction::kFailRequest);
  EXPECT_EQ(ExitCodeOf(HaAction::kFailRequest), 0);
}

TEST(HaOutcomeTable, ARefusalForSpaceOrRateIsAStoreNotWritableNotAnExit) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kRefused), HaAction::kFailNotWritable);
  EXPECT_EQ(ExitCodeOf(HaAction::kFailNotWritable), 0);
}

TEST(HaOutcomeTable, AWriteNeverSentFailsAsNotWritable) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kNotSent), HaAction::kFailNotWritable);
}

TEST(HaOutcomeTable, AnUnknownOutcomeIsResolvedByReading) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kUnknown), HaAction::kResolveByReading);
  EXPECT_EQ(ExitCodeOf(HaAction::kResolveByReading), 0);
}

TEST(HaOutcomeTable, AnOutcomeStillUnknownExits75) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kStillUnknown), HaAction::kExitUnknownOutcome);
  EXPECT_EQ(ExitCodeOf(HaAction::kExitUnknownOutcome), kExitUnknownOutcome);
}

TEST(HaOutcomeTable, ALostLeadershipExits75) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kFencedOut), HaAction::kExitUnknownOutcome);
}

TEST(HaOutcomeTable, AFailedTakeoverExits75) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kTakeoverFailed), HaAction::kExitUnknownOutcome);
}

TEST(HaOutcomeTable, EtcdRefusingTheConfigurationExits78) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kMisconfigured), HaAction::kExitConfig);
  EXPECT_EQ(ExitCodeOf(HaAction::kExitConfig), kExitConfig);
}

TEST(HaOutcomeTable, AnUnreadableRecordIsQuarantinedNotFatal) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kUnreadableRecord), HaAction::kQuarantine);
  EXPECT_EQ(ExitCodeOf(HaAction::kQuarantine), 0);
}

TEST(HaOutcomeTable, ADamagedStoreExits65) {
  EXPECT_EQ(ActionFor(EtcdOutcome::kDamagedStore), HaAction::kExitDataLoss);
  EXPECT_EQ(ExitCodeOf(HaAction::kExitDataLoss), kExitDataLoss);
}

TEST(HaOutcomeTable, EveryOutcomeHasItsOwnRowInWords) {
  for (int o = static_cast<int>(EtcdOutcome::kApplied);
       o <= static_cast<int>(EtcdOutcome::kDamagedStore); ++o) {
    const auto outcome = static_cast<EtcdOutcome>(o);
    EXPECT_EQ(RuleFor(outcome).outcome, outcome) << "outcome " << o << " has no row";
    EXPECT_NE(std::string(RuleFor(outcome).what), "") << "outcome " << o;
  }
}

TEST(ClassifyEtcdFailure, SpaceAndRateAreRefusalsOfTheStoreNotUnknownOutcomes) {
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kResourceExhausted,
                                       "etcd x: txn: etcdserver: mvcc: database space exceeded")),
            EtcdOutcome::kRefused);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kResourceExhausted,
                                       "etcd x: txn: etcdserver: too many requests")),
            EtcdOutcome::kRefused);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kPermissionDenied, "permission denied")),
            EtcdOutcome::kRefused);
}

TEST(ClassifyEtcdFailure, ARequestTooLargeIsThatRequestsOwn) {
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kResourceExhausted,
                                       "etcd x: txn: Received message larger than max (2097 vs. "
                                       "1024)")),
            EtcdOutcome::kRequestRefused);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kInvalidArgument,
                                       "etcd x: txn: etcdserver: request is too large")),
            EtcdOutcome::kRequestRefused);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kInvalidArgument,
                                       "etcdserver: too many operations in txn request")),
            EtcdOutcome::kRequestRefused);
}

TEST(ClassifyEtcdFailure, WhatMayHaveLandedIsUnknownAndWhatWasNotSentIsNot) {
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kDeadlineExceeded, "deadline")),
            EtcdOutcome::kUnknown);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kUnavailable, "connection reset")),
            EtcdOutcome::kUnknown);
  EXPECT_EQ(ClassifyEtcdFailure(Status(StatusCode::kUnavailable, "no channel"), /*sent=*/false),
            EtcdOutcome::kNotSent);
  EXPECT_EQ(ClassifyEtcdFailure(Status::Ok()), EtcdOutcome::kApplied);
}

TEST(NotWritable, IsUnavailableSoThatStoreHealthProbes) {
  const Status s = NotWritable(Status(StatusCode::kResourceExhausted, "database space exceeded"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("store not writable"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("database space exceeded"), std::string::npos) << s.message();
}

TEST(TakeoverOutcome, DamagedDataIs65AMisconfigurationInTheCheck78AnythingElse75) {
  EXPECT_EQ(TakeoverOutcome(Status::DataLoss("layout 9"), false), EtcdOutcome::kDamagedStore);
  EXPECT_EQ(TakeoverOutcome(Status::FailedPrecondition("max_txn_ops"), true),
            EtcdOutcome::kMisconfigured);
  EXPECT_EQ(TakeoverOutcome(Status::FailedPrecondition("other"), false),
            EtcdOutcome::kTakeoverFailed);
  EXPECT_EQ(TakeoverOutcome(Status::Unavailable("etcd"), true), EtcdOutcome::kTakeoverFailed);
}

TEST(RunTakeover, RunsTheStepsInOrderAndServesLast) {
  std::string order;
  TakeoverSteps steps;
  steps.fence = [&] { order += "fence "; };
  steps.check = [&] {
    order += "check ";
    return Status::Ok();
  };
  steps.load = [&] {
    order += "load ";
    return Status::Ok();
  };
  steps.serve = [&] { order += "serve"; };
  RunTakeover(steps);
  EXPECT_EQ(order, "fence check load serve");
}

TEST(RunTakeoverDeathTest, AFailedStepExitsByTheTableAndNeverServes) {
  auto steps_failing = [](Status check, Status load) {
    TakeoverSteps steps;
    steps.fence = [] {};
    steps.check = [check] { return check; };
    steps.load = [load] { return load; };
    steps.serve = [] { std::_Exit(0); };  // serving would exit 0: the test would see it
    return steps;
  };
  EXPECT_EXIT(RunTakeover(steps_failing(Status::Ok(), Status::DataLoss("layout 9"))),
              ::testing::ExitedWithCode(kExitDataLoss), "");
  EXPECT_EXIT(RunTakeover(steps_failing(Status::FailedPrecondition("max_txn_ops"), Status::Ok())),
              ::testing::ExitedWithCode(kExitConfig), "");
  EXPECT_EXIT(RunTakeover(steps_failing(Status::Ok(), Status::Unavailable("etcd"))),
              ::testing::ExitedWithCode(kExitUnknownOutcome), "");
}

}  // namespace
}  // namespace ckpt
