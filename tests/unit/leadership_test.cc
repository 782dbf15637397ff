// Leadership: who may send to workers (a leader only before its local lease deadline), and the
// clock that deadline is measured on.
#include "ha/leadership.h"

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
  leadership.lease().Set(LeaseClock::now() + hours(1));  // a deadline is not a role
  EXPECT_FALSE(leadership.MaySendToWorkers());
  EXPECT_FALSE(leadership.serving());
}

TEST(Leadership, ALeaderSendsOnlyBeforeItsLocalLeaseDeadline) {
  Leadership leadership;
  leadership.StandBy();
  leadership.BecomeLeader("a:1", 7);
  EXPECT_FALSE(leadership.MaySendToWorkers()) << "no deadline confirmed yet";
  leadership.lease().Set(LeaseClock::now() + hours(1));
  EXPECT_TRUE(leadership.MaySendToWorkers());
  leadership.lease().Set(LeaseClock::now() + milliseconds(30));
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

TEST(Leadership, ALeaderAddressNoClientCouldUseIsKeptAsNone) {
  Leadership leadership;
  leadership.StandBy();
  EXPECT_TRUE(leadership.SetLeaderSeen("a.example:7070", 4));
  EXPECT_EQ(leadership.view().leader_address, "a.example:7070");
  EXPECT_FALSE(leadership.view().leader_address_unusable);
  EXPECT_FALSE(
      leadership.SetLeaderSeen("b\xc3\xbc"
                               "cher.example:7070",
                               5));
  EXPECT_EQ(leadership.view().leader_address, "") << "never handed to a header";
  EXPECT_TRUE(leadership.view().leader_address_unusable);
  EXPECT_EQ(leadership.view().epoch, 5);
  EXPECT_TRUE(leadership.SetLeaderSeen("", 0)) << "no leader is a legal thing to see";
  EXPECT_FALSE(leadership.view().leader_address_unusable);
}

TEST(LeaseDeadline, OneRuleForSessionsAndTheStore) {
  Leadership leadership;
  EXPECT_FALSE(leadership.lease().Confirmed()) << "nothing confirmed before the first keepalive";
  leadership.lease().Set(LeaseClock::now() + hours(1));
  EXPECT_TRUE(leadership.lease().Confirmed());
  leadership.StandBy();
  EXPECT_FALSE(leadership.MaySendToWorkers()) << "a standby's lease is no leadership";
  leadership.BecomeLeader("a:1", 3);
  EXPECT_TRUE(leadership.MaySendToWorkers());
  leadership.lease().Clear();
  EXPECT_FALSE(leadership.lease().Confirmed());
  EXPECT_FALSE(leadership.MaySendToWorkers()) << "the store and the sessions stop together";
}

}  // namespace
}  // namespace ckpt
