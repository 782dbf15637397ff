// The worker protocol against a real daemon: registration errors, rounds, expiry, decline, loss,
// takeover, leases, ignored acks, restart.
#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "raw_worker.h"

namespace ckpt::testing {
namespace {

class WorkerProtocolTest : public DaemonTest {};

TEST_F(WorkerProtocolTest, RegistrationErrorsHaveTheirStatusCodes) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  struct Case {
    std::string name;
    std::function<void(RawWorker&)> send;
    grpc::StatusCode expected;
  };
  std::vector<Case> cases = {
      {"unknown pipeline", [](RawWorker& w) { w.Hello("job", "nope", {"a"}); },
       grpc::StatusCode::NOT_FOUND},
      {"task not in pipeline", [](RawWorker& w) { w.Hello("job", "p", {"zz"}); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"duplicate task",
       [](RawWorker& w) {
         w.Hello("job", "p", {"a", "a"});
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"empty job id", [](RawWorker& w) { w.Hello("", "p", {"a"}); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"no tasks", [](RawWorker& w) { w.Hello("job", "p", {}); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"first message not hello", [](RawWorker& w) { w.Ack(1, "a"); },
       grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (auto& c : cases) {
    RawWorker w(channel_);
    c.send(w);
    auto status = w.WaitEnd();
    ASSERT_TRUE(status.has_value()) << c.name << ": stream not ended";
    EXPECT_EQ(status->error_code(), c.expected) << c.name << ": " << status->error_message();
    EXPECT_FALSE(status->error_message().empty()) << c.name;
  }
  RawWorker holder(channel_);
  holder.Hello("job", "p", {"a"}, false, "holder");
  ASSERT_TRUE(holder.WaitWelcome());
  RawWorker second(channel_);
  second.Hello("job", "p", {"a"}, false, "second");
  auto status = second.WaitEnd();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(status->error_message().find("holder"), std::string::npos);
}

TEST_F(WorkerProtocolTest, FullRoundCompletesOnlyOnceDurable) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  auto welcome = w.WaitWelcome();
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->welcome().lease_ttl_ms(), 3000);
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t id = trigger->trigger().checkpoint_id();
  EXPECT_GE(id, 1);
  EXPECT_EQ(trigger->trigger().kind(), v1::CHECKPOINT_KIND_CHECKPOINT);
  w.Ack(id, "a");
  w.Ack(id, "b");
  auto complete = w.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), id);
  // `complete` was sent, so the checkpoint is in the store with both task states.
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  const auto& stored = history->front();  // newest first
  EXPECT_EQ(stored.checkpoint_id, id);
  ASSERT_EQ(stored.task_states.size(), 2u);
  EXPECT_EQ(stored.task_states.at("a").uri, "mem://a/" + std::to_string(id));
}

TEST_F(WorkerProtocolTest, ConfiguredStartSpreadHoldsTheFirstPeriodicTrigger) {
  // A 10 min spread and interval, two pipelines: the daemon made one of them first (start slot
  // 0: no offset) and the other second (slot 1: 0.618 of the span, over 6 minutes).
  config_.start_spread_ms = 600000;
  ASSERT_GT(StartOffset(StartSlotFraction(1), Millis(600000), 600000), std::chrono::minutes(6));
  config_.pipelines = {TestSpec("s0", {"a"}, /*interval_ms=*/600000),
                       TestSpec("s1", {"a"}, /*interval_ms=*/600000)};
  StartDaemon();
  RawWorker w0(channel_);
  RawWorker w1(channel_);
  w0.Hello("job", "s0", {"a"});
  w1.Hello("job", "s1", {"a"});
  ASSERT_TRUE(w0.WaitWelcome());
  ASSERT_TRUE(w1.WaitWelcome());
  EXPECT_TRUE(Eventually([&] {
    return Describe("s0").state == PipelineState::kRunning &&
           Describe("s1").state == PipelineState::kRunning;
  }));
  // (The other tests here run the fixture's spread of a second with intervals of 100 ms: their
  // first trigger comes within 100 ms of the tasks registering.)
  const bool first = w0.WaitTrigger(milliseconds(1500)).has_value();
  const bool second = w1.WaitTrigger(milliseconds(first ? 100 : 1500)).has_value();
  EXPECT_NE(first, second) << "one pipeline triggers at once, the other waits its start offset";
}

TEST_F(WorkerProtocolTest, UnackedCheckpointExpires) {
  config_.pipelines = {TestSpec("p", {"a"}, /*interval_ms=*/100, /*timeout_ms=*/200)};
  config_.pipelines[0].tolerable_failures = 100;
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  auto abort = w.WaitAbort();
  ASSERT_TRUE(abort);
  EXPECT_EQ(abort->abort().checkpoint_id(), trigger->trigger().checkpoint_id());
  EXPECT_NE(abort->abort().reason().find("expired"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.expired_count >= 1; }));
  EXPECT_GE(daemon_->metrics().checkpoints_expired_total.load(), 1u);
}

TEST_F(WorkerProtocolTest, DeclineFailsTheCheckpoint) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  config_.pipelines[0].tolerable_failures = 100;
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  w.Ack(trigger->trigger().checkpoint_id(), "a");
  w.Decline(trigger->trigger().checkpoint_id(), "b", "no space left");
  auto abort = w.WaitAbort();
  ASSERT_TRUE(abort);
  EXPECT_NE(abort->abort().reason().find("no space left"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.failed_count == 1; }));
}

TEST_F(WorkerProtocolTest, LostWorkerAbortsThePendingCheckpoint) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawWorker wa(channel_);
  auto wb = std::make_unique<RawWorker>(channel_);
  wa.Hello("job", "p", {"a"});
  wb->Hello("job", "p", {"b"});
  auto trigger = wa.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t generation = trigger->trigger().generation();
  wb->Cancel();
  auto abort = wa.WaitAbort();
  ASSERT_TRUE(abort);
  EXPECT_EQ(abort->abort().checkpoint_id(), trigger->trigger().checkpoint_id());
  EXPECT_TRUE(Eventually([&] {
    auto s = Describe("p");
    return s.state == PipelineState::kWaitingForTasks &&
           s.missing_tasks == std::vector<std::string>{"b"};
  }));
  // The worker comes back: RUNNING again, with a newer generation, and checkpoints complete.
  wb = std::make_unique<RawWorker>(channel_);
  wb->Hello("job", "p", {"b"});
  ASSERT_TRUE(wb->WaitWelcome());
  auto next = wa.WaitTrigger();
  ASSERT_TRUE(next);
  EXPECT_GT(next->trigger().generation(), generation);
  EXPECT_GT(next->trigger().checkpoint_id(), trigger->trigger().checkpoint_id());
  wa.Ack(next->trigger().checkpoint_id(), "a");
  wb->Ack(next->trigger().checkpoint_id(), "b");
  ASSERT_TRUE(wa.WaitComplete());
}

TEST_F(WorkerProtocolTest, TakeoverEndsTheOldStreamWithAborted) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartDaemon();
  RawWorker old_worker(channel_);
  old_worker.Hello("job", "p", {"a"}, false, "old");
  ASSERT_TRUE(old_worker.WaitWelcome());
  RawWorker new_worker(channel_);
  new_worker.Hello("job", "p", {"a"}, true, "new");
  ASSERT_TRUE(new_worker.WaitWelcome());
  auto status = old_worker.WaitEnd();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::ABORTED);
  auto trigger = new_worker.WaitTrigger();
  ASSERT_TRUE(trigger);
  new_worker.Ack(trigger->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(new_worker.WaitComplete());
}

TEST_F(WorkerProtocolTest, AckForATaskNotOwnedIsIgnoredAndCounted) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawWorker wa(channel_);
  RawWorker wb(channel_);
  wa.Hello("job", "p", {"a"});
  wb.Hello("job", "p", {"b"});
  auto trigger = wa.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t id = trigger->trigger().checkpoint_id();
  wa.Ack(id, "a");
  wa.Ack(id, "b");  // b is not wa's
  EXPECT_TRUE(
      Eventually([&] { return daemon_->metrics().ignored_unowned_task_total.load() == 1; }));
  EXPECT_FALSE(wa.WaitComplete(milliseconds(300))) << "b's ack from the wrong stream counted";
  wb.Ack(id, "b");
  ASSERT_TRUE(wa.WaitComplete());
}

// The lease is a minute; the daemon's clock is moved past it instead of waiting for it.
TEST_F(WorkerProtocolTest, SilentStreamLosesItsLease) {
  config_.lease_ttl_ms = 60000;
  config_.heartbeat_interval_ms = 20000;
  config_.pipelines = {TestSpec("p", {"a"}, 3600000)};
  // Its first round (due at once) expires with the clock's move: not a reason to fail it.
  config_.pipelines[0].tolerable_failures = 100;
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  ASSERT_TRUE(w.WaitWelcome());
  EXPECT_FALSE(w.WaitEnd(milliseconds(300))) << "ended before its lease ran out";
  MoveDaemonClock(std::chrono::seconds(61));
  auto status = w.WaitEnd(milliseconds(5000));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(Eventually([&] { return Describe("p").state == PipelineState::kWaitingForTasks; }));
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
}

// A round's timeout of ten minutes, run out by moving the daemon's clock (the lease, an hour, does
// not run out with it).
TEST_F(WorkerProtocolTest, ARoundUnansweredPastItsTimeoutExpires) {
  config_.lease_ttl_ms = 3600000;
  config_.heartbeat_interval_ms = 600000;
  config_.pipelines = {TestSpec("p", {"a", "b"}, 50, 600000)};
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  w.Ack(trigger->trigger().checkpoint_id(), "a");  // b never answers
  EXPECT_FALSE(w.WaitAbort(milliseconds(300))) << "expired before its timeout";
  MoveDaemonClock(std::chrono::seconds(601));
  auto abort = w.WaitAbort(milliseconds(5000));
  ASSERT_TRUE(abort) << "the round did not expire when its timeout had passed";
  EXPECT_EQ(abort->abort().checkpoint_id(), trigger->trigger().checkpoint_id());
  EXPECT_NE(abort->abort().reason().find("expired"), std::string::npos) << abort->abort().reason();
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.expired_count == 1; }));
}

// A round's watchdog belongs to that round: the round after a completed one expires at its own
// deadline, neither at the previous round's nor never, however the watchdog is kept between
// rounds. (The interval, 250 s, lets the second round trigger only once the clock is moved.)
TEST_F(WorkerProtocolTest, ARoundAfterACompletedOneExpiresAtItsOwnDeadline) {
  config_.lease_ttl_ms = 3600000;
  config_.heartbeat_interval_ms = 600000;
  config_.pipelines = {TestSpec("p", {"a", "b"}, 250000, 600000)};
  config_.stuck_threshold_ms = 3600000;  // no stuck notice: the watchdog waits for the deadline
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  auto first = w.WaitTrigger();
  ASSERT_TRUE(first);
  w.Ack(first->trigger().checkpoint_id(), "a");
  w.Ack(first->trigger().checkpoint_id(), "b");
  ASSERT_TRUE(w.WaitComplete());
  // The next round comes five minutes after the first: due since 250 s, it triggers at once.
  MoveDaemonClock(std::chrono::seconds(300));
  auto second = w.WaitTrigger();
  ASSERT_TRUE(second);
  const int64_t id = second->trigger().checkpoint_id();
  ASSERT_GT(id, first->trigger().checkpoint_id());
  w.Ack(id, "a");  // b never answers
  // Past the first round's deadline, half way to the second's.
  MoveDaemonClock(std::chrono::seconds(301));
  EXPECT_FALSE(w.WaitAbort(milliseconds(500))) << "expired at the previous round's deadline";
  EXPECT_EQ(Describe("p").counters.expired_count, 0);
  MoveDaemonClock(std::chrono::seconds(300));
  auto abort = w.WaitAbort(milliseconds(5000));
  ASSERT_TRUE(abort) << "the round did not expire when its own timeout had passed";
  EXPECT_EQ(abort->abort().checkpoint_id(), id);
  EXPECT_NE(abort->abort().reason().find("expired"), std::string::npos) << abort->abort().reason();
}

TEST_F(WorkerProtocolTest, AStreamThatSaysNoHelloIsEndedAfterTheHelloTimeout) {
  config_.lease_ttl_ms = 60000;
  config_.heartbeat_interval_ms = 20000;
  config_.hello_timeout_ms = 300;
  StartDaemon();
  RawWorker w(channel_);  // connects, says nothing
  ASSERT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 1; }));
  auto status = w.WaitEnd(milliseconds(10000));
  ASSERT_TRUE(status) << "ended by the hello timeout, long before the lease (60 s)";
  EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status->error_message().find("no hello within 300 ms"), std::string::npos)
      << status->error_message();
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
}

TEST_F(WorkerProtocolTest, StuckPipelineDoesNotDelayAnotherPipelinesTriggers) {
  // "stuck" never acks and has a long timeout; "busy" checkpoints every 50 ms meanwhile.
  config_.pipelines = {TestSpec("stuck", {"a"}, 50, 60000), TestSpec("busy", {"a"}, 50, 60000)};
  StartDaemon();
  RawWorker stuck(channel_);
  stuck.Hello("job", "stuck", {"a"});
  ASSERT_TRUE(stuck.WaitTrigger());
  RawWorker busy(channel_);
  busy.Hello("job", "busy", {"a"});
  std::vector<double> gaps_ms;
  auto last = std::chrono::steady_clock::now();
  for (int i = 0; i < 30; ++i) {
    auto t = busy.WaitTrigger(milliseconds(5000));
    ASSERT_TRUE(t) << "busy pipeline stopped triggering at round " << i;
    auto now = std::chrono::steady_clock::now();
    if (i > 0) gaps_ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
    busy.Ack(t->trigger().checkpoint_id(), "a");
  }
  std::sort(gaps_ms.begin(), gaps_ms.end());
  const double worst = gaps_ms.back();
  std::printf("busy pipeline trigger gaps: p50 %.1f ms, max %.1f ms (interval 50 ms)\n",
              gaps_ms[gaps_ms.size() / 2], worst);
  // Far below the stuck pipeline's 60 s timeout: the stuck one holds no thread.
  EXPECT_LT(worst, 2000.0);
  EXPECT_NE(Describe("stuck").pending_checkpoint_id, 0) << "the stuck pipeline is still pending";
}

TEST_F(WorkerProtocolTest, RestartKeepsHistoryAndContinuesIdsAboveTheCounter) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartDaemon();
  int64_t last_id = 0;
  {
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    for (int i = 0; i < 3; ++i) {
      auto t = w.WaitTrigger();
      ASSERT_TRUE(t);
      last_id = t->trigger().checkpoint_id();
      w.Ack(last_id, "a");
      ASSERT_TRUE(w.WaitComplete());
    }
  }
  const int64_t generation = Describe("p").generation;
  StopDaemon();
  StartDaemon();
  auto s = Describe("p");
  EXPECT_EQ(s.last_completed_checkpoint_id, last_id);
  EXPECT_EQ(s.counters.completed_count, 3);
  EXPECT_GT(s.generation, generation) << "daemon start bumps the generation";
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto welcome = w.WaitWelcome();
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->welcome().last_completed_checkpoint_id(), last_id);
  auto t = w.WaitTrigger();
  ASSERT_TRUE(t);
  EXPECT_GT(t->trigger().checkpoint_id(), last_id);
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 3u);
}

}  // namespace
}  // namespace ckpt::testing

namespace ckpt::testing {
namespace {

TEST_F(DaemonTest, SecondDaemonOnTheSameDataDirIsRefused) {
  StartDaemon();
  Daemon second(config_);
  Status s = second.Start();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("in use by another ckptd (pid " + std::to_string(::getpid())),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ckpt::testing
