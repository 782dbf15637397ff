// A store that fails: the checkpoint fails with the store's reason and is never reported complete;
// the daemon keeps serving and completes checkpoints again once the store recovers.
#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "log_tap.h"
#include "raw_worker.h"
#include "sqlite/sqlite_store.h"
#include "support/fault_injecting_store.h"

namespace ckpt::testing {
namespace {

TEST_F(DaemonTest, FailedCommitFailsTheCheckpointAndNothingIsReportedComplete) {
  config_.pipelines = {TestSpec("p", {"a"}, 50)};
  config_.pipelines[0].tolerable_failures = 10;
  auto faulty = std::make_unique<FaultInjectingStore>(OpenSqlite());
  FaultInjectingStore* faults = faulty.get();
  faults->FailNextCommits(2, Status::Internal("disk I/O error (injected)"));
  StartDaemonWith(std::move(faulty));

  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  std::vector<int64_t> failed_ids;
  for (int i = 0; i < 2; ++i) {
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    w.Ack(t->trigger().checkpoint_id(), "a");
    auto abort = w.WaitFor(
        [](const v1::CoordinatorMessage& m) { return m.has_abort() || m.has_complete(); });
    ASSERT_TRUE(abort);
    ASSERT_TRUE(abort->has_abort()) << "a checkpoint whose write failed was reported complete";
    EXPECT_EQ(abort->abort().checkpoint_id(), t->trigger().checkpoint_id());
    EXPECT_NE(abort->abort().reason().find("disk I/O error (injected)"), std::string::npos);
    failed_ids.push_back(t->trigger().checkpoint_id());
  }
  // The store is healthy again: the next checkpoint completes.
  auto t = w.WaitTrigger();
  ASSERT_TRUE(t);
  w.Ack(t->trigger().checkpoint_id(), "a");
  auto complete = w.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(faults->injected_commit_failures(), 2);
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.failed_count == 2; }));
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  for (const auto& c : *history) {
    for (int64_t id : failed_ids) EXPECT_NE(c.checkpoint_id, id);
  }
}

TEST_F(DaemonTest, FailedIdReservationIsRetriedAndTheScheduleGoesOn) {
  config_.pipelines = {TestSpec("p", {"a"}, 50)};
  auto faulty = std::make_unique<FaultInjectingStore>(OpenSqlite());
  faulty->FailNextReserves(1, Status::Internal("database is locked (injected)"));
  StartDaemonWith(std::move(faulty));
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto t = w.WaitTrigger(milliseconds(10000));
  ASSERT_TRUE(t) << "the trigger never came after the failed reservation";
  w.Ack(t->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(w.WaitComplete());
}

TEST_F(DaemonTest, AStoreThatFailsEveryWriteHoldsTriggersFailsNoPipelineAndRecoversByItself) {
  config_.pipelines = {TestSpec("p", {"a"}, 50)};  // tolerable_failures 0
  auto faulty = std::make_unique<FaultInjectingStore>(OpenSqlite());
  FaultInjectingStore* faults = faulty.get();
  StartDaemonWith(std::move(faulty));
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto t = w.WaitTrigger();
  ASSERT_TRUE(t);
  ASSERT_TRUE(daemon_->ready());

  faults->FailAllWrites(Status::Unavailable("database or disk is full (injected)"));
  w.Ack(t->trigger().checkpoint_id(), "a");
  auto abort = w.WaitAbort();
  ASSERT_TRUE(abort) << "the round whose commit failed is aborted";
  EXPECT_NE(abort->abort().reason().find("disk is full"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return !daemon_->ready(); })) << "not ready while writes fail";
  EXPECT_NE(daemon_->NotReady().find("the store fails writes (UNAVAILABLE: database or disk is "
                                     "full (injected))"),
            std::string::npos)
      << "/readyz names the store's error: " << daemon_->NotReady();
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().store_writable.load() == 0; }));
  // Held: no trigger for several intervals (50 ms each), and the pipeline is not FAILED.
  EXPECT_FALSE(w.WaitTrigger(milliseconds(500))) << "a round was triggered while writes fail";
  PipelineStatus held = Describe("p");
  EXPECT_EQ(held.state, PipelineState::kRunning);
  EXPECT_EQ(held.counters.consecutive_failures, 0);
  EXPECT_EQ(held.counters.failed_count, 1);

  faults->StopFailingWrites();
  ASSERT_TRUE(Eventually([&] { return daemon_->ready(); }, milliseconds(5000)))
      << "the probe must find the store writable again";
  auto next = w.WaitTrigger();
  ASSERT_TRUE(next) << "triggers resume by themselves";
  w.Ack(next->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(w.WaitComplete());
  EXPECT_EQ(daemon_->metrics().store_writable.load(), 1);
}

// A runner's write that completes only as the store closes (queued after shutdown's flush, while
// the shards still ran) reports to the pipelines' StoreHealth from the store's writer: the daemon
// must close the store while what that callback reaches is still alive. ASan and TSan see it if
// not.
TEST_F(DaemonTest, AWriteThatCompletesAsTheStoreClosesFindsItsPipelineStillThere) {
  config_.pipelines = {TestSpec("p", {"a"}, 60000)};
  auto faulty = std::make_unique<FaultInjectingStore>(OpenSqlite());
  FaultInjectingStore* faults = faulty.get();
  StartDaemonWith(std::move(faulty));
  {
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    ASSERT_TRUE(Eventually([&] { return Describe("p").registered_tasks == 1; }));
    faults->HoldCompletionsUntilClosed();
  }  // the stream ends: task loss, a new generation, a progress write whose completion is held
  ASSERT_TRUE(Eventually([&] { return faults->held_completions() > 0; }));
  daemon_.reset();
}

// A group round the store refuses as not writable says so to StoreHealth, as a pipeline's round
// does: the daemon reports not ready and probes, instead of going on as if the store were fine.
TEST_F(DaemonTest, AGroupRoundTheStoreCannotWriteMarksTheStoreNotWritable) {
  AlignmentGroupSpec group;
  group.name = "ledger";
  group.interval_ms = 100;
  group.timeout_ms = 10000;
  config_.alignment_groups = {group};
  PipelineSpec member = TestSpec("p", {"a"}, 60000);
  member.alignment_group = "ledger";
  member.tolerable_failures = 10;
  config_.pipelines = {member};
  // The store's health changes as fast as writes come (the member's next write marks it
  // writable again), so what is checked is that it was told: its line.
  LogTap log(64);
  auto faulty = std::make_unique<FaultInjectingStore>(OpenSqlite());
  FaultInjectingStore* faults = faulty.get();
  StartDaemonWith(std::move(faulty));
  ASSERT_TRUE(daemon_->ready());
  faults->FailNextCommits(1, Status::Unavailable("disk full (injected)"));
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto t = w.WaitTrigger();
  ASSERT_TRUE(t);
  w.Ack(t->trigger().checkpoint_id(), "a");
  const bool seen =
      Eventually([&] { return log.Saw("store: writes fail (UNAVAILABLE: disk full (injected))"); },
                 milliseconds(5000));
  EXPECT_TRUE(seen) << "a group round the store could not write was not reported to its health";
  // The group goes on.
  auto next = w.WaitTrigger();
  ASSERT_TRUE(next);
  w.Ack(next->trigger().checkpoint_id(), "a");
  EXPECT_TRUE(w.WaitComplete());
}

}  // namespace
}  // namespace ckpt::testing
