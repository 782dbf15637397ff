#include <gtest/gtest.h>

#include "sdk/backoff.h"
#include "sdk/retry_policy.h"

namespace ckpt::sdk::internal {
namespace {

using std::chrono::milliseconds;

constexpr BackoffPolicy kPolicy{milliseconds(100), milliseconds(5000)};

TEST(SdkBackoff, DoublesFromInitialUpToMax) {
  // unit_random = 1 (just below) gives the top of the jitter range: the undelayed value.
  EXPECT_EQ(BackoffDelay(kPolicy, 1, 0.999999).count(), 99);
  EXPECT_EQ(BackoffDelay(kPolicy, 1, 1.0), milliseconds(100));
  EXPECT_EQ(BackoffDelay(kPolicy, 2, 1.0), milliseconds(200));
  EXPECT_EQ(BackoffDelay(kPolicy, 3, 1.0), milliseconds(400));
  EXPECT_EQ(BackoffDelay(kPolicy, 6, 1.0), milliseconds(3200));
  EXPECT_EQ(BackoffDelay(kPolicy, 7, 1.0), milliseconds(5000));
  EXPECT_EQ(BackoffDelay(kPolicy, 1000, 1.0), milliseconds(5000));
}

TEST(SdkBackoff, JitterKeepsAtLeastHalf) {
  EXPECT_EQ(BackoffDelay(kPolicy, 1, 0.0), milliseconds(50));
  EXPECT_EQ(BackoffDelay(kPolicy, 3, 0.0), milliseconds(200));
  EXPECT_EQ(BackoffDelay(kPolicy, 3, 0.5), milliseconds(300));
  EXPECT_EQ(BackoffDelay(kPolicy, 50, 0.0), milliseconds(2500));
  // Out-of-range randomness is clamped, never a negative or oversized delay.
  EXPECT_EQ(BackoffDelay(kPolicy, 1, -3.0), milliseconds(50));
  EXPECT_EQ(BackoffDelay(kPolicy, 1, 7.0), milliseconds(100));
}

TEST(SdkBackoff, SanitizeMakesAnyPolicyUsable) {
  BackoffPolicy policy = Sanitize({milliseconds(0), milliseconds(-5)});
  EXPECT_EQ(policy.initial, milliseconds(1));
  EXPECT_EQ(policy.max, milliseconds(1));
  policy = Sanitize({milliseconds(300), milliseconds(100)});
  EXPECT_EQ(policy.initial, milliseconds(300));
  EXPECT_EQ(policy.max, milliseconds(300));
}

TEST(SdkBackoff, SequenceGrowsWithinBoundsAndResets) {
  Backoff backoff(kPolicy, 42);
  int64_t ceiling = 100;
  for (int retry = 1; retry <= 12; ++retry) {
    const milliseconds delay = backoff.Next();
    EXPECT_GE(delay.count(), ceiling / 2) << retry;
    EXPECT_LE(delay.count(), ceiling) << retry;
    ceiling = std::min<int64_t>(ceiling * 2, 5000);
  }
  EXPECT_EQ(backoff.retries(), 12);
  backoff.Reset();
  EXPECT_EQ(backoff.retries(), 0);
  EXPECT_LE(backoff.Next().count(), 100);
}

TEST(SdkBackoff, AtMaxStaysAtTheCeilingWithoutGrowing) {
  Backoff backoff(kPolicy, 7);
  for (int i = 0; i < 20; ++i) {
    const milliseconds delay = backoff.AtMax();
    EXPECT_GE(delay.count(), 2500);
    EXPECT_LE(delay.count(), 5000);
  }
  EXPECT_EQ(backoff.retries(), 0);
}

TEST(SdkBackoff, SameSeedSameDelays) {
  Backoff a(kPolicy, 99), b(kPolicy, 99);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(SdkRetryPolicy, GivesUpOnlyWhereRetryingCannotHelp) {
  for (StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kPermissionDenied, StatusCode::kUnauthenticated,
        StatusCode::kUnimplemented, StatusCode::kAborted}) {
    EXPECT_EQ(ClassifyStreamEnd(code), StreamEndAction::kGiveUp) << ToString(code);
  }
  EXPECT_EQ(ClassifyStreamEnd(StatusCode::kNotFound), StreamEndAction::kRetrySlowly);
  // An UNREADABLE pipeline's hello: only an operator clears it (docs/PROTOCOL.md).
  EXPECT_EQ(ClassifyStreamEnd(StatusCode::kFailedPrecondition), StreamEndAction::kRetrySlowly);
  for (StatusCode code : {StatusCode::kOk, StatusCode::kUnavailable, StatusCode::kDeadlineExceeded,
                          StatusCode::kAlreadyExists, StatusCode::kCancelled, StatusCode::kInternal,
                          StatusCode::kResourceExhausted, StatusCode::kUnknown}) {
    EXPECT_EQ(ClassifyStreamEnd(code), StreamEndAction::kRetry) << ToString(code);
  }
}

TEST(SdkRetryPolicy, AStreamEndedByARestoreComesBackButATakeoverDoesNot) {
  EXPECT_EQ(ClassifyStreamEnd(StatusCode::kAborted, "restored to checkpoint etl/p0@42"),
            StreamEndAction::kRetry);
  EXPECT_EQ(ClassifyStreamEnd(StatusCode::kAborted, "tasks taken over by worker w2"),
            StreamEndAction::kGiveUp);
  EXPECT_EQ(ClassifyStreamEnd(StatusCode::kAborted, "worker said: restored to checkpoint 1"),
            StreamEndAction::kGiveUp)
      << "only a message that starts so";
}

}  // namespace
}  // namespace ckpt::sdk::internal
