#include "core/task_owners.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ckpt {
namespace {

TEST(TaskOwners, HoldsReleasesAndRemembersWhatRegistered) {
  TaskOwners owners;
  EXPECT_EQ(owners.at(0), TaskOwners::kNobody);
  EXPECT_FALSE(owners.ever(0));
  owners.Hold(1, 3, 7);
  EXPECT_EQ(owners.at(1), 7u);
  EXPECT_EQ(owners.at(0), TaskOwners::kNobody);
  EXPECT_EQ(owners.held(), 1u);
  owners.Hold(1, 3, 8);  // taken over: still one held
  EXPECT_EQ(owners.at(1), 8u);
  EXPECT_EQ(owners.held(), 1u);
  owners.Release(1);
  EXPECT_EQ(owners.at(1), TaskOwners::kNobody);
  EXPECT_TRUE(owners.ever(1)) << "a released task has still registered once";
  EXPECT_EQ(owners.held(), 0u);
  owners.Release(1);  // twice: no underflow
  EXPECT_EQ(owners.held(), 0u);
  EXPECT_EQ(owners.at(3), TaskOwners::kNobody) << "an index past the set (an unknown task)";
  owners.Hold(3, 3, 9);  // ignored: not a task of the set
  EXPECT_EQ(owners.held(), 0u);
  EXPECT_EQ(owners.ever_count(), 1u);
}

TEST(TaskOwners, ARemapKeepsTheTasksThatStayAndNamesTheHoldersOfThoseThatLeft) {
  TaskOwners owners;
  owners.Hold(0, 3, 1);  // a -> 1
  owners.Hold(1, 3, 2);  // b -> 2
  owners.Release(1);     // b registered once, nobody holds it
  owners.Hold(2, 3, 3);  // c -> 3
  // {a, b, c} -> {b, c, d}: a leaves, b and c move down one place.
  const size_t moved[] = {3, 0, 1};
  auto left = owners.Remap(3, [&](size_t i) { return moved[i]; });
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].first, 1u) << "the holder of a";
  EXPECT_EQ(left[0].second, 0u) << "a's old index";
  EXPECT_EQ(owners.at(0), TaskOwners::kNobody);
  EXPECT_TRUE(owners.ever(0)) << "b's mark moved with it";
  EXPECT_EQ(owners.at(1), 3u);
  EXPECT_TRUE(owners.ever(1)) << "c's mark moved with its holder";
  EXPECT_EQ(owners.at(2), TaskOwners::kNobody);
  EXPECT_FALSE(owners.ever(2)) << "d never registered";
  EXPECT_EQ(owners.held(), 1u);
  owners.ReleaseAll();
  EXPECT_TRUE(owners.empty());
  EXPECT_EQ(owners.ever_count(), 2u);
}

TEST(TaskOwners, NothingHeldRemapsToNothingAndReservedIdsAreNotHeld) {
  TaskOwners owners;
  EXPECT_TRUE(owners.Remap(5, [](size_t i) { return i; }).empty());
  EXPECT_EQ(owners.ever_count(), 0u);
  EXPECT_FALSE(TaskOwners::Holdable(TaskOwners::kNobody));
  EXPECT_FALSE(TaskOwners::Holdable(SessionId{1} << 63));
  owners.Hold(0, 2, TaskOwners::kNobody);
  owners.Hold(0, 2, SessionId{1} << 63);
  EXPECT_EQ(owners.held(), 0u);
  EXPECT_EQ(owners.ever_count(), 0u);
}

}  // namespace
}  // namespace ckpt
