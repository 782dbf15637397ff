// A pipeline's life at its edges, through a real daemon: deletion while the store holds a round or
// while a create of the same name races it, what workers are told when checkpoints stop, aborted
// rounds in the history, shutdown with many streams.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"
#include "forwarding_store.h"
#include "raw_worker.h"
#include "sqlite/sqlite_store.h"

namespace ckpt::testing {
namespace {

// Forwards to SQLite, but can hold back (1) the completions of CommitCheckpoint, so that a round
// stays "with the store" for as long as a test likes, and (2) the DeletePipeline call itself, as
// a slow enqueue would. Threading: any thread; the switches are guarded by mu_.
class HoldingStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  void HoldCommitCompletions() {
    std::lock_guard lock(mu_);
    hold_commits_ = true;
  }
  size_t HeldCommits() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  void ReleaseCommitCompletions() {
    std::vector<std::pair<Done, Status>> held;
    {
      std::lock_guard lock(mu_);
      hold_commits_ = false;
      held.swap(held_);
    }
    for (auto& [done, status] : held) done(status);
  }
  void BlockDeletes() {
    std::lock_guard lock(mu_);
    block_deletes_ = true;
  }
  bool DeleteWaiting() {
    std::lock_guard lock(mu_);
    return delete_waiting_;
  }
  void UnblockDeletes() {
    std::lock_guard lock(mu_);
    block_deletes_ = false;
    cv_.notify_all();
  }

  void CommitCheckpoint(CheckpointCommit commit, Done done) override {
    inner().CommitCheckpoint(std::move(commit), [this, done = std::move(done)](Status s) {
      std::unique_lock lock(mu_);
      if (hold_commits_) return held_.emplace_back(done, s), void();
      lock.unlock();
      done(s);
    });
  }
  void DeletePipeline(const PipelineKey& key, Done done) override {
    {
      std::unique_lock lock(mu_);
      delete_waiting_ = block_deletes_;
      cv_.wait(lock, [this] { return !block_deletes_; });
      delete_waiting_ = false;
    }
    inner().DeletePipeline(key, std::move(done));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_commits_ = false;                  // guarded by mu_
  std::vector<std::pair<Done, Status>> held_;  // guarded by mu_
  bool block_deletes_ = false;                 // guarded by mu_
  bool delete_waiting_ = false;                // guarded by mu_
};

class LifecycleTest : public DaemonTest {
 protected:
  // A daemon over a HoldingStore (SQLite underneath).
  void StartHoldingDaemon() {
    auto holding = std::make_unique<HoldingStore>(OpenSqlite());
    store_ = holding.get();
    StartDaemonWith(std::move(holding));
    admin_ = v1::AdminService::NewStub(channel_);
  }
  void StartPlainDaemon() {
    StartDaemon();
    admin_ = v1::AdminService::NewStub(channel_);
  }

  v1::PipelineRef Ref(const std::string& pipeline) {
    v1::PipelineRef ref;
    ref.set_job_id("job");
    ref.set_pipeline_id(pipeline);
    return ref;
  }
  grpc::Status Call(grpc::Status (v1::AdminService::Stub::*rpc)(grpc::ClientContext*,
                                                                const v1::PipelineRef&,
                                                                v1::Pipeline*),
                    const std::string& pipeline) {
    grpc::ClientContext ctx;
    v1::Pipeline reply;
    return (admin_.get()->*rpc)(&ctx, Ref(pipeline), &reply);
  }
  grpc::Status Delete(const std::string& pipeline) {
    grpc::ClientContext ctx;
    v1::DeletePipelineResponse reply;
    return admin_->DeletePipeline(&ctx, Ref(pipeline), &reply);
  }
  v1::ListCheckpointsResponse Checkpoints(const std::string& pipeline) {
    v1::ListCheckpointsRequest req;
    req.set_job_id("job");
    req.set_pipeline_id(pipeline);
    grpc::ClientContext ctx;
    v1::ListCheckpointsResponse resp;
    EXPECT_TRUE(admin_->ListCheckpoints(&ctx, req, &resp).ok());
    return resp;
  }

  HoldingStore* store_ = nullptr;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(LifecycleTest, DeletingAPipelineWhoseRoundIsWithTheStoreStillEndsThatRound) {
  StartHoldingDaemon();
  CreateThroughApi(TestSpec("p", {"a"}, 60000));
  RawWorker worker(channel_);
  worker.Hello("job", "p", {"a"});
  ASSERT_TRUE(worker.WaitWelcome());
  // A savepoint whose commit the store holds back.
  v1::TriggerSavepointRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  req.set_timeout_ms(60000);
  store_->HoldCommitCompletions();
  grpc::ClientContext savepoint_ctx;
  savepoint_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto progress = admin_->TriggerSavepoint(&savepoint_ctx, req);
  // The first periodic round may come first: ack whatever is triggered until the savepoint is.
  std::optional<v1::CoordinatorMessage> trigger;
  for (int i = 0; i < 3; ++i) {
    trigger = worker.WaitFor([](const auto& m) { return m.has_trigger(); });
    ASSERT_TRUE(trigger);
    worker.Ack(trigger->trigger().checkpoint_id(), "a");
    if (trigger->trigger().kind() == v1::CHECKPOINT_KIND_SAVEPOINT) break;
    ASSERT_TRUE(Eventually([&] { return store_->HeldCommits() == 1; }));
    store_->ReleaseCommitCompletions();
    store_->HoldCommitCompletions();
  }
  ASSERT_EQ(trigger->trigger().kind(), v1::CHECKPOINT_KIND_SAVEPOINT);
  ASSERT_TRUE(Eventually([&] { return store_->HeldCommits() == 1; }));
  EXPECT_EQ(daemon_->metrics().pending_checkpoints.load(), 1);

  ASSERT_TRUE(Delete("p").ok());
  store_->ReleaseCommitCompletions();

  // The round ends for everyone who waits on it: the gauge, and the savepoint's caller.
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().pending_checkpoints.load() == 0; }))
      << "the pending gauge must not stay up after the store answered";
  v1::SavepointProgress p, last;
  while (progress->Read(&p)) last = p;
  EXPECT_TRUE(progress->Finish().ok());
  EXPECT_TRUE(last.final());
  ASSERT_EQ(last.savepoints_size(), 1);
  EXPECT_EQ(last.savepoints(0).status(), v1::SAVEPOINT_STATUS_COMPLETED)
      << "it was durable before the delete removed it";

  // Shutdown does not wait the grace period for a round that is over.
  const auto before = std::chrono::steady_clock::now();
  StopDaemon();
  EXPECT_LT(std::chrono::steady_clock::now() - before,
            std::chrono::milliseconds(config_.shutdown_grace_ms));
}

TEST_F(LifecycleTest, ACreateRacingADeleteOfTheSameNameKeepsItsRecord) {
  StartHoldingDaemon();
  CreateThroughApi(TestSpec("p", {"a"}, 60000));
  store_->BlockDeletes();  // the store delete is slow to be queued
  auto deleted = std::async(std::launch::async, [&] { return Delete("p"); });
  ASSERT_TRUE(Eventually([&] { return store_->DeleteWaiting(); }));

  // A create of the same name while the delete is on its way: refused (the name is not free
  // yet), or, if it goes through, its record must outlive the delete.
  std::promise<Result<std::shared_ptr<PipelineRunner>>> created;
  daemon_->pipelines().Create(
      TestSpec("p", {"a", "b"}, 60000),
      [&](Result<std::shared_ptr<PipelineRunner>> r) { created.set_value(r); });
  auto create_result = created.get_future();
  const bool create_answered =
      create_result.wait_for(std::chrono::milliseconds(500)) == std::future_status::ready;
  store_->UnblockDeletes();
  ASSERT_TRUE(deleted.get().ok());
  Result<std::shared_ptr<PipelineRunner>> result = create_result.get();
  ASSERT_TRUE(create_answered || result.ok());
  if (!result.ok()) {
    EXPECT_EQ(result.status().code(), StatusCode::kAlreadyExists) << result.status().ToString();
    CreateThroughApi(TestSpec("p", {"a", "b"}, 60000));  // now the name is free
  }
  result = Status::Ok();  // drop the runner before the daemon goes
  StopDaemon();
  StartDaemon();
  auto runner = daemon_->pipelines().registry().Find({"job", "p"});
  ASSERT_NE(runner, nullptr) << "the created pipeline's record was deleted by the earlier delete";
  EXPECT_EQ(Describe("p").spec.task_ids, (std::vector<std::string>{"a", "b"}));
}

TEST_F(LifecycleTest, ARoundAbortedByTaskLossIsListedAbortedAndNotCounted) {
  StartPlainDaemon();
  CreateThroughApi(TestSpec("p", {"a", "b"}, 60000));
  RawWorker a(channel_), b(channel_);
  a.Hello("job", "p", {"a"});
  b.Hello("job", "p", {"b"}, false, "wb");
  auto trigger = a.WaitTrigger();
  ASSERT_TRUE(trigger);
  b.Cancel();
  ASSERT_TRUE(a.WaitAbort());
  auto list = Checkpoints("p");
  ASSERT_GE(list.checkpoints_size(), 1);
  EXPECT_EQ(list.checkpoints(0).checkpoint_id(), trigger->trigger().checkpoint_id());
  EXPECT_EQ(list.checkpoints(0).status(), v1::CHECKPOINT_STATUS_ABORTED);
  grpc::ClientContext ctx;
  v1::Pipeline pipeline;
  ASSERT_TRUE(admin_->GetPipeline(&ctx, Ref("p"), &pipeline).ok());
  EXPECT_EQ(pipeline.failed_count(), 0);
}

TEST_F(LifecycleTest, WorkersAreToldWhyCheckpointsStopAndWhyASavepointIsRefused) {
  StartPlainDaemon();
  CreateThroughApi(TestSpec("p", {"a"}, 60000));
  RawWorker worker(channel_);
  worker.Hello("job", "p", {"a"});
  ASSERT_TRUE(worker.WaitWelcome());

  ASSERT_TRUE(Call(&v1::AdminService::Stub::PausePipeline, "p").ok());
  auto paused = worker.WaitFor([](const auto& m) { return m.has_state(); });
  ASSERT_TRUE(paused);
  EXPECT_EQ(paused->state().state(), v1::PIPELINE_STATE_PAUSED);
  EXPECT_FALSE(paused->state().reason().empty());

  v1::WorkerMessage request;
  request.mutable_savepoint_request()->set_stop(true);
  worker.Write(request);
  auto refused = worker.WaitFor([](const auto& m) { return m.has_savepoint_refused(); });
  ASSERT_TRUE(refused) << "a refused savepoint_request must be answered on the stream";
  EXPECT_NE(refused->savepoint_refused().reason().find("PAUSED"), std::string::npos);

  ASSERT_TRUE(Call(&v1::AdminService::Stub::ResumePipeline, "p").ok());
  auto resumed = worker.WaitFor([](const auto& m) { return m.has_state(); });
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->state().state(), v1::PIPELINE_STATE_RUNNING);

  ASSERT_TRUE(Delete("p").ok());
  auto deleted = worker.WaitFor([](const auto& m) { return m.has_state(); });
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->state().state(), v1::PIPELINE_STATE_UNSPECIFIED);
  auto end = worker.WaitEnd();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LifecycleTest, ShutdownEndsEveryStreamOfAPipelineWithAPendingRound) {
  config_.shutdown_grace_ms = 200;
  StartPlainDaemon();
  std::vector<std::string> tasks;
  for (int i = 0; i < 40; ++i) tasks.push_back("t" + std::to_string(i));
  CreateThroughApi(TestSpec("p", tasks, 60000));
  std::vector<std::unique_ptr<RawWorker>> workers;
  for (const auto& t : tasks) {
    workers.push_back(std::make_unique<RawWorker>(channel_));
    workers.back()->Hello("job", "p", {t}, false, "w" + t);
  }
  for (auto& w : workers) ASSERT_TRUE(w->WaitTrigger());  // pending, nobody acks
  StopDaemon();
  for (auto& w : workers) {
    ASSERT_TRUE(w->WaitAbort(milliseconds(2000))) << "every worker hears the round's abort";
    auto end = w->WaitEnd(milliseconds(5000));
    ASSERT_TRUE(end);
    EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  }
}

}  // namespace
}  // namespace ckpt::testing
