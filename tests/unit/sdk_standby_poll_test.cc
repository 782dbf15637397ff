#include "sdk/standby_poll.h"

#include <gtest/gtest.h>

namespace ckpt::sdk::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kWindow{30000};
const StandbyPoll::TimePoint t0{seconds(1000)};

TEST(SdkStandbyPoll, NoStandbyAnswerKeepsTheNormalBackoff) {
  StandbyPoll poll(kWindow, /*in_group=*/false);
  EXPECT_FALSE(poll.Active(t0));
  poll.StreamEnded(/*was_welcomed=*/false, /*standby_answered=*/false, /*leader_lost=*/true, t0);
  EXPECT_FALSE(poll.Active(t0));
}

TEST(SdkStandbyPoll, AStandbyAnswerPollsForTheWindowFromTheFirstAnswerThenStops) {
  StandbyPoll poll(kWindow, /*in_group=*/false);
  poll.StreamEnded(false, true, true, t0);
  EXPECT_TRUE(poll.Active(t0));
  // Later answers of standbys do not extend it: a group without a leader is not polled forever.
  poll.StreamEnded(false, true, true, t0 + seconds(20));
  EXPECT_TRUE(poll.Active(t0 + seconds(29)));
  poll.StreamEnded(false, true, true, t0 + seconds(29));
  EXPECT_FALSE(poll.Active(t0 + kWindow));
  EXPECT_FALSE(poll.Active(t0 + seconds(600)));
}

TEST(SdkStandbyPoll, AWelcomeStartsItOver) {
  StandbyPoll poll(kWindow, /*in_group=*/false);
  poll.StreamEnded(false, true, true, t0);
  EXPECT_FALSE(poll.Active(t0 + seconds(40)));
  // A leader welcomed the worker; that stream ended, and a standby answers the next attempt.
  poll.StreamEnded(/*was_welcomed=*/true, /*standby_answered=*/false, /*leader_lost=*/true,
                   t0 + seconds(50));
  EXPECT_FALSE(poll.Active(t0 + seconds(50)));
  poll.StreamEnded(false, true, true, t0 + seconds(60));
  EXPECT_TRUE(poll.Active(t0 + seconds(61)));
  // The welcomed stream itself ended by a standby's answer (the leader was deposed).
  poll.StreamEnded(true, true, true, t0 + seconds(200));
  EXPECT_TRUE(poll.Active(t0 + seconds(201)));
  EXPECT_FALSE(poll.Active(t0 + seconds(231)));
}

TEST(SdkStandbyPoll, AWelcomedStreamLostInAGroupPollsWithoutAStandbyAnswer) {
  // The leader died; the standby's answer never came (this worker's channel to it still failed
  // fast from the standby's own restart): a takeover is due all the same.
  StandbyPoll poll(kWindow, /*in_group=*/true);
  poll.StreamEnded(/*was_welcomed=*/false, /*standby_answered=*/false, /*leader_lost=*/true, t0);
  EXPECT_FALSE(poll.Active(t0)) << "never welcomed: nothing was lost";
  poll.StreamEnded(/*was_welcomed=*/true, /*standby_answered=*/false, /*leader_lost=*/true,
                   t0 + seconds(10));
  EXPECT_TRUE(poll.Active(t0 + seconds(10)));
  // Failures to connect and standby answers after it do not extend the window.
  poll.StreamEnded(false, false, true, t0 + seconds(20));
  poll.StreamEnded(false, true, true, t0 + seconds(30));
  EXPECT_TRUE(poll.Active(t0 + seconds(39)));
  EXPECT_FALSE(poll.Active(t0 + seconds(40)));
}

TEST(SdkStandbyPoll, AWelcomedStreamLostByAWorkerOfOneDaemonKeepsTheNormalBackoff) {
  StandbyPoll poll(kWindow, /*in_group=*/false);
  poll.StreamEnded(/*was_welcomed=*/true, /*standby_answered=*/false, /*leader_lost=*/true, t0);
  EXPECT_FALSE(poll.Active(t0));
}

TEST(SdkStandbyPoll, AStreamEndedOtherwiseOrSoonAfterItsWelcomeIsNoLostLeader) {
  // Its lease expired, our previous stream was still seen, or a leader dropped it right after its
  // welcome (again and again): the caller says no leader was lost, and the normal backoff holds.
  StandbyPoll poll(kWindow, /*in_group=*/true);
  for (int s = 0; s < 5; ++s) {
    poll.StreamEnded(/*was_welcomed=*/true, /*standby_answered=*/false, /*leader_lost=*/false,
                     t0 + seconds(s));
    EXPECT_FALSE(poll.Active(t0 + seconds(s)));
  }
}

}  // namespace
}  // namespace ckpt::sdk::internal
