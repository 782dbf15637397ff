#include <gtest/gtest.h>

#include "sdk/epoch_filter.h"

namespace ckpt::sdk::internal {
namespace {

TEST(SdkEpochFilter, EpochZeroIsNeverFiltered) {
  EpochFilter filter;
  EXPECT_TRUE(filter.AcceptWelcome(0));
  EXPECT_TRUE(filter.AcceptTrigger(0));
  EXPECT_TRUE(filter.AcceptOfStream());
  EXPECT_TRUE(filter.AcceptWelcome(7));
  EXPECT_TRUE(filter.AcceptTrigger(0)) << "0 is the embedded store: never a deposed leader";
  filter.OnNewStream();
  EXPECT_TRUE(filter.AcceptWelcome(0));
  EXPECT_TRUE(filter.AcceptOfStream());
  EXPECT_EQ(filter.highest_seen(), 7);
}

TEST(SdkEpochFilter, ATriggerOfALowerEpochIsDropped) {
  EpochFilter filter;
  EXPECT_TRUE(filter.AcceptWelcome(5));
  EXPECT_TRUE(filter.AcceptTrigger(5));
  EXPECT_TRUE(filter.AcceptTrigger(6));
  EXPECT_EQ(filter.highest_seen(), 6);
  EXPECT_FALSE(filter.AcceptTrigger(5));
  EXPECT_TRUE(filter.AcceptTrigger(6));
}

TEST(SdkEpochFilter, AbortAndCompleteAreJudgedByTheirStreamsWelcome) {
  EpochFilter filter;
  filter.OnNewStream();
  EXPECT_TRUE(filter.AcceptWelcome(8));
  EXPECT_TRUE(filter.AcceptOfStream());
  // A stream to the deposed leader of epoch 7: its welcome and everything on it are stale.
  filter.OnNewStream();
  EXPECT_FALSE(filter.AcceptWelcome(7));
  EXPECT_FALSE(filter.AcceptOfStream());
  EXPECT_EQ(filter.highest_seen(), 8);
  // Back at the leader of epoch 9.
  filter.OnNewStream();
  EXPECT_TRUE(filter.AcceptWelcome(9));
  EXPECT_TRUE(filter.AcceptOfStream());
  EXPECT_FALSE(filter.AcceptTrigger(8));
}

TEST(SdkEpochFilter, ANewStreamBeforeItsWelcomeIsNotStale) {
  EpochFilter filter;
  EXPECT_TRUE(filter.AcceptWelcome(4));
  filter.OnNewStream();
  EXPECT_TRUE(filter.AcceptOfStream());
}

}  // namespace
}  // namespace ckpt::sdk::internal
