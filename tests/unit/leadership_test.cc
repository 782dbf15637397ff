// Leadership: who may send to workers (a leader only before its local lease deadline), and the
// clock that deadline is measured on.
#include "runtime/leadership.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/lease_clock.h"

namespace ckpt {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

TEST(Leadership, TheEmbeddedStoreAlwaysSendsAStandbyNever) {
  Leadership leadership;
  EXPECT_EQ(leadership.role(), Leadership::Role::kSingle);
  EXPECT_TRUE(leadership.MaySendToWorkers());
  leadership.StandBy();
  leadership.ExtendSendDeadline(LeaseClock::now() + hours(1));  // a deadline is not a role
  EXPECT_FALSE(leadership.MaySendToWorkers());
  EXPECT_FALSE(leadership.serving());
}

TEST(Leadership, ALeaderSendsOnlyBeforeItsLocalLeaseDeadline) {
  Leadership leadership;
  leadership.StandBy();
  leadership.BecomeLeader("a:1", 7);
  EXPECT_FALSE(leadership.MaySendToWorkers()) << "no deadline confirmed yet";
  leadership.ExtendSendDeadline(LeaseClock::now() + hours(1));
  EXPECT_TRUE(leadership.MaySendToWorkers());
  leadership.ExtendSendDeadline(LeaseClock::now() + milliseconds(30));
  EXPECT_TRUE(leadership.MaySendToWorkers());
  std::this_thread::sleep_for(milliseconds(60));  // past it: the point of the test
  EXPECT_FALSE(leadership.MaySendToWorkers());
  EXPECT_EQ(leadership.view().epoch, 7);
  EXPECT_EQ(leadership.view().leader_address, "a:1");
}

TEST(LeaseClock, CountsAtLeastWhatTheMonotonicClockCounts) {
  // CLOCK_BOOTTIME is CLOCK_MONOTONIC plus the time the machine was suspended: never behind it,
  // and never going back.
  for (int i = 0; i < 1000; ++i) {
    const auto monotonic = std::chrono::steady_clock::now().time_since_epoch();
    const auto first = LeaseClock::now();
    const auto second = LeaseClock::now();
    ASSERT_GE(first.time_since_epoch(), monotonic);
    ASSERT_GE(second, first);
  }
}

}  // namespace
}  // namespace ckpt
