// Stale acks after a takeover or a re-registration, and a takeover racing the old stream's last
// ack: a round that was aborted never completes, and a round is durable exactly when a stream was
// told it completed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <latch>
#include <thread>

#include "chaos_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

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

TEST_F(ChaosTest, StaleAckReplayedRightAfterAReRegistrationIsIgnored) {
  // A worker that lost its stream comes back and replays the ack it had not got through, in the
  // same breath as its hello (no wait for welcome).
  config_.pipelines = {TestSpec("p", {"a", "b"}, 200)};
  StartDaemon();
  RawWorker wa(channel_);
  wa.Hello("job", "p", {"a"}, false, "wa");
  auto wb = std::make_unique<RawWorker>(channel_);
  wb->Hello("job", "p", {"b"}, false, "wb");
  auto trigger = wa.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t stale = trigger->trigger().checkpoint_id();
  wa.Ack(stale, "a");
  // a's ack must be in before b goes: arriving after the abort, it would be counted not_pending
  // too, and the count below could not tell it from the replayed one.
  auto runner = daemon_->pipelines().registry().Find({"job", "p"});
  ASSERT_TRUE(runner);
  ASSERT_TRUE(Eventually([&] {
    std::promise<bool> acked;
    runner->Inspect([&](const PipelineCoordinator& c) {
      auto pending = c.Pending();
      acked.set_value(pending && std::find(pending->acked_tasks.begin(),
                                           pending->acked_tasks.end(),
                                           "a") != pending->acked_tasks.end());
    });
    return acked.get_future().get();
  }));
  runner.reset();
  wb->Cancel();  // b is lost before it acked: the round is aborted
  auto abort = wa.WaitAbort();
  ASSERT_TRUE(abort);
  EXPECT_EQ(abort->abort().checkpoint_id(), stale);
  const uint64_t not_pending = daemon_->metrics().ignored_not_pending_total.load();

  wb = std::make_unique<RawWorker>(channel_);
  wb->Hello("job", "p", {"b"}, false, "wb");
  wb->Ack(stale, "b");
  ASSERT_TRUE(wb->WaitWelcome());
  EXPECT_TRUE(Eventually([&] {
    return daemon_->metrics().ignored_not_pending_total.load() == not_pending + 1;
  }));
  auto next = wa.WaitTrigger();
  ASSERT_TRUE(next);
  const int64_t id = next->trigger().checkpoint_id();
  EXPECT_GT(id, stale);
  EXPECT_GT(next->trigger().generation(), trigger->trigger().generation());
  wa.Ack(id, "a");
  wb->Ack(id, "b");
  auto complete = wa.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), id);
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().checkpoint_id, id);
}

TEST_F(ChaosTest, TakeoverRacingTheOldStreamsLastAckNeverLosesACompletion) {
  // The old stream's last ack and a takeover hello race. Either order is fine; what must hold:
  // the round is durable if and only if some stream was told it completed, and the pipeline goes
  // on.
  constexpr int kRounds = 15;
  for (int i = 0; i < kRounds; ++i) {
    config_.pipelines.push_back(TestSpec("r" + std::to_string(i), {"a"}, 100));
  }
  StartDaemon();
  int completed_first = 0, aborted_first = 0;
  for (int i = 0; i < kRounds; ++i) {
    const std::string pipeline = "r" + std::to_string(i);
    SCOPED_TRACE(pipeline);
    RawWorker old_worker(channel_);
    old_worker.Hello("job", pipeline, {"a"}, false, "old");
    auto trigger = old_worker.WaitTrigger();
    ASSERT_TRUE(trigger);
    const int64_t stale = trigger->trigger().checkpoint_id();

    RawWorker new_worker(channel_);
    std::latch go(3);
    std::thread acker([&] {
      go.arrive_and_wait();
      old_worker.Ack(stale, "a");
    });
    std::thread taker([&] {
      go.arrive_and_wait();
      new_worker.Hello("job", pipeline, {"a"}, true, "new");
    });
    go.arrive_and_wait();
    acker.join();
    taker.join();

    // Everything each stream hears, up to the next round's complete on the new stream.
    bool told_complete = false;
    int64_t welcome_last_completed = -1;
    auto next = new_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_welcome()) welcome_last_completed = m.welcome().last_completed_checkpoint_id();
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return m.has_trigger();
    });
    ASSERT_TRUE(next) << "no new round after the takeover: " << EndStatusText(new_worker);
    EXPECT_GT(next->trigger().checkpoint_id(), stale);
    auto old_end = old_worker.WaitEnd();
    ASSERT_TRUE(old_end);
    EXPECT_EQ(old_end->error_code(), grpc::StatusCode::ABORTED);
    old_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return false;
    }, milliseconds(0));
    new_worker.Ack(next->trigger().checkpoint_id(), "a");
    auto complete = new_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return m.has_complete() && m.complete().checkpoint_id() == next->trigger().checkpoint_id();
    });
    ASSERT_TRUE(complete) << "the round after the takeover did not complete";
    if (welcome_last_completed == stale) told_complete = true;

    auto history = daemon_->store().ListCompleted({"job", pipeline}, 0);
    ASSERT_TRUE(history.ok());
    bool durable = false;
    for (const auto& c : *history) durable = durable || c.checkpoint_id == stale;
    EXPECT_EQ(durable, told_complete)
        << "checkpoint " << stale << (durable ? " is durable but nobody was told"
                                              : " was announced complete but is not stored");
    (durable ? completed_first : aborted_first)++;
  }
  std::printf("takeover vs last ack: the ack won %d time(s), the takeover %d time(s)\n",
              completed_first, aborted_first);
}

}  // namespace
}  // namespace ckpt::testing
