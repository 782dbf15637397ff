// A stale ack after a takeover, end to end: the takeover hello ends the old stream with ABORTED
// and aborts its round, the new stream's ack of that round is counted as ignored (not pending),
// and the next round completes and is stored. This proves the wiring (hello, stream end, metrics,
// store); the orders in which stale acks, re-registrations, takeovers and store answers can
// arrive are each played at the coordinator, where they are deterministic
// (tests/unit/coordinator_races_test.cc).
#include <gtest/gtest.h>

#include <cstdint>

#include "chaos_fixture.h"

namespace ckpt::testing {
namespace {

TEST_F(ChaosTest, StaleAckAfterATakeoverIsIgnoredAsNotPending) {
  config_.pipelines = {TestSpec("p", {"a"}, 200)};
  StartDaemon();
  RawWorker old_worker(channel_);
  old_worker.Hello("job", "p", {"a"}, false, "old");
  auto trigger = old_worker.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t stale = trigger->trigger().checkpoint_id();
  const int64_t old_generation = trigger->trigger().generation();
  const uint64_t not_pending = daemon_->metrics().ignored_not_pending_total.load();

  RawWorker new_worker(channel_);
  new_worker.Hello("job", "p", {"a"}, /*takeover=*/true, "new");
  auto welcome = new_worker.WaitWelcome();
  ASSERT_TRUE(welcome);
  EXPECT_GT(welcome->welcome().generation(), old_generation);
  auto ended = old_worker.WaitEnd();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->error_code(), grpc::StatusCode::ABORTED);

  // The new stream owns the task now, and acks the round it took over: too late, it was aborted.
  new_worker.Ack(stale, "a");
  EXPECT_TRUE(Eventually([&] {
    return daemon_->metrics().ignored_not_pending_total.load() == not_pending + 1;
  })) << daemon_->metrics().ignored_not_pending_total.load();
  EXPECT_EQ(daemon_->metrics().ignored_unowned_task_total.load(), 0u);

  // The next round is a new one, of the new generation, and it completes.
  auto next = new_worker.WaitTrigger();
  ASSERT_TRUE(next);
  EXPECT_GT(next->trigger().checkpoint_id(), stale);
  EXPECT_GE(next->trigger().generation(), welcome->welcome().generation());
  new_worker.Ack(next->trigger().checkpoint_id(), "a");
  auto complete = new_worker.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), next->trigger().checkpoint_id());
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  for (const auto& c : *history) EXPECT_NE(c.checkpoint_id, stale) << "the stale round completed";
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.completed_count == 1; }));
}

}  // namespace
}  // namespace ckpt::testing
