#pragma once
// The fixture of the chaos tests (chaos_*_test.cc), which try to break the daemon: a daemon with a
// long lease (RawWorker does not heartbeat), an admin stub, and the checks they end with: a stream
// ends with a given status, and a normal round still completes after the abuse.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"
#include "raw_worker.h"

namespace ckpt::testing {

class ChaosTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    // RawWorker does not heartbeat: a lease long enough that no test stream loses it by accident.
    config_.lease_ttl_ms = 30000;
  }

  void StartAdmin() {
    StartDaemon();
    admin_ = v1::AdminService::NewStub(channel_);
  }

  std::string Address() { return "127.0.0.1:" + std::to_string(daemon_->grpc_port()); }

  // A fresh stream takes `tasks` of `pipeline` over and one round completes on it, end to end.
  // trigger_now: start the round with TriggerCheckpoint (for pipelines with a long interval).
  void ExpectNormalRound(const std::string& pipeline, const std::vector<std::string>& tasks,
                         bool trigger_now = false) {
    RawWorker w(channel_);
    w.Hello("job", pipeline, tasks, /*takeover=*/true, "healthy");
    ASSERT_TRUE(w.WaitWelcome()) << "hello refused: " << EndStatusText(w);
    if (trigger_now) {
      auto admin = v1::AdminService::NewStub(channel_);
      v1::PipelineRef ref;
      ref.set_job_id("job");
      ref.set_pipeline_id(pipeline);
      v1::CheckpointInfo info;
      grpc::ClientContext ctx;
      auto s = admin->TriggerCheckpoint(&ctx, ref, &info);
      ASSERT_TRUE(s.ok()) << "TriggerCheckpoint: " << s.error_message();
    }
    auto trigger = w.WaitTrigger();
    ASSERT_TRUE(trigger) << "no trigger on " << pipeline;
    const int64_t id = trigger->trigger().checkpoint_id();
    for (const auto& t : tasks) w.Ack(id, t);
    auto complete = w.WaitFor(
        [id](const auto& m) { return m.has_complete() && m.complete().checkpoint_id() == id; });
    ASSERT_TRUE(complete) << "checkpoint " << id << " of " << pipeline << " did not complete";
  }

  static std::string EndStatusText(RawWorker& w) {
    auto s = w.WaitEnd(milliseconds(0));
    if (!s) return "(stream still open)";
    return std::to_string(s->error_code()) + " " + s->error_message();
  }

  // The status a stream ends with after sending `send`, checked for code and message.
  void ExpectStreamEnds(const std::function<void(RawWorker&)>& send, grpc::StatusCode code,
                        const std::string& message_part, const std::string& what) {
    SCOPED_TRACE(what);
    RawWorker w(channel_);
    send(w);
    auto status = w.WaitEnd();
    ASSERT_TRUE(status.has_value()) << "stream not ended";
    EXPECT_EQ(status->error_code(), code) << status->error_message();
    EXPECT_NE(status->error_message().find(message_part), std::string::npos)
        << "message \"" << status->error_message() << "\" does not mention \"" << message_part
        << "\"";
  }

  grpc::Status CreateRaw(const v1::PipelineSpec& spec) {
    grpc::ClientContext ctx;
    v1::Pipeline reply;
    return admin_->CreatePipeline(&ctx, spec, &reply);
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

}  // namespace ckpt::testing
