// IdReservation: ids handed out only once durable, a block asked for at half a block left, one
// request at a time, a retry after a failure, and no overflow near the largest id.
#include "core/id_reservation.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/spec_validation.h"

namespace ckpt {
namespace {

constexpr int64_t kBlock = 100;

// The counter of the one ReserveIds among `out`, or -1 when there is none.
int64_t ReservedCounter(const Actions& out) {
  int64_t counter = -1;
  for (const Action& action : out) {
    if (const auto* reserve = std::get_if<ReserveIds>(&action)) {
      EXPECT_EQ(counter, -1) << "two reservations at once";
      counter = reserve->new_counter;
    }
  }
  return counter;
}

TEST(IdReservation, AFreshPipelineWaitsForItsFirstBlockAndTheTriggerIsReDriven) {
  IdReservation ids(/*stored_counter=*/0, /*last_completed_id=*/0);
  EXPECT_EQ(ids.Take(), std::nullopt);
  EXPECT_TRUE(ids.waiting());
  Actions out;
  ids.MaybeReserve(kBlock, out);
  EXPECT_EQ(ReservedCounter(out), kBlock);
  Actions again;
  ids.MaybeReserve(kBlock, again);  // one request at a time
  EXPECT_TRUE(again.empty());
  EXPECT_TRUE(ids.OnReserved(kBlock));  // a trigger waited: the caller re-drives it
  EXPECT_FALSE(ids.waiting());
  EXPECT_EQ(ids.Take(), 1);
  EXPECT_EQ(ids.Take(), 2);
}

TEST(IdReservation, IdsContinueAboveTheStoredCounterAndTheNewestCompletedId) {
  // Ids up to the stored counter were reserved before a restart and may have been handed out:
  // none of them is handed out again, and the first trigger waits for a new block.
  IdReservation restarted(/*stored_counter=*/500, /*last_completed_id=*/40);
  EXPECT_EQ(restarted.next(), 501);
  EXPECT_EQ(restarted.Take(), std::nullopt);
  EXPECT_TRUE(restarted.OnReserved(600));
  EXPECT_EQ(restarted.Take(), 501);
  // A group member completed ids its group handed out, above its own counter.
  IdReservation member(/*stored_counter=*/50, /*last_completed_id=*/60);
  EXPECT_EQ(member.next(), 61);
  EXPECT_EQ(member.Take(), std::nullopt);
}

TEST(IdReservation, ABlockIsAskedForOnceAtMostHalfABlockIsLeft) {
  IdReservation ids(/*stored_counter=*/0, 0);
  EXPECT_FALSE(ids.OnReserved(kBlock));  // nobody waited
  for (int64_t id = 1; id <= kBlock / 2 - 1; ++id) {
    ASSERT_EQ(ids.Take(), id);
    Actions out;
    ids.MaybeReserve(kBlock, out);
    ASSERT_TRUE(out.empty()) << "asked with " << kBlock - id << " left";
  }
  ASSERT_EQ(ids.Take(), kBlock / 2);  // half a block left
  Actions out;
  ids.MaybeReserve(kBlock, out);
  EXPECT_EQ(ReservedCounter(out), 2 * kBlock);
  // Ids still reserved go on being handed out while the request is in flight.
  EXPECT_EQ(ids.Take(), kBlock / 2 + 1);
  EXPECT_FALSE(ids.OnReserved(2 * kBlock));
  EXPECT_EQ(ids.reserved_end(), 2 * kBlock);
  // An older, smaller answer never shrinks what is reserved.
  EXPECT_FALSE(ids.OnReserved(kBlock));
  EXPECT_EQ(ids.reserved_end(), 2 * kBlock);
}

TEST(IdReservation, AFailedReservationIsRetriedOnceItsTimeHasCome) {
  IdReservation ids(0, 0);
  Actions first;
  ids.MaybeReserve(kBlock, first);
  ASSERT_EQ(ReservedCounter(first), kBlock);
  EXPECT_FALSE(ids.retry_at());  // in flight: nothing to retry
  const SteadyTime at = SteadyTime{} + std::chrono::seconds(5);
  ids.OnReserveFailed(at);
  ASSERT_TRUE(ids.retry_at());
  EXPECT_EQ(*ids.retry_at(), at);
  Actions early;
  ids.MaybeReserve(kBlock, early);  // the retry waits for its time
  EXPECT_TRUE(early.empty());
  EXPECT_FALSE(ids.TakeDueRetry(at - std::chrono::milliseconds(1)));
  EXPECT_TRUE(ids.TakeDueRetry(at));
  EXPECT_FALSE(ids.TakeDueRetry(at));  // once
  EXPECT_FALSE(ids.retry_at());
  Actions retry;
  ids.MaybeReserve(kBlock, retry);
  EXPECT_EQ(ReservedCounter(retry), kBlock);
}

TEST(IdReservation, NearTheLargestIdNothingIsReservedAndThatIsLoggedOnce) {
  IdReservation ids(kMaxCheckpointId - kBlock / 2, 0);
  // Take all but a few, so that a block is wanted.
  while (ids.reserved_end() - ids.next() + 1 > kBlock / 2) ASSERT_TRUE(ids.Take());
  Actions out;
  ids.MaybeReserve(kBlock, out);
  EXPECT_EQ(ReservedCounter(out), -1);
  ASSERT_EQ(out.size(), 1u);
  const auto* log = std::get_if<Log>(&out[0]);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->level, LogLevel::kError);
  EXPECT_NE(log->text.find("exhausted"), std::string::npos) << log->text;
  Actions again;
  ids.MaybeReserve(kBlock, again);
  EXPECT_TRUE(again.empty());
}

TEST(IdReservation, IdsAGroupHandedOutAreNeverHandedOutAgain) {
  IdReservation ids(/*stored_counter=*/0, 0);
  ids.OnReserved(kBlock);
  ids.RaiseAbove(70);
  EXPECT_EQ(ids.Take(), 71);
  ids.RaiseAbove(10);  // never down
  EXPECT_EQ(ids.Take(), 72);
  ids.RaiseAbove(kBlock + 30);
  EXPECT_EQ(ids.Highest(), kBlock + 30);
  EXPECT_EQ(ids.Take(), std::nullopt);  // above what is durable: wait for a block
}

}  // namespace
}  // namespace ckpt
