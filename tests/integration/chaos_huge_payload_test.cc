// Input the daemon accepts (under limits.max_message_bytes, 4 MiB by default) and then repeats to
// other clients: a client with gRPC's default 4 MiB receive limit (the SDK, ckptctl, RawWorker)
// must not be broken by what another client sent.
#include <gtest/gtest.h>

#include <thread>

#include "chaos_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

TEST_F(ChaosTest, HugeDeclineReasonDoesNotBreakTheOtherStreamsOrTheCheckpointList) {
  config_.pipelines = {TestSpec("p", {"a", "b"}, 100)};
  config_.pipelines[0].tolerable_failures = 100;
  StartAdmin();
  RawWorker wa(channel_), wb(channel_);
  wa.Hello("job", "p", {"a"}, false, "wa");
  wb.Hello("job", "p", {"b"}, false, "wb");
  auto trigger = wb.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t id = trigger->trigger().checkpoint_id();
  wa.Decline(id, "a", std::string(3 << 20, 'r'));  // 3 MiB: accepted by the daemon
  // b's worker hears that the round failed; its stream stays up.
  auto abort = wb.WaitAbort();
  EXPECT_TRUE(abort) << "b's stream: " << EndStatusText(wb);
  if (abort) {
    EXPECT_EQ(abort->abort().checkpoint_id(), id);
  }
  EXPECT_FALSE(wb.WaitEnd(milliseconds(0))) << EndStatusText(wb);
  EXPECT_FALSE(wa.WaitEnd(milliseconds(0))) << EndStatusText(wa);
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.failed_count == 1; }));
  // The operator can still list the pipeline's checkpoints.
  v1::ListCheckpointsRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  v1::ListCheckpointsResponse resp;
  grpc::ClientContext ctx;
  auto s = admin_->ListCheckpoints(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  ExpectNormalRound("p", {"a", "b"});
}

TEST_F(ChaosTest, HugeSavepointTargetDoesNotBreakTheWorkersStreams) {
  config_.pipelines = {TestSpec("p", {"a"}, 60000)};
  StartAdmin();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto first = w.WaitTrigger();  // the first periodic checkpoint, then none for a minute
  ASSERT_TRUE(first);
  w.Ack(first->trigger().checkpoint_id(), "a");
  ASSERT_TRUE(w.WaitComplete());

  v1::TriggerSavepointRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  req.set_target(std::string(3 << 20, 'T'));  // 3 MiB: accepted by the daemon
  req.set_timeout_ms(5000);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = admin_->TriggerSavepoint(&ctx, req);
  // The worker answers whatever trigger it gets, meanwhile.
  std::thread worker([&] {
    if (auto t = w.WaitTrigger(milliseconds(5000))) w.Ack(t->trigger().checkpoint_id(), "a");
  });
  v1::SavepointProgress progress;
  while (reader->Read(&progress)) {
  }
  auto s = reader->Finish();
  worker.join();
  // Refused with a clear error, or done: either is fine, but not a broken stream.
  EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_code() << " " << s.error_message();
  EXPECT_FALSE(w.WaitEnd(milliseconds(0))) << "the worker's stream: " << EndStatusText(w);
  ExpectNormalRound("p", {"a"}, /*trigger_now=*/true);
}

TEST_F(ChaosTest, ListCheckpointsOfALargePipelineFitsADefaultClient) {
  // Nothing abusive: 500 tasks with ~2 KB of state each (long object-store URIs): ~1 MB of
  // per-task state per completed checkpoint, so the default limit (20) alone would pass 4 MiB.
  // (Few tasks with big states rather than many small ones: the same bytes in a tenth of the
  // messages, which keeps the test quick under the sanitizers.)
  std::vector<std::string> tasks;
  for (int i = 0; i < 500; ++i) tasks.push_back("task-" + std::to_string(i));
  const std::string long_path(2000, 'x');
  config_.pipelines = {TestSpec("p", tasks, 50)};
  StartAdmin();
  RawWorker w(channel_);
  w.Hello("job", "p", tasks);
  for (int round = 0; round < 5; ++round) {
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    const int64_t id = t->trigger().checkpoint_id();
    for (const auto& task : tasks) {
      v1::WorkerMessage m;
      m.mutable_ack()->set_checkpoint_id(id);
      m.mutable_ack()->set_task_id(task);
      m.mutable_ack()->mutable_state()->set_uri("s3://some-bucket/checkpoints/job/p/" + task +
                                                "/chk-" + std::to_string(id) + "/" + long_path +
                                                "/state-0123456789abcdef0123456789abcdef.bin");
      m.mutable_ack()->mutable_state()->set_checksum(
          "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
      ASSERT_TRUE(w.Write(m));
    }
    ASSERT_TRUE(w.WaitFor(
        [id](const auto& m) { return m.has_complete() && m.complete().checkpoint_id() == id; }));
  }
  v1::ListCheckpointsRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");  // limit 0: the daemon's default
  v1::ListCheckpointsResponse resp;
  grpc::ClientContext ctx;
  auto s = admin_->ListCheckpoints(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
}

TEST_F(ChaosTest, AWelcomeWithAWideRestorePointPassesTheSessionQueueLimit) {
  // 200 tasks with ~2 KB of state each: the restore point the next welcome carries is ~400 KB,
  // far above the queue limit, which is for streams that do not read, not for their welcome.
  config_.limits.max_session_queue_bytes = 64 << 10;
  std::vector<std::string> tasks;
  for (int i = 0; i < 200; ++i) tasks.push_back("task-" + std::to_string(i));
  const std::string long_path(2000, 'x');
  config_.pipelines = {TestSpec("p", tasks, 50)};
  StartAdmin();
  int64_t id = 0;
  {
    RawWorker w(channel_);
    w.Hello("job", "p", tasks);
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    id = t->trigger().checkpoint_id();
    for (const auto& task : tasks) {
      v1::WorkerMessage m;
      m.mutable_ack()->set_checkpoint_id(id);
      m.mutable_ack()->set_task_id(task);
      m.mutable_ack()->mutable_state()->set_uri("s3://bucket/" + task + "/" + long_path);
      ASSERT_TRUE(w.Write(m));
    }
    ASSERT_TRUE(w.WaitFor(
        [id](const auto& m) { return m.has_complete() && m.complete().checkpoint_id() == id; }));
  }
  RawWorker again(channel_);
  again.Hello("job", "p", tasks, /*takeover=*/true);
  auto welcome = again.WaitWelcome();
  ASSERT_TRUE(welcome) << "ended: " << EndStatusText(again);
  EXPECT_EQ(welcome->welcome().restore().checkpoint_id(), id);
  EXPECT_EQ(welcome->welcome().restore().task_states_size(), 200);
  EXPECT_GT(welcome->ByteSizeLong(), static_cast<size_t>(config_.limits.max_session_queue_bytes));
}

}  // namespace
}  // namespace ckpt::testing
