// PositionTracking: the gate's threshold one interval past the last checkpoint's position, since
// when the gate is open, the next round's position and its one-interval step after a passed
// position, and the cadence of the warning about tasks that never reported.
#include "core/position_tracking.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace ckpt {
namespace {

using std::chrono::seconds;

const SteadyTime kTrackingStart = SteadyTime{} + std::chrono::hours(1);
const std::vector<std::string> kTwoTasks = {"a", "b"};

TEST(PositionTracking, TheGateOpensOneIntervalPastTheBaseAndNotesWhen) {
  const TaskIdSet tasks(kTwoTasks.begin(), kTwoTasks.end());
  PositionTracking positions(kTrackingStart + seconds(60));
  EXPECT_FALSE(positions.Sync(tasks, /*base=*/1000, /*interval=*/100));  // nobody reported
  EXPECT_EQ(positions.gate().threshold(), 1100);
  EXPECT_FALSE(positions.Open(tasks.size()));
  EXPECT_TRUE(positions.Report("a", 1100));
  EXPECT_FALSE(positions.Report("a", 1050));  // not higher: nothing changed
  EXPECT_FALSE(positions.Report("b", -1));    // out of range: refused
  EXPECT_FALSE(positions.Open(tasks.size()));
  EXPECT_TRUE(positions.Report("b", 1200));
  EXPECT_TRUE(positions.Open(tasks.size()));
  positions.NoteOpened(kTrackingStart + seconds(5));
  // A trigger due before the gate opened is late only from when it opened.
  EXPECT_EQ(positions.DueOnceOpen(kTrackingStart + seconds(2)), kTrackingStart + seconds(5));
  EXPECT_EQ(positions.DueOnceOpen(kTrackingStart + seconds(9)), kTrackingStart + seconds(9));
  // A task forgotten (its stream ended) closes it again.
  positions.Forget("b");
  EXPECT_FALSE(positions.Open(tasks.size()));
  // Sync says when it opened the gate itself: not when it was open already, not when it closes
  // it, not when reports opened it.
  EXPECT_TRUE(positions.Report("b", 1200));
  EXPECT_TRUE(positions.Open(tasks.size()));
  EXPECT_FALSE(positions.Sync(tasks, /*base=*/1000, 100));  // open before and after
  EXPECT_FALSE(positions.Sync(tasks, /*base=*/1100, 100));  // threshold 1200: a at 1100
  EXPECT_FALSE(positions.Open(tasks.size()));
  EXPECT_TRUE(positions.Report("a", 1250));
  EXPECT_TRUE(positions.Open(tasks.size()));                // opened by a report
  EXPECT_FALSE(positions.Sync(tasks, /*base=*/1200, 100));  // threshold 1300: closed again
  EXPECT_TRUE(positions.Sync(tasks, /*base=*/1100, 100));   // 1200 again: Sync opened it
  EXPECT_TRUE(positions.Open(tasks.size()));
}

TEST(PositionTracking, TheThresholdSaturatesAndAChangedTaskSetForgetsTheOthers) {
  const TaskIdSet tasks(kTwoTasks.begin(), kTwoTasks.end());
  PositionTracking positions(kTrackingStart);
  positions.Sync(tasks, kMaxPosition - 5, 100);
  EXPECT_EQ(positions.gate().threshold(), kMaxPosition);
  positions.Report("a", 7);
  positions.Report("b", 9);
  const std::vector<std::string> only_b = {"b"};
  const TaskIdSet smaller(only_b.begin(), only_b.end());
  positions.Sync(smaller, 0, 5);
  EXPECT_EQ(positions.gate().reported(), 1u);
  EXPECT_EQ(positions.gate().PositionOf("a"), std::nullopt);
  EXPECT_TRUE(positions.Open(smaller.size()));  // b at 9 >= 5
}

TEST(PositionTracking, TheNextRoundIsTheNextMultipleAboveAllAndStepsOnceAfterAPassedPosition) {
  const TaskIdSet tasks(kTwoTasks.begin(), kTwoTasks.end());
  PositionTracking positions(kTrackingStart);
  positions.Sync(tasks, 0, 100);
  EXPECT_EQ(positions.NextRoundPosition(/*base=*/0, 100), 100);
  positions.Report("a", 250);
  EXPECT_EQ(positions.NextRoundPosition(0, 100), 300);
  EXPECT_EQ(positions.NextRoundPosition(/*base=*/400, 100), 500);  // the last checkpoint's
  // A task already past the round's position: the next round steps one interval further, once.
  positions.NotePassed(/*position=*/350, /*round_position=*/300);
  EXPECT_EQ(positions.NextRoundPosition(0, 100), 400);
  EXPECT_EQ(positions.NextRoundPosition(0, 100), 300);
  // Not past it, or a round without a position: no step.
  positions.NotePassed(300, 300);
  positions.NotePassed(900, 0);
  EXPECT_FALSE(positions.TakeStep());
  positions.NotePassed(301, 300);
  EXPECT_TRUE(positions.TakeStep());  // a member's: the group applies it
  EXPECT_FALSE(positions.TakeStep());
}

TEST(PositionTracking, TheWarningAboutSilentTasksComesAtMostOncePerInterval) {
  PositionTracking positions(kTrackingStart + seconds(60));
  EXPECT_EQ(positions.next_warn_at(), kTrackingStart + seconds(60));
  EXPECT_FALSE(positions.TakeWarnDue(kTrackingStart + seconds(59), seconds(60)));
  EXPECT_TRUE(positions.TakeWarnDue(kTrackingStart + seconds(60), seconds(60)));
  EXPECT_EQ(positions.next_warn_at(), kTrackingStart + seconds(120));
  EXPECT_FALSE(positions.TakeWarnDue(kTrackingStart + seconds(61), seconds(60)));
}

}  // namespace
}  // namespace ckpt
