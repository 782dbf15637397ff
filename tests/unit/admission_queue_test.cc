// AdmissionQueue's rules (docs/PROTOCOL.md, "Admission"): the caps, the order of the line
// (savepoints first, then the oldest due), none overtaking, a round larger than a cap alone, an
// alignment group's round counted as its members; and RoundAdmission telling the admitted.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/admission_queue.h"
#include "core/round_admission.h"

namespace ckpt {
namespace {

using Tickets = std::vector<AdmissionTicket>;

AdmissionRequest Periodic(int64_t due_ms, int64_t bytes = 0, int64_t rounds = 1) {
  AdmissionRequest r;
  r.line = AdmissionClass::kPeriodic;
  r.due = SteadyTime{Millis(due_ms)};
  r.bytes = bytes;
  r.rounds = rounds;
  return r;
}

AdmissionRequest Savepoint(int64_t bytes = 0) {
  AdmissionRequest r;
  r.line = AdmissionClass::kSavepoint;
  r.bytes = bytes;
  return r;
}

TEST(AdmissionQueueTest, ARoundPastTheRoundsCapWaitsUntilOneEnds) {
  AdmissionQueue q(AdmissionCaps{2, 0});
  EXPECT_EQ(q.Ask(1, Periodic(0)), Tickets{1});
  EXPECT_EQ(q.Ask(2, Periodic(0)), Tickets{2});
  EXPECT_EQ(q.Ask(3, Periodic(0)), Tickets{});
  EXPECT_EQ(q.rounds_in_flight(), 2);
  EXPECT_EQ(q.waiting(), 1u);
  EXPECT_EQ(q.Leave(2), Tickets{3});
  EXPECT_TRUE(q.in_flight(3));
  EXPECT_EQ(q.rounds_in_flight(), 2);
}

TEST(AdmissionQueueTest, SavepointsGoFirstThenTheOldestDue) {
  AdmissionQueue q(AdmissionCaps{1, 0});
  ASSERT_EQ(q.Ask(1, Periodic(0)), Tickets{1});
  q.Ask(2, Periodic(30));
  q.Ask(3, Periodic(10));
  q.Ask(4, Savepoint());
  q.Ask(5, Periodic(20));
  q.Ask(6, Savepoint());
  EXPECT_EQ(q.PlaceInLine(4), 0u);
  EXPECT_EQ(q.PlaceInLine(6), 1u);
  EXPECT_EQ(q.PlaceInLine(2), 4u);
  Tickets order;
  for (AdmissionTicket flying = 1; flying != 0;) {
    const Tickets next = q.Leave(flying);
    flying = next.empty() ? 0 : next.front();
    if (flying) order.push_back(flying);
  }
  EXPECT_EQ(order, (Tickets{4, 6, 3, 5, 2}));
}

TEST(AdmissionQueueTest, NoRoundOvertakesTheHeadOfTheLine) {
  AdmissionQueue q(AdmissionCaps{0, 100});
  ASSERT_EQ(q.Ask(1, Periodic(0, 60)), Tickets{1});
  EXPECT_EQ(q.Ask(2, Periodic(1, 50)), Tickets{});  // 110 > 100
  // 10 more would fit beside the 60, but the head waits: so does everything behind it.
  EXPECT_EQ(q.Ask(3, Periodic(2, 10)), Tickets{});
  EXPECT_EQ(q.Leave(1), (Tickets{2, 3}));
  EXPECT_EQ(q.bytes_in_flight(), 60);
}

TEST(AdmissionQueueTest, ARoundLargerThanTheWholeBytesCapGoesAloneOnceNothingFlies) {
  AdmissionQueue q(AdmissionCaps{0, 100});
  ASSERT_EQ(q.Ask(1, Periodic(0, 10)), Tickets{1});
  EXPECT_EQ(q.Ask(2, Periodic(1, 500)), Tickets{});
  EXPECT_EQ(q.Ask(3, Periodic(2, 10)), Tickets{});
  EXPECT_EQ(q.Leave(1), Tickets{2});  // alone: nothing else is in flight
  EXPECT_EQ(q.Leave(2), Tickets{3});
}

TEST(AdmissionQueueTest, HostileSizesNeitherOverflowNorGoNegative) {
  // Predicted bytes come from workers' acks: INT64_MAX and negatives must not wrap the sums.
  AdmissionQueue q(AdmissionCaps{0, 100});
  ASSERT_EQ(q.Ask(1, Periodic(0, INT64_MAX)), Tickets{1});  // alone: larger than the cap
  EXPECT_EQ(q.bytes_in_flight(), kMaxPredictedBytes);
  EXPECT_EQ(q.Ask(2, Periodic(1, -5)), Tickets{}) << "nothing fits beside a round past the cap";
  EXPECT_EQ(q.Ask(3, Periodic(2, INT64_MAX)), Tickets{});
  EXPECT_EQ(q.Leave(1), Tickets{2});
  EXPECT_EQ(q.bytes_in_flight(), 0) << "a negative size counts as none";
  EXPECT_EQ(q.Leave(2), Tickets{3});
  EXPECT_EQ(AddPredictedBytes(kMaxPredictedBytes, kMaxPredictedBytes), kMaxPredictedBytes);
}

TEST(AdmissionQueueTest, AnAlignmentGroupsRoundCountsAsItsMembers) {
  AdmissionQueue q(AdmissionCaps{4, 0});
  ASSERT_EQ(q.Ask(1, Periodic(0, 0, 3)), Tickets{1});
  EXPECT_EQ(q.Ask(2, Periodic(1, 0, 2)), Tickets{});  // 3 + 2 > 4
  EXPECT_EQ(q.Ask(3, Periodic(2)), Tickets{});        // behind the group's round
  EXPECT_EQ(q.rounds_in_flight(), 3);
  EXPECT_EQ(q.Leave(1), (Tickets{2, 3}));
  EXPECT_EQ(q.rounds_in_flight(), 3);
  // A group larger than the whole cap goes alone.
  q.Leave(2);
  q.Leave(3);
  EXPECT_EQ(q.Ask(4, Periodic(3, 0, 9)), Tickets{4});
}

TEST(AdmissionQueueTest, AdmitNowRefusesNamingTheCapWhileItIsFullOrRoundsWait) {
  AdmissionQueue q(AdmissionCaps{1, 0});
  ASSERT_EQ(q.Ask(1, Periodic(0)), Tickets{1});
  auto refusal = q.AdmitNow(2, Periodic(0));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->Text(), "admission.max_concurrent_rounds 1 is full (1 rounds in flight)");
  q.Ask(3, Periodic(0));
  q.Leave(1);  // 3 flies now
  refusal = q.AdmitNow(2, Periodic(0));
  ASSERT_TRUE(refusal.has_value());
  q.Leave(3);
  EXPECT_FALSE(q.AdmitNow(2, Periodic(0)).has_value());
  EXPECT_TRUE(q.in_flight(2));

  AdmissionQueue bytes(AdmissionCaps{0, 100});
  ASSERT_EQ(bytes.Ask(1, Periodic(0, 90)), Tickets{1});
  bytes.Ask(2, Periodic(0, 90));
  refusal = bytes.AdmitNow(3, Periodic(0, 5));  // would fit, but a round waits
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->Text(),
            "admission.max_inflight_bytes 100 is full (90 bytes in flight, 1 waiting)");
}

TEST(AdmissionQueueTest, AskingAgainMovesAWaitingRoundToTheSavepointsLine) {
  AdmissionQueue q(AdmissionCaps{1, 0});
  ASSERT_EQ(q.Ask(1, Periodic(0)), Tickets{1});
  q.Ask(2, Periodic(5));
  q.Ask(3, Periodic(10));
  q.Ask(3, Savepoint());
  EXPECT_EQ(q.PlaceInLine(3), 0u);
  EXPECT_EQ(q.waiting(), 2u);
  EXPECT_EQ(q.Ask(1, Periodic(0)), Tickets{});  // in flight: ignored
  EXPECT_EQ(q.Leave(1), Tickets{3});
}

TEST(AdmissionQueueTest, LeavingTheLineAndNewCapsAdmitWhatNowFits) {
  AdmissionQueue q(AdmissionCaps{1, 0});
  ASSERT_EQ(q.Ask(1, Periodic(0)), Tickets{1});
  q.Ask(2, Periodic(1));
  q.Ask(3, Periodic(2));
  q.Ask(4, Periodic(3));
  EXPECT_EQ(q.Leave(2), Tickets{});  // it waited: nothing flies less
  EXPECT_EQ(q.Leave(99), Tickets{});
  EXPECT_EQ(q.SetCaps(AdmissionCaps{2, 0}), Tickets{3});
  EXPECT_EQ(q.SetCaps(AdmissionCaps{}), Tickets{4});  // no cap: everything goes
  EXPECT_EQ(q.rounds_in_flight(), 3);
}

TEST(RoundAdmissionTest, TellsTheAdmittedOnceAndCountsTheDeferred) {
  RoundAdmission admission(AdmissionCaps{1, 0});
  ASSERT_TRUE(admission.enabled());
  std::vector<int> told;
  const AdmissionTicket a = admission.NewTicket(), b = admission.NewTicket();
  admission.Ask(a, Periodic(0, 7), [&] { told.push_back(1); });
  admission.Ask(b, Periodic(1, 3), [&] { told.push_back(2); });
  EXPECT_EQ(told, std::vector<int>{1});
  EXPECT_EQ(admission.rounds_in_flight(), 1);
  EXPECT_EQ(admission.bytes_in_flight(), 7);
  EXPECT_EQ(admission.rounds_waiting(), 1);
  EXPECT_EQ(admission.deferred_total(), 1u);
  // Asked again while waiting: moved, not counted twice.
  admission.Ask(b, Savepoint(3), [&] { told.push_back(3); });
  EXPECT_EQ(admission.deferred_total(), 1u);
  const RoundAdmission::View view = admission.Look(b);
  ASSERT_TRUE(view.held_by.has_value());
  EXPECT_STREQ(view.held_by->cap, "admission.max_concurrent_rounds");
  EXPECT_EQ(view.place, 0u);
  admission.Leave(a);
  EXPECT_EQ(told, (std::vector<int>{1, 3}));  // the callback of the last ask
  // Asking while in flight (an answer still on its way) is told again at once.
  admission.Ask(b, Periodic(2), [&] { told.push_back(4); });
  EXPECT_EQ(told, (std::vector<int>{1, 3, 4}));
  EXPECT_TRUE(admission.AdmitNow(a, Periodic(3)).code() == StatusCode::kResourceExhausted);
  admission.SetCaps(AdmissionCaps{});
  EXPECT_FALSE(admission.enabled());
}

TEST(RoundAdmissionTest, ManyThreadsNeverPassTheCap) {
  constexpr int kCap = 3;
  RoundAdmission admission(AdmissionCaps{kCap, 0});
  std::atomic<int> flying{0}, most{0}, rounds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      const AdmissionTicket ticket = admission.NewTicket();
      for (int i = 0; i < 200; ++i) {
        std::atomic<bool> admitted{false};
        admission.Ask(ticket, Periodic(i), [&] { admitted = true; });
        while (!admitted) std::this_thread::yield();
        const int now = ++flying;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        ++rounds;
        --flying;
        admission.Leave(ticket);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(rounds.load(), 8 * 200);
  EXPECT_LE(most.load(), kCap);
  EXPECT_EQ(admission.rounds_in_flight(), 0);
  EXPECT_EQ(admission.rounds_waiting(), 0);
}

}  // namespace
}  // namespace ckpt
