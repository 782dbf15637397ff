// RestorePins: a checkpoint stays pinned while any holder holds a pin on it, counted per holder;
// the last removal says so; a pipeline's pins held by others are what keep it from being deleted.
#include "core/restore_pins.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

const PipelineKey kSource{"job", "source"};
const PipelineKey kHolder{"job", "holder"};
const PipelineKey kOther{"job", "other"};

TEST(RestorePins, ACheckpointIsPinnedUntilItsLastPinGoes) {
  RestorePins pins;
  EXPECT_FALSE(pins.IsPinned(kSource, 5));
  pins.Add({kSource, 5}, kHolder);
  pins.Add({kSource, 5}, kOther);
  EXPECT_TRUE(pins.IsPinned(kSource, 5));
  EXPECT_FALSE(pins.IsPinned(kSource, 6));
  EXPECT_FALSE(pins.IsPinned(kHolder, 5));           // by source, not by holder
  EXPECT_FALSE(pins.Remove({kSource, 5}, kHolder));  // another holder still pins it
  EXPECT_TRUE(pins.IsPinned(kSource, 5));
  EXPECT_TRUE(pins.Remove({kSource, 5}, kOther));  // the last pin
  EXPECT_FALSE(pins.IsPinned(kSource, 5));
}

TEST(RestorePins, AHolderPinningTwiceMustLetGoTwice) {
  RestorePins pins;
  pins.Add({kSource, 5}, kHolder);
  pins.Add({kSource, 5}, kHolder);  // restored twice to it, the first pin not yet let go
  EXPECT_FALSE(pins.Remove({kSource, 5}, kHolder));
  EXPECT_TRUE(pins.IsPinned(kSource, 5));
  EXPECT_TRUE(pins.Remove({kSource, 5}, kHolder));
  // Removing what is not there changes nothing and is not a last removal.
  EXPECT_FALSE(pins.Remove({kSource, 5}, kHolder));
  EXPECT_FALSE(pins.Remove({kOther, 1}, kHolder));
}

TEST(RestorePins, PinnedIdsAreAscendingAndOnlyOthersPinsKeepAPipeline) {
  RestorePins pins;
  pins.Add({kSource, 9}, kSource);  // its own restore point
  pins.Add({kSource, 3}, kHolder);
  pins.Add({kSource, 7}, kOther);
  EXPECT_EQ(pins.PinnedIds(kSource), (std::vector<int64_t>{3, 7, 9}));
  EXPECT_TRUE(pins.PinnedIds(kHolder).empty());
  const auto held = pins.HeldByOthers(kSource);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0], (std::pair<int64_t, PipelineKey>{3, kHolder}));
  EXPECT_EQ(held[1], (std::pair<int64_t, PipelineKey>{7, kOther}));
  pins.Remove({kSource, 3}, kHolder);
  pins.Remove({kSource, 7}, kOther);
  EXPECT_TRUE(pins.HeldByOthers(kSource).empty());  // its own pin alone does not hold it
  EXPECT_EQ(pins.PinnedIds(kSource), (std::vector<int64_t>{9}));
}

}  // namespace
}  // namespace ckpt
