// SIGHUP's work (Daemon::Reload): declared pipelines created or updated, API-created ones left
// alone, defaults and log level applied, restart-only keys reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>

#include "daemon_fixture.h"
#include "forwarding_store.h"
#include "sqlite/sqlite_store.h"

namespace ckpt::testing {
namespace {

class ReloadTest : public DaemonTest {
 protected:
  void TearDown() override {
    spdlog::set_level(spdlog::level::info);  // the level is process-wide
    DaemonTest::TearDown();
  }
  bool Has(const std::vector<std::string>& keys, const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  }
};

TEST_F(ReloadTest, AppliesDeclaredPipelinesAndLeavesApiOnesAlone) {
  config_.pipelines = {TestSpec("declared", {"0"}, 100)};
  StartDaemon();
  CreateThroughApi(TestSpec("api", {"0"}, 100));

  DaemonConfig next = config_;
  next.pipelines = {TestSpec("declared", {"0", "1"}, 200), TestSpec("fresh", {"0"}, 300),
                    TestSpec("api", {"0"}, 999)};
  ReloadResult result = daemon_->Reload(next);
  EXPECT_EQ(result.updated, 1);
  EXPECT_EQ(result.created, 1);
  EXPECT_EQ(result.left_alone, 1);
  EXPECT_EQ(result.failed, 0);
  EXPECT_TRUE(result.needs_restart.empty());

  PipelineStatus declared = Describe("declared");
  EXPECT_EQ(declared.spec.interval_ms, 200);
  EXPECT_EQ(declared.spec.task_ids, (std::vector<std::string>{"0", "1"}));
  PipelineStatus fresh = Describe("fresh");
  EXPECT_EQ(fresh.spec.interval_ms, 300);
  EXPECT_TRUE(fresh.from_config);
  PipelineStatus api = Describe("api");
  EXPECT_EQ(api.spec.interval_ms, 100) << "a reload must not touch an API-created pipeline";
  EXPECT_FALSE(api.from_config);

  // The same file again changes nothing.
  result = daemon_->Reload(next);
  EXPECT_EQ(result.unchanged, 2);
  EXPECT_EQ(result.created + result.updated, 0);
  EXPECT_EQ(result.left_alone, 1);

  // What a reload created or updated is durable, and still marked as declared; a start with the
  // same file treats the API-created pipeline as a reload does.
  config_ = next;
  StopDaemon();
  StartDaemon();
  EXPECT_EQ(Describe("fresh").spec.interval_ms, 300);
  EXPECT_TRUE(Describe("fresh").from_config);
  EXPECT_EQ(Describe("declared").spec.interval_ms, 200);
  EXPECT_EQ(Describe("api").spec.interval_ms, 100) << "a start must not rewrite it either";
  EXPECT_FALSE(Describe("api").from_config);
}

TEST_F(ReloadTest, DeclaredPipelineCannotBeDeletedUntilTheFileDropsIt) {
  config_.source_path = "/etc/ckptd/ckptd.yaml";
  config_.pipelines = {TestSpec("declared", {"0"}), TestSpec("kept", {"0"})};
  StartDaemon();
  Status refused = DeleteThroughApi("declared");
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.message().find("/etc/ckptd/ckptd.yaml"), std::string::npos)
      << "the error names the file: " << refused.message();
  EXPECT_NE(daemon_->pipelines().registry().Find({"job", "declared"}), nullptr) << "still there";

  // The file drops it: a reload hands it to the API, which may now delete it.
  DaemonConfig next = config_;
  next.pipelines = {TestSpec("kept", {"0"})};
  ReloadResult result = daemon_->Reload(next);
  EXPECT_EQ(result.undeclared, 1);
  EXPECT_EQ(result.unchanged, 1);
  EXPECT_FALSE(Describe("declared").from_config);
  EXPECT_TRUE(Describe("kept").from_config);
  Status deleted = DeleteThroughApi("declared");
  EXPECT_TRUE(deleted.ok()) << deleted.ToString();
  EXPECT_EQ(DeleteThroughApi("kept").code(), StatusCode::kFailedPrecondition);
}

TEST_F(ReloadTest, StartWithAFileThatNoLongerDeclaresAPipelineHandsItToTheApi) {
  config_.pipelines = {TestSpec("gone", {"0"})};
  StartDaemon();
  EXPECT_TRUE(Describe("gone").from_config);
  config_.pipelines.clear();
  StopDaemon();
  StartDaemon();
  EXPECT_FALSE(Describe("gone").from_config);
  StopDaemon();
  StartDaemon();  // and that is durable
  EXPECT_FALSE(Describe("gone").from_config);
  EXPECT_TRUE(DeleteThroughApi("gone").ok());
}

// Between Hold() and Release(), holds every PutPipeline back, so that a test can have two creates
// in flight at once. Threading: any thread; the gate is guarded by mu_.
class GatedStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  void Hold() {
    std::lock_guard lock(mu_);
    released_ = false;
  }
  size_t Held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  void Release() {
    std::vector<std::pair<PipelineRecord, Done>> held;
    {
      std::lock_guard lock(mu_);
      released_ = true;
      held.swap(held_);
    }
    for (auto& [record, done] : held) inner().PutPipeline(record, std::move(done));
  }
  void PutPipeline(const PipelineRecord& record, Done done) override {
    {
      std::lock_guard lock(mu_);
      if (!released_) {
        held_.emplace_back(record, std::move(done));
        return;
      }
    }
    inner().PutPipeline(record, std::move(done));
  }

 private:
  std::mutex mu_;
  bool released_ = true;                               // guarded by mu_
  std::vector<std::pair<PipelineRecord, Done>> held_;  // guarded by mu_
};

TEST_F(ReloadTest, TwoCreatesOfOneKeyInFlightLeaveTheWinnersRecord) {
  auto gated = std::make_unique<GatedStore>(OpenSqlite());
  GatedStore* gate = gated.get();
  StartDaemonWith(std::move(gated));

  // Both creates are in flight before either record is written.
  std::promise<Result<std::shared_ptr<PipelineRunner>>> first, second;
  gate->Hold();
  daemon_->pipelines().Create(
      TestSpec("twice", {"0"}, 100),
      [&](Result<std::shared_ptr<PipelineRunner>> r) { first.set_value(r); });
  daemon_->pipelines().Create(
      TestSpec("twice", {"0"}, 777),
      [&](Result<std::shared_ptr<PipelineRunner>> r) { second.set_value(r); });
  EXPECT_EQ(gate->Held(), 1u) << "the refused create must not write a record of its own";
  gate->Release();
  {
    // (Scoped: a runner must not outlive the daemon's io_context.)
    auto a = first.get_future().get();
    auto b = second.get_future().get();
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_FALSE(b.ok()) << "the second create must be refused while the first is in flight";
    EXPECT_EQ(b.status().code(), StatusCode::kAlreadyExists);
  }
  EXPECT_EQ(Describe("twice").spec.interval_ms, 100);
  StopDaemon();
  StartDaemon();
  EXPECT_EQ(Describe("twice").spec.interval_ms, 100)
      << "the refused create must not have overwritten the stored record";
}

TEST_F(ReloadTest, InvalidDeclaredPipelineFailsAloneAndTheRestApplies) {
  StartDaemon();
  DaemonConfig next = config_;
  PipelineSpec bad = TestSpec("bad", {"0"}, 5);  // below the 10 ms minimum
  next.pipelines = {bad, TestSpec("good", {"0"})};
  ReloadResult result = daemon_->Reload(next);
  EXPECT_EQ(result.failed, 1);
  EXPECT_EQ(result.created, 1);
  EXPECT_EQ(daemon_->pipelines().registry().Find({"job", "bad"}), nullptr);
  EXPECT_NE(daemon_->pipelines().registry().Find({"job", "good"}), nullptr);
}

TEST_F(ReloadTest, LogLevelDefaultsAndPerPipelineMetricsApply) {
  StartDaemon();
  DaemonConfig next = config_;
  next.log_level = "debug";
  next.defaults.interval_ms = 4321;
  next.metrics_per_pipeline = true;
  next.pipelines = {TestSpec("p", {"0"})};
  daemon_->Reload(next);
  EXPECT_EQ(spdlog::get_level(), spdlog::level::debug);
  EXPECT_EQ(daemon_->pipelines().defaults().interval_ms, 4321);
  EXPECT_NE(daemon_->MetricsText().find("ckptd_pipeline_state{job_id=\"job\",pipeline_id=\"p\""),
            std::string::npos);
}

TEST_F(ReloadTest, RestartOnlyKeysAreReportedAndKept) {
  StartDaemon();
  DaemonConfig next = config_;
  next.listen = "127.0.0.1:1";
  next.metrics_listen = "";
  next.data_dir = "/elsewhere";
  next.threads = 7;
  next.lease_ttl_ms = 9000;
  next.log_format = "json";
  next.advertise = "ckptd-b.internal:7070";
  next.etcd.prefix = "/elsewhere";
  next.store_writer_nice = -5;
  ReloadResult result = daemon_->Reload(next);
  for (const char* key : {"listen", "metrics_listen", "data_dir", "threads", "lease_ttl_ms",
                          "log.format", "advertise", "store.etcd", "store.writer_nice"}) {
    EXPECT_TRUE(Has(result.needs_restart, key)) << key;
  }
  EXPECT_FALSE(Has(result.needs_restart, "heartbeat_interval_ms"));
  EXPECT_EQ(daemon_->config().listen, "127.0.0.1:0") << "the running value is kept";
  EXPECT_GT(daemon_->metrics_port(), 0);
}

}  // namespace
}  // namespace ckpt::testing
