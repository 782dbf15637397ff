// The SDK reports its restore handler's outcome (docs/PROTOCOL.md, "Verified restore"), against a
// stand-in daemon whose welcome names a restore point: restore_result ok when on_welcome returns,
// ok false with the exception's message when it throws (and no commit then), and with
// restore_withheld no on_welcome at all, only on_state FAILED.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "support/eventually.h"

namespace ckpt::testing {
namespace {

// Welcomes every stream with `welcome` and records every message after the hello.
// Threading: the service runs on gRPC's sync threads; the accessors lock.
class WelcomingDaemon final : public v1::WorkerService::Service {
 public:
  explicit WelcomingDaemon(v1::Welcome welcome) : welcome_(std::move(welcome)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~WelcomingDaemon() override {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  std::vector<v1::WorkerMessage> received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  std::vector<v1::RestoreResult> results() const {
    std::vector<v1::RestoreResult> out;
    for (const auto& m : received()) {
      if (m.has_restore_result()) out.push_back(m.restore_result());
    }
    return out;
  }

  grpc::Status Connect(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
    v1::WorkerMessage message;
    if (!stream->Read(&message) || !message.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello first");
    }
    v1::CoordinatorMessage welcome;
    *welcome.mutable_welcome() = welcome_;
    stream->Write(welcome);
    while (stream->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(message);
    }
    return grpc::Status::OK;
  }

 private:
  const v1::Welcome welcome_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::vector<v1::WorkerMessage> received_;  // guarded by mu_
};

v1::Welcome WelcomeRestoring(int64_t checkpoint_id, bool commit_pending = false) {
  v1::Welcome w;
  w.set_session_id("s");
  w.set_heartbeat_interval_ms(200);
  w.set_state(v1::PIPELINE_STATE_RUNNING);
  w.set_last_completed_checkpoint_id(checkpoint_id);
  w.mutable_restore()->set_checkpoint_id(checkpoint_id);
  w.mutable_restore()->set_commit_pending(commit_pending);
  (*w.mutable_restore()->mutable_task_states())["0"].set_uri("mem://0");
  return w;
}

struct Worker {
  explicit Worker(const std::string& address, sdk::PipelineHandlers handlers) : runtime(address) {
    worker = runtime.AddPipeline(
        {.worker_id = "w", .job_id = "job", .pipeline_id = "p", .task_ids = {"0", "1"}},
        std::move(handlers));
    worker->Start();
  }
  sdk::WorkerRuntime runtime;
  std::shared_ptr<sdk::PipelineWorker> worker;
};

TEST(SdkRestoreResult, ARestoreHandlerThatReturnsIsReportedOk) {
  WelcomingDaemon daemon(WelcomeRestoring(42));
  std::atomic<int64_t> restored{0};
  sdk::PipelineHandlers handlers;
  handlers.on_welcome = [&](const sdk::Welcome& w) { restored = w.restore.checkpoint_id; };
  Worker w(daemon.address(), std::move(handlers));
  ASSERT_TRUE(Eventually([&] { return !daemon.results().empty(); }));
  const v1::RestoreResult result = daemon.results().front();
  EXPECT_EQ(restored.load(), 42);
  EXPECT_EQ(result.checkpoint_id(), 42);
  EXPECT_EQ(result.task_id(), "0") << "the stream's first task";
  EXPECT_TRUE(result.ok());
}

TEST(SdkRestoreResult, AnExceptionInTheRestoreHandlerIsAFailedRestoreAndCommitsNothing) {
  WelcomingDaemon daemon(WelcomeRestoring(42, /*commit_pending=*/true));
  std::atomic<int> commits{0};
  sdk::PipelineHandlers handlers;
  handlers.on_welcome = [](const sdk::Welcome&) {
    throw std::runtime_error("chk-42/0 is truncated");
  };
  handlers.on_commit = [&](int64_t) { ++commits; };
  Worker w(daemon.address(), std::move(handlers));
  ASSERT_TRUE(Eventually([&] { return !daemon.results().empty(); }));
  const v1::RestoreResult result = daemon.results().front();
  EXPECT_EQ(result.checkpoint_id(), 42);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.reason(), "chk-42/0 is truncated");
  // Give a wrong commit the time it would take: a heartbeat comes after it.
  const size_t seen = daemon.received().size();
  ASSERT_TRUE(Eventually([&] { return daemon.received().size() > seen; }));
  EXPECT_EQ(commits.load(), 0) << "a state that did not load is not committed";
  for (const auto& m : daemon.received()) EXPECT_FALSE(m.has_committed());
}

TEST(SdkRestoreResult, AFreshPipelineSendsNoResult) {
  v1::Welcome fresh = WelcomeRestoring(0);
  fresh.clear_restore();
  WelcomingDaemon daemon(fresh);
  std::atomic<int> welcomes{0};
  sdk::PipelineHandlers handlers;
  handlers.on_welcome = [&](const sdk::Welcome&) { ++welcomes; };
  Worker w(daemon.address(), std::move(handlers));
  ASSERT_TRUE(Eventually([&] { return welcomes.load() == 1 && !daemon.received().empty(); }));
  EXPECT_TRUE(daemon.results().empty());
}

TEST(SdkRestoreResult, AWithheldRestoreHoldsTheApplicationBack) {
  v1::Welcome withheld = WelcomeRestoring(0);
  withheld.clear_restore();
  withheld.set_state(v1::PIPELINE_STATE_FAILED);
  withheld.set_restore_withheld(true);
  WelcomingDaemon daemon(withheld);
  std::atomic<int> welcomes{0};
  std::atomic<bool> failed{false};
  sdk::PipelineHandlers handlers;
  handlers.on_welcome = [&](const sdk::Welcome&) { ++welcomes; };
  handlers.on_state = [&](sdk::PipelineState state, const std::string&) {
    if (state == sdk::PipelineState::kFailed) failed = true;
  };
  Worker w(daemon.address(), std::move(handlers));
  ASSERT_TRUE(Eventually([&] { return failed.load(); }));
  EXPECT_EQ(welcomes.load(), 0) << "on_welcome would start it as a fresh pipeline";
  EXPECT_TRUE(daemon.results().empty());
}

}  // namespace
}  // namespace ckpt::testing
