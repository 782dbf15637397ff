#pragma once
// A real ckptd in process: gRPC on 127.0.0.1:0, a SQLite file in a fresh temp dir, removed after.
//
// Time: the daemon's leases, timeouts and intervals run on DaemonClock (common/daemon_clock.h).
// A test lets a long lease or timeout run out with MoveDaemonClock instead of waiting for it; the
// move is for the whole process (each test runs in a process of its own under ctest) and only
// forward. Short configured durations (lease_ttl_ms 300, intervals of 50 ms) are the other way.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <future>
#include <random>

#include <spdlog/spdlog.h>

#include "app/daemon.h"
#include "sqlite/sqlite_store.h"
#include "support/eventually.h"

namespace ckpt::testing {

inline PipelineSpec TestSpec(const std::string& pipeline, std::vector<std::string> tasks,
                             int64_t interval_ms = 100, int64_t timeout_ms = 10000) {
  PipelineSpec spec;
  spec.key = {"job", pipeline};
  spec.task_ids = std::move(tasks);
  spec.interval_ms = interval_ms;
  spec.timeout_ms = timeout_ms;
  spec.retained = 1000;
  return spec;
}

// Moves the clock of every daemon timer in this process forward by `by` (see above).
inline void MoveDaemonClock(std::chrono::steady_clock::duration by) {
  DaemonClock::AdvanceForTest(by);
}

// Every pipeline loop of `daemon` busy in a handler that waits, from construction (which returns
// once each loop is in it; wedged() is false if one never got there) until Release or
// destruction: what a test needs to show that something does not wait for a pipeline's loop.
// Released on destruction too, so that a failed assertion never leaves the daemon stuck.
class WedgedLoops {
 public:
  explicit WedgedLoops(Daemon& daemon) : released_(release_.get_future().share()) {
    const size_t loops = daemon.shards().size();
    for (size_t i = 0; i < loops; ++i) {
      boost::asio::post(daemon.shards().at(i), [released = released_, in = in_] {
        ++*in;
        released.wait();
      });
    }
    wedged_ = Eventually([&] { return in_->load() == static_cast<int>(loops); });
  }
  ~WedgedLoops() { Release(); }
  WedgedLoops(const WedgedLoops&) = delete;
  WedgedLoops& operator=(const WedgedLoops&) = delete;

  bool wedged() const { return wedged_; }
  void Release() {
    if (!released_once_) release_.set_value();
    released_once_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_;
  std::shared_ptr<std::atomic<int>> in_ = std::make_shared<std::atomic<int>>(0);
  bool wedged_ = false;
  bool released_once_ = false;
};

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    data_dir_ = std::filesystem::temp_directory_path() /
                ("ckptd-it-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    config_.listen = "127.0.0.1:0";
    config_.metrics_listen = "127.0.0.1:0";  // never the default port: tests run side by side
    config_.data_dir = data_dir_.string();
    config_.threads = 2;
    // First triggers within a second of the tasks registering, as tests of pipelines with long
    // intervals expect; the default (the whole interval) is start_spread's own tests' subject.
    config_.start_spread_ms = 1000;
    config_.lease_ttl_ms = 3000;
    config_.heartbeat_interval_ms = 1000;
    config_.shutdown_grace_ms = 1000;
    // The writer's priority is the end-to-end tests' (test_daemon_cli.py): here it stays the
    // test's, whatever this process may do.
    config_.store_writer_nice = 0;
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(data_dir_);
  }

  void StartDaemon() {
    if (getenv("CKPT_TEST_DEBUG")) spdlog::set_level(spdlog::level::debug);
    daemon_ = std::make_unique<Daemon>(config_);
    Status s = daemon_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(daemon_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }
  // The SQLite store of data_dir_, to wrap (a fault-injecting store, say) for StartDaemonWith.
  std::unique_ptr<SqliteStore> OpenSqlite() {
    auto store = SqliteStore::Open(config_.data_dir);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  // A daemon over `store` instead of the one it would open.
  void StartDaemonWith(std::unique_ptr<MetadataStore> store) {
    daemon_ = std::make_unique<Daemon>(config_, std::move(store));
    Status s = daemon_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(daemon_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }
  void StopDaemon() {
    daemon_->Shutdown();
    daemon_.reset();
  }

  // Creates a pipeline as the AdminService does (not declared in the config file).
  void CreateThroughApi(const PipelineSpec& spec) {
    std::promise<Status> created;
    daemon_->pipelines().Create(spec, [&](Result<std::shared_ptr<PipelineRunner>> r) {
      created.set_value(r.ok() ? Status::Ok() : r.status());
    });
    Status s = created.get_future().get();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Deletes a pipeline as the AdminService does; returns its outcome.
  Status DeleteThroughApi(const std::string& pipeline) {
    auto runner = daemon_->pipelines().registry().Find({"job", pipeline});
    if (!runner) return Status::NotFound("no pipeline " + pipeline);
    std::promise<Status> deleted;
    daemon_->pipelines().Delete(runner, [&](Status s) { deleted.set_value(s); });
    return deleted.get_future().get();
  }

  // The coordinator's status, read on its strand.
  PipelineStatus Describe(const std::string& pipeline, const std::string& job = "job") {
    auto runner = daemon_->pipelines().registry().Find({job, pipeline});
    EXPECT_NE(runner, nullptr);
    std::promise<PipelineStatus> p;
    runner->Inspect([&p](const PipelineCoordinator& c) { p.set_value(c.Describe()); });
    return p.get_future().get();
  }

  Explanation Explain(const std::string& pipeline) {
    auto runner = daemon_->pipelines().registry().Find({"job", pipeline});
    EXPECT_NE(runner, nullptr);
    std::promise<Explanation> p;
    runner->Inspect([&p](const PipelineCoordinator& c) { p.set_value(c.Explain()); });
    return p.get_future().get();
  }

  std::filesystem::path data_dir_;
  DaemonConfig config_;
  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace ckpt::testing
