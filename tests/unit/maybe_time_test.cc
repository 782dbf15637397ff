#include "core/maybe_time.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

TEST(MaybeTime, StartsEmptyAndHoldsWhatIsAssigned) {
  MaybeTime t;
  EXPECT_FALSE(t.has_value());
  EXPECT_FALSE(static_cast<bool>(t));
  const SteadyTime at = SteadyTime{} + std::chrono::seconds(5);
  t = at;
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, at);
  t.reset();
  EXPECT_FALSE(t.has_value());
  EXPECT_EQ(t.value_or(at), at);
}

TEST(MaybeTime, TheClocksEpochIsATimeNotNone) {
  // A test clock may start at the epoch: that is a value, unlike std::nullopt.
  const MaybeTime epoch = SteadyTime{};
  ASSERT_TRUE(epoch.has_value());
  EXPECT_EQ(*epoch, SteadyTime{});
  EXPECT_FALSE(epoch == MaybeTime{});
}

TEST(MaybeTime, ConvertsToAndFromOptionalLosingNothing) {
  const std::optional<SteadyTime> none;
  const std::optional<SteadyTime> some = SteadyTime{} + std::chrono::milliseconds(7);
  EXPECT_EQ(static_cast<std::optional<SteadyTime>>(MaybeTime(none)), none);
  EXPECT_EQ(static_cast<std::optional<SteadyTime>>(MaybeTime(some)), some);
  EXPECT_TRUE(MaybeTime(some) == MaybeTime(*some));
  EXPECT_TRUE(MaybeTime(std::nullopt) == MaybeTime(none));
}

}  // namespace
}  // namespace ckpt
