// AdminService against a real daemon: every RPC's success and error paths, and savepoints.
// One suite over one fixture (AdminTest: a daemon, the admin stub, raw workers that ack): the calls
// of the admin API one after another, and the savepoints that most of its length is about, all
// against the same setup. Split, that fixture would move to a header for files of a few tests each.
#include <gtest/gtest.h>

#include <limits>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"
#include "raw_worker.h"

namespace ckpt::testing {
namespace {

class AdminTest : public DaemonTest {
 protected:
  void StartAdmin() {
    StartDaemon();
    admin_ = v1::AdminService::NewStub(channel_);
  }

  grpc::Status Create(const std::string& pipeline, std::vector<std::string> tasks,
                      int64_t interval_ms = 100, v1::Pipeline* out = nullptr) {
    v1::PipelineSpec spec;
    spec.set_job_id("job");
    spec.set_pipeline_id(pipeline);
    for (const auto& t : tasks) spec.add_task_ids(t);
    spec.set_interval_ms(interval_ms);
    spec.set_retained(1000);
    v1::Pipeline reply;
    grpc::ClientContext ctx;
    auto s = admin_->CreatePipeline(&ctx, spec, &reply);
    if (out) *out = reply;
    return s;
  }

  v1::PipelineRef Ref(const std::string& pipeline, const std::string& job = "job") {
    v1::PipelineRef ref;
    ref.set_job_id(job);
    ref.set_pipeline_id(pipeline);
    return ref;
  }

  // TriggerCheckpoint of a pipeline whose tasks just registered: its first id block may still be
  // on its way to the store (UNAVAILABLE, "retry shortly"), as under load it is.
  grpc::Status TriggerOnceIdsAreReserved(const std::string& pipeline, v1::CheckpointInfo* info) {
    grpc::Status s;
    Eventually([&] {
      grpc::ClientContext ctx;
      s = admin_->TriggerCheckpoint(&ctx, Ref(pipeline), info);
      return s.error_code() != grpc::StatusCode::UNAVAILABLE;
    });
    return s;
  }

  v1::Pipeline Get(const std::string& pipeline) {
    grpc::ClientContext ctx;
    v1::Pipeline p;
    EXPECT_TRUE(admin_->GetPipeline(&ctx, Ref(pipeline), &p).ok());
    return p;
  }

  struct SavepointResult {
    grpc::Status status;
    std::vector<v1::SavepointProgress> progress;
    const v1::SavepointProgress& last() const { return progress.back(); }
  };
  SavepointResult Savepoint(const std::string& pipeline, bool stop, int64_t timeout_ms = 10000,
                            const std::string& target = "") {
    v1::TriggerSavepointRequest req;
    req.set_job_id("job");
    req.set_pipeline_id(pipeline);
    req.set_stop(stop);
    req.set_timeout_ms(timeout_ms);
    req.set_target(target);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto reader = admin_->TriggerSavepoint(&ctx, req);
    SavepointResult result;
    v1::SavepointProgress p;
    while (reader->Read(&p)) result.progress.push_back(p);
    result.status = reader->Finish();
    return result;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(AdminTest, CreateGetListUpdateDelete) {
  StartAdmin();
  v1::Pipeline created;
  ASSERT_TRUE(Create("p", {"a", "b"}, 100, &created).ok());
  EXPECT_EQ(created.state(), v1::PIPELINE_STATE_WAITING_FOR_TASKS);
  EXPECT_EQ(created.expected_tasks(), 2);
  EXPECT_EQ(created.spec().timeout_ms(), 600000) << "unset fields take the daemon's defaults";
  EXPECT_EQ(Create("p", {"a"}).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(Create("bad", {}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Create("bad", {"a"}, 1).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Create("q", {"a"}).ok());

  {
    v1::ListPipelinesRequest req;
    req.set_job_id("job");
    v1::ListPipelinesResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->ListPipelines(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.pipelines_size(), 2);
    EXPECT_EQ(resp.pipelines(0).spec().pipeline_id(), "p");
    EXPECT_EQ(resp.pipelines(1).spec().pipeline_id(), "q");
  }
  {
    grpc::ClientContext ctx;
    v1::Pipeline p;
    EXPECT_EQ(admin_->GetPipeline(&ctx, Ref("nope"), &p).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // Update: only the fields given change; a new task set bumps the generation and ends the stream
  // of a task that left.
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  ASSERT_TRUE(w.WaitTrigger());
  const int64_t generation = Get("p").generation();
  {
    v1::PipelineSpec update;
    update.set_job_id("job");
    update.set_pipeline_id("p");
    update.add_task_ids("a");
    update.set_timeout_ms(2000);
    v1::Pipeline p;
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->UpdatePipeline(&ctx, update, &p).ok());
    EXPECT_EQ(p.spec().timeout_ms(), 2000);
    EXPECT_EQ(p.spec().interval_ms(), 100) << "unset fields keep their value";
    EXPECT_GT(p.generation(), generation);
  }
  auto ended = w.WaitEnd();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Delete ends live streams with NOT_FOUND; a create under the same name never reuses an id.
  RawWorker w2(channel_);
  w2.Hello("job", "p", {"a"});
  auto trigger = w2.WaitTrigger();
  ASSERT_TRUE(trigger);
  {
    grpc::ClientContext ctx;
    v1::DeletePipelineResponse resp;
    ASSERT_TRUE(admin_->DeletePipeline(&ctx, Ref("p"), &resp).ok());
  }
  auto deleted = w2.WaitEnd();
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    v1::DeletePipelineResponse resp;
    EXPECT_EQ(admin_->DeletePipeline(&ctx, Ref("p"), &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  ASSERT_TRUE(Create("p", {"a"}).ok());
  RawWorker w3(channel_);
  w3.Hello("job", "p", {"a"});
  auto again = w3.WaitTrigger();
  ASSERT_TRUE(again);
  EXPECT_GT(again->trigger().checkpoint_id(), trigger->trigger().checkpoint_id());
}

TEST_F(AdminTest, PauseResumeAndTriggerCheckpoint) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}, 60000).ok());
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto first = w.WaitTrigger();
  ASSERT_TRUE(first);
  v1::CheckpointInfo info;
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(admin_->TriggerCheckpoint(&ctx, Ref("p"), &info).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION)
        << "a round is pending";
  }
  w.Ack(first->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(w.WaitComplete());
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->TriggerCheckpoint(&ctx, Ref("p"), &info).ok());
    EXPECT_EQ(info.status(), v1::CHECKPOINT_STATUS_PENDING);
    EXPECT_EQ(info.pending_tasks_size(), 1);
  }
  auto manual = w.WaitTrigger();
  ASSERT_TRUE(manual);
  EXPECT_EQ(manual->trigger().checkpoint_id(), info.checkpoint_id());
  w.Ack(info.checkpoint_id(), "a");
  ASSERT_TRUE(w.WaitComplete());
  v1::Pipeline p;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->PausePipeline(&ctx, Ref("p"), &p).ok());
    EXPECT_EQ(p.state(), v1::PIPELINE_STATE_PAUSED);
  }
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(admin_->TriggerCheckpoint(&ctx, Ref("p"), &info).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->ResumePipeline(&ctx, Ref("p"), &p).ok());
    EXPECT_EQ(p.state(), v1::PIPELINE_STATE_RUNNING);
  }
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(admin_->ResumePipeline(&ctx, Ref("p"), &p).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
}

TEST_F(AdminTest, ListCheckpointsShowsThePendingRoundWithItsMissingAcksFirst) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a", "b"}, 50).ok());
  RawWorker w(channel_);
  w.Hello("job", "p", {"a", "b"});
  for (int i = 0; i < 3; ++i) {
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    w.Ack(t->trigger().checkpoint_id(), "a");
    w.Ack(t->trigger().checkpoint_id(), "b");
    ASSERT_TRUE(w.WaitComplete());
  }
  auto stuck = w.WaitTrigger();
  ASSERT_TRUE(stuck);
  w.Ack(stuck->trigger().checkpoint_id(), "a");
  v1::ListCheckpointsResponse resp;
  ASSERT_TRUE(Eventually([&] {
    v1::ListCheckpointsRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    req.set_limit(10);
    grpc::ClientContext ctx;
    resp.Clear();
    return admin_->ListCheckpoints(&ctx, req, &resp).ok() && resp.checkpoints_size() == 4 &&
           resp.checkpoints(0).acked_tasks() == 1;
  }));
  const auto& pending = resp.checkpoints(0);
  EXPECT_EQ(pending.status(), v1::CHECKPOINT_STATUS_PENDING);
  EXPECT_EQ(pending.checkpoint_id(), stuck->trigger().checkpoint_id());
  ASSERT_EQ(pending.pending_tasks_size(), 1);
  EXPECT_EQ(pending.pending_tasks(0), "b");
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(resp.checkpoints(i).status(), v1::CHECKPOINT_STATUS_COMPLETED);
    EXPECT_EQ(resp.checkpoints(i).state().size(), 2u);
    if (i > 1) {
      EXPECT_LT(resp.checkpoints(i).checkpoint_id(), resp.checkpoints(i - 1).checkpoint_id());
    }
  }
}

TEST_F(AdminTest, SavepointQueuedBehindAPendingCheckpointStartsRightAfterIt) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}, 60000).ok());   // one periodic trigger, then a minute
  ASSERT_TRUE(Create("other", {"a"}, 50).ok());  // keeps checkpointing meanwhile
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto pending = w.WaitTrigger();
  ASSERT_TRUE(pending);
  RawWorker other(channel_);
  other.Hello("job", "other", {"a"});

  std::thread savepoint_thread;
  SavepointResult result;
  savepoint_thread = std::thread([&] { result = Savepoint("p", /*stop=*/false); });
  // While the savepoint waits, the other pipeline's triggers come on time.
  auto last = std::chrono::steady_clock::now();
  double worst_gap_ms = 0;
  for (int i = 0; i < 10; ++i) {
    auto t = other.WaitTrigger(milliseconds(5000));
    ASSERT_TRUE(t);
    auto now = std::chrono::steady_clock::now();
    if (i > 0)
      worst_gap_ms =
          std::max(worst_gap_ms, std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
    other.Ack(t->trigger().checkpoint_id(), "a");
  }
  EXPECT_LT(worst_gap_ms, 1000.0);
  EXPECT_FALSE(w.WaitTrigger(milliseconds(50))) << "the savepoint must wait for the pending round";
  w.Ack(pending->trigger().checkpoint_id(), "a");
  auto sp = w.WaitTrigger(milliseconds(5000));
  ASSERT_TRUE(sp) << "the savepoint did not start right after the checkpoint";
  EXPECT_EQ(sp->trigger().kind(), v1::CHECKPOINT_KIND_SAVEPOINT);
  EXPECT_EQ(sp->trigger().target(), config_.data_dir + "/savepoints/job/p/" +
                                        std::to_string(sp->trigger().checkpoint_id()));
  w.Ack(sp->trigger().checkpoint_id(), "a");
  savepoint_thread.join();
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.progress.empty());
  EXPECT_TRUE(result.last().final());
  EXPECT_EQ(result.last().status(), v1::SAVEPOINT_STATUS_COMPLETED);
  EXPECT_EQ(result.last().savepoints(0).savepoint_id(), sp->trigger().checkpoint_id());
  EXPECT_EQ(result.last().savepoints(0).location(), sp->trigger().target());
  EXPECT_EQ(result.progress.front().savepoints(0).status(), v1::SAVEPOINT_STATUS_QUEUED);
  auto history = daemon_->store().ListCompleted({"job", "p"}, 1);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->front().kind, CheckpointKind::kSavepoint);
  EXPECT_EQ(history->front().location, sp->trigger().target());
}

TEST_F(AdminTest, JobWideSavepointReportsEachPipelineAndFailsIfOneFails) {
  StartAdmin();
  ASSERT_TRUE(Create("good", {"a"}, 60000).ok());
  ASSERT_TRUE(Create("bad", {"a"}, 60000).ok());
  RawWorker good(channel_);
  RawWorker bad(channel_);
  good.Hello("job", "good", {"a"});
  bad.Hello("job", "bad", {"a"});
  for (RawWorker* w : {&good, &bad}) {
    auto t = w->WaitTrigger();
    ASSERT_TRUE(t);
    w->Ack(t->trigger().checkpoint_id(), "a");
    ASSERT_TRUE(w->WaitComplete());
  }
  std::thread serve([&] {
    if (auto t = good.WaitTrigger()) good.Ack(t->trigger().checkpoint_id(), "a");
    if (auto t = bad.WaitTrigger()) bad.Decline(t->trigger().checkpoint_id(), "a", "disk full");
  });
  auto result = Savepoint("", /*stop=*/true, 10000, "s3://bucket/sp");
  serve.join();
  ASSERT_TRUE(result.status.ok());
  const auto& last = result.last();
  EXPECT_EQ(last.status(), v1::SAVEPOINT_STATUS_FAILED);
  ASSERT_EQ(last.savepoints_size(), 2);
  for (const auto& p : last.savepoints()) {
    if (p.pipeline_id() == "good") {
      EXPECT_EQ(p.status(), v1::SAVEPOINT_STATUS_COMPLETED);
      EXPECT_EQ(p.location(), "s3://bucket/sp");
    } else {
      EXPECT_EQ(p.status(), v1::SAVEPOINT_STATUS_FAILED);
      EXPECT_NE(p.failure_reason().find("disk full"), std::string::npos);
    }
  }
  // With stop, each pipeline stops when its own savepoint completes.
  EXPECT_EQ(Get("good").state(), v1::PIPELINE_STATE_STOPPED);
  EXPECT_EQ(Get("bad").state(), v1::PIPELINE_STATE_RUNNING);
  EXPECT_EQ(Get("bad").consecutive_failures(), 0) << "savepoint declines do not count";
}

TEST_F(AdminTest, SavepointTimesOutAndErrorsAreClear) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a", "b"}, 60000).ok());
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});  // b never comes: the savepoint waits, then times out
  auto result = Savepoint("p", false, 300);
  ASSERT_TRUE(result.status.ok());
  EXPECT_EQ(result.last().status(), v1::SAVEPOINT_STATUS_FAILED);
  EXPECT_NE(result.last().savepoints(0).failure_reason().find("timed out"), std::string::npos);

  EXPECT_EQ(Savepoint("nope", false).status.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::TriggerSavepointRequest req;
  req.set_job_id("nojob");
  grpc::ClientContext ctx;
  auto reader = admin_->TriggerSavepoint(&ctx, req);
  v1::SavepointProgress p;
  while (reader->Read(&p)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  // A paused pipeline refuses a savepoint at once.
  {
    grpc::ClientContext c;
    v1::Pipeline pp;
    ASSERT_TRUE(admin_->PausePipeline(&c, Ref("p"), &pp).ok());
  }
  auto paused = Savepoint("p", false);
  ASSERT_TRUE(paused.status.ok());
  EXPECT_EQ(paused.last().status(), v1::SAVEPOINT_STATUS_FAILED);
  EXPECT_NE(paused.last().savepoints(0).failure_reason().find("PAUSED"), std::string::npos);
}

TEST_F(AdminTest, DaemonShutdownDuringAQueuedSavepointTellsTheCallerItFailed) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a", "b"}, 60000).ok());
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});  // b is missing: the savepoint stays queued
  SavepointResult result;
  std::thread savepoint_thread([&] { result = Savepoint("p", false, 60000); });
  ASSERT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() >= 1; }));
  // Wait until the request reached the pipeline (the first progress message is out).
  ASSERT_TRUE(Eventually([&] {
    std::promise<bool> queued;
    daemon_->pipelines().registry().Find({"job", "p"})->Inspect([&](const PipelineCoordinator& c) {
      queued.set_value(c.CurrentSavepoint().has_value());
    });
    return queued.get_future().get();
  }));
  StopDaemon();
  savepoint_thread.join();
  EXPECT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.progress.empty());
  EXPECT_TRUE(result.last().final()) << "the caller hears the outcome, not a broken stream";
  EXPECT_EQ(result.last().status(), v1::SAVEPOINT_STATUS_FAILED);
  EXPECT_NE(result.last().savepoints(0).failure_reason().find("shutting down"), std::string::npos)
      << result.last().savepoints(0).failure_reason();
}

TEST_F(AdminTest, PipelinesCreatedThroughTheApiComeBackAfterARestartWithTheirHistory) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}, 50).ok());
  int64_t last_id = 0;
  {
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    for (int i = 0; i < 3; ++i) {
      auto t = w.WaitTrigger();
      ASSERT_TRUE(t);
      last_id = t->trigger().checkpoint_id();
      w.Ack(last_id, "a");
      ASSERT_TRUE(w.WaitComplete());
    }
  }
  StopDaemon();
  StartAdmin();
  auto p = Get("p");
  EXPECT_EQ(p.last_completed_checkpoint_id(), last_id);
  EXPECT_EQ(p.completed_count(), 3);
  EXPECT_FALSE(p.from_config());
  v1::ListCheckpointsRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  v1::ListCheckpointsResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(admin_->ListCheckpoints(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.checkpoints_size(), 3);
  EXPECT_EQ(resp.checkpoints(0).checkpoint_id(), last_id);
}

TEST_F(AdminTest, ACancelledSavepointCallLetsGoAtOnce) {
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}).ok());  // no worker: a savepoint stays queued
  v1::TriggerSavepointRequest req;
  req.set_job_id("job");
  req.set_target("s3://first");
  req.set_timeout_ms(3600000);
  {
    grpc::ClientContext ctx;
    auto reader = admin_->TriggerSavepoint(&ctx, req);
    v1::SavepointProgress first;
    ASSERT_TRUE(reader->Read(&first));
    EXPECT_EQ(first.savepoints(0).status(), v1::SAVEPOINT_STATUS_QUEUED);
    EXPECT_EQ(daemon_->metrics().savepoint_calls.load(), 1);
    ctx.TryCancel();
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().savepoint_calls.load() == 0; }))
      << "a cancelled call must not stay alive until its timeout";
  // Nobody waits for the queued savepoint: it is gone, so another one is not refused.
  auto other = Savepoint("p", /*stop=*/false, /*timeout_ms=*/300, "s3://second");
  ASSERT_FALSE(other.progress.empty());
  EXPECT_EQ(other.last().savepoints(0).failure_reason().find("different"), std::string::npos)
      << other.last().savepoints(0).failure_reason();
  EXPECT_NE(other.last().savepoints(0).failure_reason().find("timed out"), std::string::npos)
      << "it waited for the missing task like any savepoint: "
      << other.last().savepoints(0).failure_reason();
}

TEST_F(AdminTest, ASavepointThatCompletesDuringShutdownIsReportedCompleted) {
  config_.shutdown_grace_ms = 5000;
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}, 60000).ok());
  RawWorker worker(channel_);
  worker.Hello("job", "p", {"a"});
  auto first = worker.WaitTrigger();  // the first periodic round: let it complete
  ASSERT_TRUE(first);
  worker.Ack(first->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(worker.WaitComplete());

  v1::TriggerSavepointRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  req.set_stop(true);
  req.set_timeout_ms(60000);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = admin_->TriggerSavepoint(&ctx, req);
  auto trigger = worker.WaitTrigger();
  ASSERT_TRUE(trigger);
  ASSERT_EQ(trigger->trigger().kind(), v1::CHECKPOINT_KIND_SAVEPOINT_AND_STOP);

  // SIGTERM now; the worker acks during the grace period.
  auto stopped = std::async(std::launch::async, [&] { daemon_->Shutdown(); });
  ASSERT_TRUE(Eventually([&] { return !daemon_->ready(); }));
  worker.Ack(trigger->trigger().checkpoint_id(), "a");
  v1::SavepointProgress p, last;
  while (reader->Read(&p)) last = p;
  const grpc::Status status = reader->Finish();
  stopped.get();
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(last.final()) << "the caller must hear the outcome, not UNAVAILABLE";
  EXPECT_EQ(last.status(), v1::SAVEPOINT_STATUS_COMPLETED);
  EXPECT_EQ(last.savepoints(0).savepoint_id(), trigger->trigger().checkpoint_id());
}

// Shutdown knows every pipeline it must stop: one created during the grace period would be
// missed (never told to stop, its round holding the grace period open), so creates are refused.
TEST_F(AdminTest, ACreateDuringShutdownsGracePeriodIsRefused) {
  config_.shutdown_grace_ms = 5000;
  StartAdmin();
  ASSERT_TRUE(Create("p", {"a"}, 50).ok());
  RawWorker worker(channel_);
  worker.Hello("job", "p", {"a"});
  auto trigger = worker.WaitTrigger();  // pending, unanswered: the grace period waits for it
  ASSERT_TRUE(trigger);

  auto stopped = std::async(std::launch::async, [&] { daemon_->Shutdown(); });
  ASSERT_TRUE(Eventually([&] { return !daemon_->ready(); }));
  const grpc::Status refused = Create("late", {"x"});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_NE(refused.error_message().find("shutting down"), std::string::npos)
      << refused.error_message();
  worker.Ack(trigger->trigger().checkpoint_id(), "a");  // lets the grace period end
  stopped.get();
}

TEST_F(AdminTest, GetCheckpointAndExplainPipelineShowEachTasksPart) {
  StartAdmin();
  ASSERT_TRUE(Create("inspect", {"a", "b"}, /*interval_ms=*/3600000).ok());
  RawWorker w(channel_);
  w.Hello("job", "inspect", {"a", "b"}, /*takeover=*/false, "w-inspect");
  ASSERT_TRUE(w.WaitWelcome());
  // The first round comes by itself (due at once, within the start spread).
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t id = trigger->trigger().checkpoint_id();
  v1::WorkerMessage ack;
  ack.mutable_ack()->set_checkpoint_id(id);
  ack.mutable_ack()->set_task_id("b");
  ack.mutable_ack()->mutable_state()->set_uri("s3://b");
  ack.mutable_ack()->set_sync_duration_ms(12);
  ack.mutable_ack()->set_async_duration_ms(340);
  ack.mutable_ack()->set_alignment_duration_ms(-5);  // nonsense: not reported
  ack.mutable_ack()->set_bytes_processed_during_alignment(2048);
  ASSERT_TRUE(w.Write(ack));

  auto get = [&](int64_t checkpoint_id, v1::CheckpointInfo* info) {
    v1::GetCheckpointRequest req;
    *req.mutable_pipeline() = Ref("inspect");
    req.set_checkpoint_id(checkpoint_id);
    grpc::ClientContext ctx;
    return admin_->GetCheckpoint(&ctx, req, info);
  };
  v1::CheckpointInfo pending;
  ASSERT_TRUE(Eventually([&] {
    pending.Clear();
    return get(id, &pending).ok() && pending.acked_tasks() == 1;
  }));
  EXPECT_EQ(pending.status(), v1::CHECKPOINT_STATUS_PENDING);
  ASSERT_EQ(pending.tasks_size(), 2);
  EXPECT_EQ(pending.tasks(0).task_id(), "a");
  EXPECT_EQ(pending.tasks(0).acked_at_ms(), 0);
  EXPECT_EQ(pending.tasks(0).worker_id(), "w-inspect") << "who holds it";
  EXPECT_EQ(pending.pending_tasks_total(), 1);
  EXPECT_GT(pending.tasks(1).acked_at_ms(), 0);
  EXPECT_EQ(pending.tasks(1).sync_duration_ms(), 12);
  EXPECT_EQ(pending.tasks(1).alignment_duration_ms(), 0);

  // Why it is not done: task a, held by the stream of w-inspect, which spoke just now.
  v1::PipelineExplanation why;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->ExplainPipeline(&ctx, Ref("inspect"), &why).ok());
  }
  EXPECT_EQ(why.holdup(), v1::PIPELINE_HOLDUP_ROUND_PENDING);
  EXPECT_EQ(why.pending_checkpoint_id(), id);
  EXPECT_NE(why.summary().find("waiting for task a of worker w-inspect"), std::string::npos)
      << why.summary();
  ASSERT_EQ(why.tasks_size(), 1);
  EXPECT_GT(why.tasks(0).last_message_at_ms(), 0);
  EXPECT_GT(why.tasks(0).session_id(), 0u);

  ASSERT_TRUE(w.Ack(id, "a"));
  ASSERT_TRUE(w.WaitComplete());
  v1::CheckpointInfo completed;
  ASSERT_TRUE(get(id, &completed).ok());
  EXPECT_EQ(completed.status(), v1::CHECKPOINT_STATUS_COMPLETED);
  ASSERT_EQ(completed.tasks_size(), 2);
  EXPECT_EQ(completed.tasks(1).task_id(), "b");
  EXPECT_EQ(completed.tasks(1).worker_id(), "w-inspect");
  EXPECT_EQ(completed.tasks(1).state().uri(), "s3://b");
  EXPECT_EQ(completed.tasks(1).async_duration_ms(), 340);
  EXPECT_EQ(completed.tasks(1).bytes_processed_during_alignment(), 2048);
  EXPECT_EQ(completed.tasks(1).acked_at_ms(), pending.tasks(1).acked_at_ms());

  v1::CheckpointInfo none;
  EXPECT_EQ(get(id + 1000, &none).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(get(0, &none).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(get(std::numeric_limits<int64_t>::max(), &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(AdminTest, ARoundPastTheStuckThresholdIsCountedOnce) {
  config_.stuck_threshold_ms = 200;
  StartAdmin();
  ASSERT_TRUE(Create("stuck", {"a"}, /*interval_ms=*/3600000).ok());
  RawWorker w(channel_);
  w.Hello("job", "stuck", {"a"});
  ASSERT_TRUE(w.WaitWelcome());
  // The first round comes by itself (due at once, within the start spread).
  auto trigger = w.WaitTrigger();
  ASSERT_TRUE(trigger);
  ASSERT_TRUE(Eventually([&] { return daemon_->metrics().checkpoints_stuck_total.load() == 1; }));
  ASSERT_TRUE(w.Ack(trigger->trigger().checkpoint_id(), "a"));
  ASSERT_TRUE(w.WaitComplete());
  EXPECT_EQ(daemon_->metrics().checkpoints_stuck_total.load(), 1u);
}

}  // namespace
}  // namespace ckpt::testing
