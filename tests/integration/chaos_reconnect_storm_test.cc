// A reconnect storm: the pipelines of one worker process come back by themselves after daemon
// restarts, and no stream of a failed attempt is left behind.
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "chaos_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

// A pipeline served through the SDK that acks every trigger at once.
struct StormWorker {
  std::shared_ptr<sdk::PipelineWorker> worker;
  std::atomic<int> completes{0};
  std::atomic<int64_t> last_complete{0};
  std::atomic<int> welcomes{0};
};

TEST_F(ChaosTest, ReconnectStormOf300PipelinesAfterRestartsLeaksNoSession) {
  constexpr int kPipelines = 300;
  config_.lease_ttl_ms = 3000;
  for (int i = 0; i < kPipelines; ++i) {
    config_.pipelines.push_back(TestSpec("p" + std::to_string(i), {"0"}, 100));
  }
  StartDaemon();
  config_.listen = Address();  // the restarted daemon comes back on the same port

  // Declared before the runtime: the handlers refer to them until the runtime is gone.
  std::vector<std::unique_ptr<StormWorker>> workers;
  auto runtime = std::make_unique<sdk::WorkerRuntime>(Address());
  for (int i = 0; i < kPipelines; ++i) {
    auto w = std::make_unique<StormWorker>();
    StormWorker* self = w.get();
    sdk::PipelineHandlers handlers;
    handlers.on_welcome = [self](const sdk::Welcome&) { ++self->welcomes; };
    handlers.on_trigger = [self](const sdk::Trigger& t) {
      self->worker->Ack(t.checkpoint_id, "0", {"mem://" + std::to_string(t.checkpoint_id), 1, ""});
    };
    handlers.on_complete = [self](int64_t id, sdk::CheckpointKind) {
      self->last_complete = std::max(self->last_complete.load(), id);
      ++self->completes;
    };
    w->worker = runtime->AddPipeline({.worker_id = "storm",
                                      .job_id = "job",
                                      .pipeline_id = "p" + std::to_string(i),
                                      .task_ids = {"0"},
                                      .backoff_initial = milliseconds(50),
                                      .backoff_max = milliseconds(500)},
                                     std::move(handlers));
    workers.push_back(std::move(w));
  }
  for (auto& w : workers) w->worker->Start();

  auto all_completed_after = [&](const std::vector<int64_t>& floor) {
    for (int i = 0; i < kPipelines; ++i) {
      if (workers[i]->last_complete.load() <= floor[i]) return false;
    }
    return true;
  };
  auto lagging = [&](const std::vector<int64_t>& floor) {
    std::string out;
    int n = 0;
    for (int i = 0; i < kPipelines; ++i) {
      if (workers[i]->last_complete.load() <= floor[i]) {
        if (++n <= 10) out += "p" + std::to_string(i) + " ";
      }
    }
    return std::to_string(n) + " pipeline(s) without a new checkpoint: " + out;
  };
  const std::vector<int64_t> zero(kPipelines, 0);
  ASSERT_TRUE(Eventually([&] { return all_completed_after(zero); }, milliseconds(60000)))
      << lagging(zero);
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == kPipelines; }))
      << daemon_->metrics().worker_sessions.load();

  // Restart twice: the second time in the middle of the reconnect storm the first one started.
  auto restart = [&] {
    daemon_->Shutdown();
    // The old daemon ended every stream: its session gauge drains to zero.
    EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }))
        << "old daemon still counts " << daemon_->metrics().worker_sessions.load() << " session(s)";
    daemon_.reset();
    StartDaemon();
    ASSERT_EQ(daemon_->grpc_port(), std::stoi(config_.listen.substr(config_.listen.find(':') + 1)));
  };
  restart();
  if (HasFatalFailure()) return;
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() >= 1; }));
  std::printf("second restart with %lld of %d sessions back\n",
              static_cast<long long>(daemon_->metrics().worker_sessions.load()), kPipelines);
  restart();
  if (HasFatalFailure()) return;
  std::vector<int64_t> before(kPipelines);
  for (int i = 0; i < kPipelines; ++i) before[i] = workers[i]->last_complete.load();

  ASSERT_TRUE(Eventually([&] { return all_completed_after(before); }, milliseconds(60000)))
      << lagging(before);
  // Exactly one live session per pipeline: no stream of a failed attempt left behind.
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == kPipelines; }))
      << daemon_->metrics().worker_sessions.load();
  int total_sessions = 0;
  for (int i = 0; i < kPipelines; ++i) {
    auto s = Describe("p" + std::to_string(i));
    EXPECT_EQ(s.sessions, 1) << "p" << i;
    EXPECT_EQ(s.state, PipelineState::kRunning) << "p" << i;
    total_sessions += s.sessions;
  }
  EXPECT_EQ(total_sessions, kPipelines);
  uint64_t reconnects = 0;
  for (auto& w : workers) {
    EXPECT_TRUE(w->worker->IsConnected());
    EXPECT_FALSE(w->worker->IsStopped());
    reconnects += w->worker->counters().reconnects;
  }
  EXPECT_GE(reconnects, static_cast<uint64_t>(kPipelines));  // at least once each
  std::printf("reconnect storm: %d pipelines reconnected (%llu reconnects in all)\n", kPipelines,
              static_cast<unsigned long long>(reconnects));

  // Destroying the runtime cancels every stream: the daemon sees all of them gone.
  runtime.reset();
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }))
      << daemon_->metrics().worker_sessions.load() << " session(s) left after the runtime is gone";
  EXPECT_TRUE(Eventually([&] {
    for (int i = 0; i < kPipelines; ++i) {
      if (Describe("p" + std::to_string(i)).sessions != 0) return false;
    }
    return true;
  }));
}

}  // namespace
}  // namespace ckpt::testing
