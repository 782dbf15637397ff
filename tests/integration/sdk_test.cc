// The worker SDK against a real daemon: rounds, reconnect after a daemon restart, goodbye, a
// worker-requested savepoint, and the status of a stream the daemon ended.
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <atomic>

#include "acking_worker.h"
#include "daemon_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

class SdkTest : public DaemonTest {
 protected:
  std::string Address() { return "127.0.0.1:" + std::to_string(daemon_->grpc_port()); }
};

TEST_F(SdkTest, CheckpointsCompleteThroughTheSdk) {
  config_.pipelines = {TestSpec("p", {"0", "1"}, 50)};
  StartDaemon();
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0", "1"});
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 3; }));
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  bool found = false;
  for (const auto& c : *history) found = found || c.checkpoint_id == w.last_complete.load();
  EXPECT_TRUE(found) << "a checkpoint the SDK heard complete is not in the store";
  w.worker->Goodbye();
  ASSERT_TRUE(
      w.worker->WaitUntilStopped(std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  EXPECT_TRUE(Eventually([&] {
    auto s = Describe("p");
    return s.state == PipelineState::kWaitingForTasks && s.sessions == 0;
  })) << "goodbye must deregister the tasks";
}

// Positions through the SDK: SetPosition's reports open the gate, the trigger names the position,
// and an ack that names none is taken at the trigger's (docs/SDK.md, "Worker SDK").
TEST_F(SdkTest, PositionsSetThroughTheSdkOpenTheGateAndAcksCarryTheTriggersPosition) {
  config_.heartbeat_interval_ms = 100;
  PipelineSpec spec = TestSpec("p", {"0", "1"}, 50);
  spec.position_interval = 10;
  config_.pipelines = {spec};
  StartDaemon();
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0", "1"});
  ASSERT_TRUE(Eventually([&] { return w.worker->IsConnected(); }));
  ASSERT_TRUE(Eventually([&] { return Explain("p").holdup == Holdup::kWaitingForPositions; }))
      << "no position reported yet: no trigger";
  EXPECT_EQ(w.completes.load(), 0);
  w.worker->SetPosition("0", 25);
  w.worker->SetPosition("1", 12);
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 1; }));
  EXPECT_EQ(w.last_trigger_position.load(), 30) << "the multiple of 10 above 25";
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->front().position, 30) << "the acks took the trigger's position";
  // The next round waits for both tasks to pass 40.
  w.worker->SetPosition("0", 45);
  w.worker->SetPosition("1", 41);
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 2; }));
  EXPECT_EQ(w.last_trigger_position.load(), 50);
}

TEST_F(SdkTest, ReconnectsToARestartedDaemonByItself) {
  config_.pipelines = {TestSpec("p", {"0"}, 50)};
  StartDaemon();
  config_.listen = Address();  // the restarted daemon comes back on the same port
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0"});
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 2; }));
  const int64_t before = w.last_complete.load();
  StopDaemon();
  StartDaemon();
  ASSERT_TRUE(Eventually([&] { return w.last_complete.load() > before; }))
      << "no checkpoint completed after the restart";
  EXPECT_GE(w.worker->counters().reconnects, 1u);
}

TEST_F(SdkTest, WorkerRequestedSavepointWithStopLeavesThePipelineStopped) {
  config_.pipelines = {TestSpec("p", {"0"}, 60000)};  // no periodic trigger in the way
  StartDaemon();
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0"});
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 1; }));  // the first checkpoint
  ASSERT_TRUE(Eventually([&] { return w.worker->IsConnected(); }));
  w.worker->RequestSavepoint("", /*stop=*/true);
  ASSERT_TRUE(Eventually(
      [&] { return w.last_complete_kind.load() == sdk::CheckpointKind::kSavepointAndStop; }));
  EXPECT_EQ(w.last_trigger_kind.load(), sdk::CheckpointKind::kSavepointAndStop);
  EXPECT_TRUE(Eventually([&] { return Describe("p").state == PipelineState::kStopped; }));
  auto history = daemon_->store().ListCompleted({"job", "p"}, 1);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().kind, CheckpointKind::kSavepointAndStop);
  EXPECT_EQ(history->front().location, config_.data_dir + "/savepoints/job/p/" +
                                           std::to_string(history->front().checkpoint_id));
}

TEST_F(SdkTest, SavepointWithoutATargetGoesUnderTheConfiguredRoot) {
  config_.pipelines = {TestSpec("p", {"0"}, 60000)};
  config_.savepoint_root = "s3://bucket/savepoints";
  StartDaemon();
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0"});
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 1; }));
  ASSERT_TRUE(Eventually([&] { return w.worker->IsConnected(); }));
  w.worker->RequestSavepoint("", /*stop=*/false);
  ASSERT_TRUE(
      Eventually([&] { return w.last_complete_kind.load() == sdk::CheckpointKind::kSavepoint; }));
  auto history = daemon_->store().ListCompleted({"job", "p"}, 1);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().location,
            "s3://bucket/savepoints/job/p/" + std::to_string(history->front().checkpoint_id));
}

TEST_F(SdkTest, AStreamTheDaemonEndsIsReportedInTheSdksOwnCodes) {
  StartDaemon();  // without the pipeline: the daemon ends the stream NOT_FOUND
  std::promise<sdk::Disconnect> first;
  std::atomic<bool> reported{false};
  sdk::PipelineHandlers handlers;
  handlers.on_disconnected = [&](const sdk::Disconnect& d) {
    if (!reported.exchange(true)) first.set_value(d);
  };
  sdk::WorkerRuntime runtime(Address());
  auto worker = runtime.AddPipeline(
      {.worker_id = "w", .job_id = "job", .pipeline_id = "nope", .task_ids = {"0"}},
      std::move(handlers));
  worker->Start();
  std::future<sdk::Disconnect> reported_future = first.get_future();
  ASSERT_EQ(reported_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const sdk::Disconnect d = reported_future.get();
  EXPECT_EQ(d.code, sdk::StatusCode::kNotFound) << sdk::ToString(d.code) << ": " << d.message;
  EXPECT_STREQ(sdk::ToString(d.code), "NOT_FOUND");
  EXPECT_FALSE(d.was_connected);
  EXPECT_TRUE(d.will_retry) << "a pipeline that may be created later is retried";
  worker->Stop();
}

TEST_F(SdkTest, StateChangesAndRefusedSavepointsReachTheHandlers) {
  StartDaemon();
  CreateThroughApi(TestSpec("p", {"0"}, 50));
  sdk::WorkerRuntime runtime(Address());
  AckingWorker w(runtime, "p", {"0"});
  ASSERT_TRUE(Eventually([&] { return w.completes.load() >= 1; }));
  auto runner = daemon_->pipelines().registry().Find({"job", "p"});
  std::promise<void> paused;
  runner->Pause([&](Status, const PipelineStatus&) { paused.set_value(); });
  paused.get_future().wait();
  ASSERT_TRUE(Eventually([&] { return w.last_state.load() == sdk::PipelineState::kPaused; }));
  w.worker->RequestSavepoint("", false);
  ASSERT_TRUE(Eventually([&] { return w.savepoints_refused.load() == 1; }));
  runner.reset();
  EXPECT_TRUE(DeleteThroughApi("p").ok());
  ASSERT_TRUE(Eventually([&] { return w.last_state.load() == sdk::PipelineState::kUnspecified; }))
      << "a deleted pipeline is announced with no state";
}

}  // namespace
}  // namespace ckpt::testing
