// The worker SDK over WorkerService.Session: many pipelines of one process on one call, a
// pipeline stopped or leaving without the others, Connect on request, and the fallback to
// Connect where the daemon has no Session.
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <atomic>
#include <memory>
#include <vector>

#include "acking_worker.h"
#include "ckpt/v1/worker.grpc.pb.h"
#include "daemon_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class SdkSessionTest : public DaemonTest {
 protected:
  std::string Address() { return "127.0.0.1:" + std::to_string(daemon_->grpc_port()); }
};

TEST_F(SdkSessionTest, AThousandPipelinesOfOneProcessShareOneSession) {
  constexpr int kPipelines = 1000;
  for (int i = 0; i < kPipelines; ++i) {
    config_.pipelines.push_back(TestSpec("p" + std::to_string(i), {"0"}, /*interval_ms=*/200));
  }
  StartDaemon();
  sdk::WorkerRuntime runtime(Address(), /*threads=*/2);
  std::vector<std::unique_ptr<AckingWorker>> workers;
  for (int i = 0; i < kPipelines; ++i) {
    workers.push_back(std::make_unique<AckingWorker>(runtime, "p" + std::to_string(i),
                                                     std::vector<std::string>{"0"}));
  }
  const auto& m = daemon_->metrics();
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& w : workers) {
          if (w->completes.load() < 2) return false;
        }
        return true;
      },
      seconds(120)))
      << "every pipeline completed two rounds";
  EXPECT_EQ(m.session_calls.load(), 1) << "one call for the whole process";
  EXPECT_EQ(m.worker_sessions.load(), kPipelines) << "a channel per pipeline";
  // Frames first: rounds go on while the two are read, and envelopes only grow.
  const auto frames = m.session_frames_written_total.load();
  const auto envelopes = m.session_envelopes_written_total.load();
  EXPECT_GT(envelopes, frames) << "frames carried many envelopes";
  EXPECT_GT(m.session_frames_read_total.load(), 0u);
  for (auto& w : workers) w->worker->Goodbye();
  for (auto& w : workers) {
    ASSERT_TRUE(w->worker->WaitUntilStopped(std::chrono::steady_clock::now() + seconds(30)));
  }
  EXPECT_TRUE(Eventually([&] { return m.worker_sessions.load() == 0; }));
  EXPECT_TRUE(Eventually([&] { return m.session_calls.load() == 0; }))
      << "the call ends with its last channel";
}

TEST_F(SdkSessionTest, APipelineStoppedOrLeavingEndsItsChannelOnly) {
  config_.pipelines = {TestSpec("p", {"0"}, 50), TestSpec("q", {"0"}, 50),
                       TestSpec("r", {"0"}, 50)};
  StartDaemon();
  sdk::WorkerRuntime runtime(Address());
  auto p = std::make_unique<AckingWorker>(runtime, "p", std::vector<std::string>{"0"});
  auto q = std::make_unique<AckingWorker>(runtime, "q", std::vector<std::string>{"0"});
  AckingWorker r(runtime, "r", {"0"});
  ASSERT_TRUE(
      Eventually([&] { return p->completes >= 1 && q->completes >= 1 && r.completes >= 1; }));
  const auto& m = daemon_->metrics();
  EXPECT_EQ(m.session_calls.load(), 1);
  p->worker->Stop();  // the channel goes at once: a goodbye on it, the call goes on
  EXPECT_TRUE(p->worker->WaitUntilStopped(std::chrono::steady_clock::now() + seconds(10)));
  q->worker->Goodbye();
  ASSERT_TRUE(q->worker->WaitUntilStopped(std::chrono::steady_clock::now() + seconds(10)));
  EXPECT_TRUE(Eventually([&] {
    return Describe("p").state == PipelineState::kWaitingForTasks &&
           Describe("q").state == PipelineState::kWaitingForTasks;
  }));
  const int64_t before = r.completes.load();
  EXPECT_TRUE(Eventually([&] { return r.completes.load() >= before + 3; }))
      << "the other pipeline of the call goes on";
  EXPECT_EQ(m.session_calls.load(), 1);
  EXPECT_EQ(m.worker_sessions.load(), 1);
  // A pipeline started again on the same runtime gets a new channel on the same call.
  p.reset();
  AckingWorker again(runtime, "p", {"0"});
  EXPECT_TRUE(Eventually([&] { return again.completes.load() >= 1; }));
  EXPECT_EQ(m.session_calls.load(), 1);
}

TEST_F(SdkSessionTest, TheConnectTransportOpensAStreamPerPipeline) {
  config_.pipelines = {TestSpec("p", {"0"}, 50), TestSpec("q", {"0"}, 50)};
  StartDaemon();
  sdk::WorkerRuntimeOptions options;
  options.server_address = Address();
  options.transport = sdk::WorkerTransport::kConnect;
  sdk::WorkerRuntime runtime(options);
  AckingWorker p(runtime, "p", {"0"});
  AckingWorker q(runtime, "q", {"0"});
  ASSERT_TRUE(Eventually([&] { return p.completes >= 2 && q.completes >= 2; }));
  EXPECT_EQ(daemon_->metrics().session_calls.load(), 0);
  EXPECT_EQ(daemon_->metrics().worker_sessions.load(), 2);
}

// A daemon from before Session: WorkerService with Connect only. It welcomes every hello and
// counts the streams.
class ConnectOnlyDaemon final : public v1::WorkerService::Service {
 public:
  grpc::Status Connect(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
    ++streams;
    v1::WorkerMessage in;
    while (stream->Read(&in)) {
      if (in.has_hello()) {
        v1::CoordinatorMessage welcome;
        welcome.mutable_welcome()->set_session_id("1");
        welcome.mutable_welcome()->set_state(v1::PIPELINE_STATE_RUNNING);
        stream->Write(welcome);
      }
      if (in.has_goodbye()) return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }
  std::atomic<int> streams{0};
};

TEST(SdkSessionFallbackTest, WhereTheDaemonHasNoSessionEachPipelineUsesConnect) {
  ConnectOnlyDaemon service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_TRUE(server);
  {
    sdk::WorkerRuntime runtime("127.0.0.1:" + std::to_string(port));
    std::atomic<int> welcomes{0};
    std::vector<std::shared_ptr<sdk::PipelineWorker>> workers;
    for (const char* pipeline : {"p", "q"}) {
      sdk::PipelineHandlers handlers;
      handlers.on_welcome = [&](const sdk::Welcome&) { ++welcomes; };
      workers.push_back(runtime.AddPipeline(
          {.worker_id = "w", .job_id = "job", .pipeline_id = pipeline, .task_ids = {"0"}},
          std::move(handlers)));
      workers.back()->Start();
    }
    ASSERT_TRUE(Eventually([&] { return welcomes.load() == 2; }))
        << "both pipelines welcomed over Connect";
    EXPECT_EQ(service.streams.load(), 2);
    for (auto& w : workers) EXPECT_TRUE(w->IsConnected());
    for (auto& w : workers) w->Goodbye();
    for (auto& w : workers) {
      EXPECT_TRUE(w->WaitUntilStopped(std::chrono::steady_clock::now() + seconds(10)));
    }
  }
  server->Shutdown();
}

}  // namespace
}  // namespace ckpt::testing
