// Input that once took the daemon down or slipped past a rule (docs/SECURITY.md, "Availability
// in depth"): a malformed restore_from (an assertion in a Debug build), ids holding invisible
// format characters, a savepoint at the savepoint cap (was OK with a FAILED progress), a worker's
// savepoint target outside its job's directory or over 4,096 bytes (ended the whole stream), two
// authorization headers (the first won), and a worker of one job stopping another job's
// pipeline through an alignment group.
#include <gtest/gtest.h>

#include <set>

#include <condition_variable>
#include <mutex>
#include "auth/token_digest.h"

#include "chaos_fixture.h"
#include "forwarding_store.h"
#include "log_tap.h"
#include "rpc/status_mapping.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

// The message after "\xe2\x80\xae" (U+202E) reads backwards in a terminal.
const std::string kRightToLeftOverride = "\xe2\x80\xae";

TEST_F(ChaosTest, AMalformedRestoreFromIsInvalidArgumentAndEndsNothing) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartAdmin();
  struct Case {
    std::string what;
    std::string job, pipeline;
    int64_t checkpoint_id;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"a negative checkpoint id", "job", "p", -1, "restore_from.checkpoint_id"},
      {"INT64_MIN", "job", "p", std::numeric_limits<int64_t>::min(), "restore_from.checkpoint_id"},
      {"an empty job id", "", "p", 0, "restore_from.job_id"},
      {"an empty pipeline id", "job", "", 0, "restore_from.pipeline_id"},
      {"a control character", "jo\nb", "p", 0, "restore_from.job_id"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    v1::PipelineSpec spec;
    spec.set_job_id("job");
    spec.set_pipeline_id("restored");
    spec.add_task_ids("a");
    spec.mutable_restore_from()->set_job_id(c.job);
    spec.mutable_restore_from()->set_pipeline_id(c.pipeline);
    spec.mutable_restore_from()->set_checkpoint_id(c.checkpoint_id);
    auto s = CreateRaw(spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(c.field), std::string::npos) << s.error_message();
  }
  ExpectNormalRound("p", {"a"});
}

TEST_F(ChaosTest, IdsHoldingInvisibleFormatCharactersAreRefused) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartAdmin();
  v1::PipelineSpec spec;
  spec.set_job_id("job");
  spec.set_pipeline_id("gnp" + kRightToLeftOverride + "exe");
  spec.add_task_ids("a");
  auto s = CreateRaw(spec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("format character"), std::string::npos) << s.error_message();
  ExpectStreamEnds(
      [](RawWorker& w) { w.Hello("job", "p", {"a"}, false, "w" + kRightToLeftOverride + "1"); },
      grpc::StatusCode::INVALID_ARGUMENT, "format character", "a worker id with U+202E");
  ExpectNormalRound("p", {"a"});
}

TEST_F(ChaosTest, ASavepointAtTheSavepointCapIsResourceExhaustedNamingTheLimit) {
  config_.pipelines = {TestSpec("p", {"a"}, 600000)};
  config_.limits.max_savepoints_per_pipeline = 1;
  StartAdmin();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  ASSERT_TRUE(w.WaitWelcome());
  auto savepoint = [&](std::vector<v1::SavepointProgress>* seen) {
    v1::TriggerSavepointRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto reader = admin_->TriggerSavepoint(&ctx, req);
    v1::SavepointProgress progress;
    while (reader->Read(&progress)) {
      seen->push_back(progress);
      if (progress.final()) continue;
      if (auto t = w.WaitTrigger(milliseconds(100))) w.Ack(t->trigger().checkpoint_id(), "a");
    }
    return reader->Finish();
  };
  std::vector<v1::SavepointProgress> first;
  ASSERT_TRUE(savepoint(&first).ok());
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(first.back().status(), v1::SAVEPOINT_STATUS_COMPLETED);
  std::vector<v1::SavepointProgress> second;
  const grpc::Status refused = savepoint(&second);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("limits.max_savepoints_per_pipeline (1)"),
            std::string::npos)
      << refused.error_message();
  EXPECT_GE(daemon_->metrics()
                .limit_refusals_total[static_cast<size_t>(CountedLimit::kMaxSavepointsPerPipeline)]
                .load(),
            1u);
}

TEST_F(ChaosTest, AWorkersSavepointTargetOutsideItsJobOrOverlongIsRefusedAndTheStreamGoesOn) {
  PipelineSpec spec = TestSpec("p", {"a"});
  // Rounds that start while the test waits for each refusal go unacknowledged and expire: they
  // must not fail the pipeline (a slow sanitizer build meets several), nor hold the next round
  // long (the first comes at once: its trigger may pass while the test reads the refusals).
  spec.tolerable_failures = 1000;
  spec.timeout_ms = 1000;
  config_.pipelines = {spec};
  config_.savepoint_root = (data_dir_ / "savepoints").string();
  StartAdmin();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  ASSERT_TRUE(w.WaitWelcome());
  const std::string root = config_.savepoint_root;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {root + "/billing/p/1", "must lie under " + root + "/job/"},
      {root + "/job/../billing/x", "must lie under"},
      {root + "/" + std::string(4097, 'x'), "longer than 4096 bytes"},
  };
  for (const auto& [target, reason] : cases) {
    SCOPED_TRACE(target.substr(0, 80));
    ASSERT_TRUE(w.SavepointRequest(target, /*stop=*/true));
    auto refused = w.WaitFor([](const auto& m) { return m.has_savepoint_refused(); });
    ASSERT_TRUE(refused) << "no savepoint_refused; the stream ended with " << EndStatusText(w);
    EXPECT_NE(refused->savepoint_refused().reason().find(reason), std::string::npos)
        << refused->savepoint_refused().reason();
  }
  // The stream is still up and serves the next round.
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger) << EndStatusText(w);
  EXPECT_EQ(trigger->trigger().kind(), v1::CHECKPOINT_KIND_CHECKPOINT) << "nothing was stopped";
  w.Ack(trigger->trigger().checkpoint_id(), "a");
  EXPECT_TRUE(w.WaitComplete());
  // One under the job's own directory is taken.
  ASSERT_TRUE(w.SavepointRequest(root + "/job/p/mine", false));
  auto savepoint = w.WaitFor([](const auto& m) {
    return m.has_trigger() && m.trigger().kind() == v1::CHECKPOINT_KIND_SAVEPOINT;
  });
  ASSERT_TRUE(savepoint) << EndStatusText(w);
  EXPECT_EQ(savepoint->trigger().target(), root + "/job/p/mine");
}

TEST_F(ChaosTest, AuditLinesNameTheTargetOfEveryMutation) {
  config_.pipelines = {TestSpec("p", {"a"})};
  LogTap log(256);
  StartAdmin();
  auto call = [](auto method) {
    grpc::ClientContext ctx;
    return method(&ctx);
  };
  call([&](grpc::ClientContext* ctx) {
    v1::DeleteCheckpointRequest req;
    req.mutable_pipeline()->set_job_id("job");
    req.mutable_pipeline()->set_pipeline_id("p");
    req.set_checkpoint_id(42);
    v1::DeleteCheckpointResponse resp;
    return admin_->DeleteCheckpoint(ctx, req, &resp);
  });
  call([&](grpc::ClientContext* ctx) {
    v1::RestorePipelineRequest req;
    req.mutable_pipeline()->set_job_id("job");
    req.mutable_pipeline()->set_pipeline_id("p");
    req.mutable_from()->set_job_id("old");
    req.mutable_from()->set_pipeline_id("q");
    req.mutable_from()->set_checkpoint_id(7);
    v1::Pipeline resp;
    return admin_->RestorePipeline(ctx, req, &resp);
  });
  call([&](grpc::ClientContext* ctx) {
    v1::AlignmentGroupSpec req;
    req.set_name("ledger");
    req.set_interval_ms(1000);
    req.set_timeout_ms(1000);
    v1::AlignmentGroup resp;
    return admin_->PutAlignmentGroup(ctx, req, &resp);
  });
  call([&](grpc::ClientContext* ctx) {
    v1::AlignmentGroupRef req;
    req.set_name("ledger");
    v1::DeleteAlignmentGroupResponse resp;
    return admin_->DeleteAlignmentGroup(ctx, req, &resp);
  });
  std::vector<std::string> audit;
  for (const std::string& line : log.Lines()) {
    if (line.find("audit:") != std::string::npos) audit.push_back(line);
  }
  auto logged = [&](const std::string& method, const std::string& target) {
    for (const std::string& line : audit) {
      if (line.find("method=" + method + " ") != std::string::npos &&
          line.find(target) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(logged("DeleteCheckpoint", "job=job pipeline=p checkpoint=42 outcome=NOT_FOUND"));
  EXPECT_TRUE(logged("RestorePipeline", "job=job pipeline=p from=old/q@7 outcome="));
  EXPECT_TRUE(logged("PutAlignmentGroup", "group=ledger outcome=OK"));
  EXPECT_TRUE(logged("DeleteAlignmentGroup", "group=ledger outcome=OK"));
}

TEST(GrpcCodeName, EveryCodeHasItsOwnName) {
  std::set<std::string> names;
  for (int code = 0; code <= 16; ++code) {
    const std::string name = GrpcCodeName(static_cast<grpc::StatusCode>(code));
    EXPECT_TRUE(names.insert(name).second) << code << " shares the name " << name;
  }
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::UNIMPLEMENTED), "UNIMPLEMENTED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::OUT_OF_RANGE), "OUT_OF_RANGE");
}

// A store whose ListCompleted waits until released: reads that take the store's time.
class SlowReadsStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id) override {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    lock.unlock();
    return ForwardingStore::ListCompleted(key, limit, before_id);
  }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_ > 0; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool released_ = false;
};

TEST_F(ChaosTest, ReadsThatWaitOnTheStoreDelayNoCreateAndWaitInABoundedQueue) {
  config_.pipelines = {TestSpec("p", {"a"})};
  config_.limits.max_admin_calls_per_peer = 100000;  // this test is about all clients together
  auto slow = std::make_unique<SlowReadsStore>(OpenSqlite());
  SlowReadsStore* reads = slow.get();
  StartDaemonWith(std::move(slow));
  admin_ = v1::AdminService::NewStub(channel_);
  // Viewers' reads of the history, stuck in the store.
  grpc::CompletionQueue cq;
  constexpr int kReads = 1100;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<v1::ListCheckpointsResponse> replies(kReads);
  std::vector<grpc::Status> statuses(kReads);
  for (int i = 0; i < kReads; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    v1::ListCheckpointsRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    admin_->AsyncListCheckpoints(contexts.back().get(), req, &cq)
        ->Finish(&replies[i], &statuses[i], reinterpret_cast<void*>(static_cast<intptr_t>(i)));
  }
  ASSERT_TRUE(reads->WaitEntered());
  // A create is not queued behind them.
  v1::PipelineSpec spec;
  spec.set_job_id("job");
  spec.set_pipeline_id("created-meanwhile");
  spec.add_task_ids("a");
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::Pipeline created;
  const grpc::Status create = admin_->CreatePipeline(&ctx, spec, &created);
  EXPECT_TRUE(create.ok()) << create.error_code() << " " << create.error_message();
  // Beyond what may wait, reads are refused at once.
  int refused = 0;
  int answered = 0;
  void* tag = nullptr;
  bool ok = false;
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);
  while (answered < kReads - 1025 &&
         cq.AsyncNext(&tag, &ok, deadline) == grpc::CompletionQueue::GOT_EVENT) {
    ++answered;
    const grpc::Status& s = statuses[reinterpret_cast<intptr_t>(tag)];
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++refused;
      EXPECT_NE(s.error_message().find("queue is full"), std::string::npos) << s.error_message();
    }
  }
  EXPECT_GE(refused, kReads - 1025);
  EXPECT_EQ(daemon_->metrics()
                .limit_refusals_total[static_cast<size_t>(CountedLimit::kOperatorQueue)]
                .load(),
            static_cast<uint64_t>(refused))
      << "every refusal at the queue's bound is counted";
  reads->Release();
  while (answered < kReads &&
         cq.AsyncNext(&tag, &ok, deadline) == grpc::CompletionQueue::GOT_EVENT) {
    ++answered;
  }
  EXPECT_EQ(answered, kReads);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

class AuthInputTest : public ChaosTest {
 protected:
  void SetUp() override {
    ChaosTest::SetUp();
    config_.auth.enabled = true;
    config_.auth.principals = {
        {"ops", "", Sha256Hex("ops-token"), Role::kAdmin, {}},
        {"etl", "", Sha256Hex("etl-token"), Role::kWorker, {"etl"}},
        {"billing", "", Sha256Hex("billing-token"), Role::kWorker, {"billing"}},
    };
  }
  static std::vector<std::pair<std::string, std::string>> Bearer(const std::string& token) {
    return {{"authorization", "Bearer " + token}};
  }
};

TEST_F(AuthInputTest, TwoAuthorizationHeadersAreUnauthenticated) {
  PipelineSpec etl = TestSpec("p", {"a"});
  etl.key.job_id = "etl";
  config_.pipelines = {etl};
  StartDaemon();
  // The second header is a worker's token, the first the admin's: neither is guessed.
  RawWorker twice(channel_,
                  {{"authorization", "Bearer ops-token"}, {"authorization", "Bearer etl-token"}});
  twice.Hello("etl", "p", {"a"});
  auto status = twice.WaitEnd();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAUTHENTICATED) << status->error_message();
  EXPECT_NE(status->error_message().find("2 authorization headers"), std::string::npos)
      << status->error_message();
  auto admin = v1::AdminService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer ops-token");
  ctx.AddMetadata("authorization", "Bearer ops-token");
  v1::ListPipelinesRequest req;
  v1::ListPipelinesResponse resp;
  EXPECT_EQ(admin->ListPipelines(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // One header works.
  RawWorker once(channel_, Bearer("etl-token"));
  once.Hello("etl", "p", {"a"});
  EXPECT_TRUE(once.WaitWelcome()) << EndStatusText(once);
}

TEST_F(AuthInputTest, AWorkerOfOneJobCannotStopAnotherJobsPipelineThroughTheirGroup) {
  AlignmentGroupSpec group;
  group.name = "ledger";
  group.interval_ms = 600000;
  group.timeout_ms = 10000;
  config_.alignment_groups = {group};
  PipelineSpec etl = TestSpec("p", {"a"}, 600000);
  etl.key.job_id = "etl";
  etl.alignment_group = "ledger";
  PipelineSpec billing = etl;
  billing.key.job_id = "billing";
  config_.pipelines = {etl, billing};
  StartDaemon();
  RawWorker etl_worker(channel_, Bearer("etl-token"));
  etl_worker.Hello("etl", "p", {"a"});
  ASSERT_TRUE(etl_worker.WaitWelcome()) << EndStatusText(etl_worker);
  RawWorker billing_worker(channel_, Bearer("billing-token"));
  billing_worker.Hello("billing", "p", {"a"});
  ASSERT_TRUE(billing_worker.WaitWelcome()) << EndStatusText(billing_worker);

  ASSERT_TRUE(etl_worker.SavepointRequest("", /*stop=*/true));
  auto refused = etl_worker.WaitFor([](const auto& m) { return m.has_savepoint_refused(); });
  ASSERT_TRUE(refused) << EndStatusText(etl_worker);
  EXPECT_NE(refused->savepoint_refused().reason().find("billing"), std::string::npos)
      << refused->savepoint_refused().reason();
  EXPECT_FALSE(billing_worker.WaitFor(
      [](const auto& m) {
        return m.has_trigger() && m.trigger().kind() != v1::CHECKPOINT_KIND_CHECKPOINT;
      },
      milliseconds(1000)))
      << "no savepoint round was started";
  EXPECT_NE(Describe("p", "billing").state, PipelineState::kStopped);
  EXPECT_NE(Describe("p", "etl").state, PipelineState::kStopped);
}

}  // namespace
}  // namespace ckpt::testing
