// Bad input on the daemon's RPCs: ids too long or with control characters, messages over the
// receive limit, messages of no kind or unparsable ones, messages before hello or no hello at all,
// admin calls with absurd values. Each ends the offending stream or call with a clear status and
// nothing else; each test ends by checking that the daemon still does its job (a normal round
// completes). Acks and declines naming ids no round has (zero, negative, the int64 extremes) pass
// the RPC layer as they are and are ignored by the coordinator:
// tests/unit/coordinator_races_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>

#include "chaos_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

TEST_F(ChaosTest, HelloWithOverlongOrControlCharacterIdsIsInvalidArgument) {
  const std::string longest(256, 'x');  // exactly at the limit: accepted
  config_.pipelines = {TestSpec("p", {"a"}), TestSpec(longest, {longest})};
  StartDaemon();
  const std::string too_long(257, 'x');
  struct Case {
    std::string what;
    std::string job, pipeline, task, worker;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"job_id of 257 bytes", too_long, "p", "a", "w", "job_id is longer than 256 bytes"},
      {"pipeline_id of 257 bytes", "job", too_long, "a", "w", "pipeline_id is longer than 256"},
      {"pipeline_id of 1 MiB", "job", std::string(1 << 20, 'p'), "a", "w", "pipeline_id"},
      {"task_id of 257 bytes", "job", "p", too_long, "w",
       "task_id is 257 bytes, longer than limits.max_id_length (256)"},
      {"worker_id of 257 bytes", "job", "p", "a", too_long, "worker_id is longer than 256"},
      {"job_id with a newline", "jo\nb", "p", "a", "w", "job_id contains a control character"},
      {"pipeline_id with a NUL", "job", std::string("p\0", 2), "a", "w",
       "pipeline_id contains a control character"},
      {"pipeline_id with DEL", "job", "p\x7f", "a", "w", "pipeline_id contains a control"},
      {"task_id with an escape", "job", "p", "a\x1b[2J", "w", "task_id contains a control"},
      {"worker_id with a tab", "job", "p", "a", "w\t1", "worker_id contains a control"},
      {"empty worker_id", "job", "p", "a", "", "worker_id is empty"},
  };
  for (const auto& c : cases) {
    ExpectStreamEnds([&c](RawWorker& w) { w.Hello(c.job, c.pipeline, {c.task}, false, c.worker); },
                     grpc::StatusCode::INVALID_ARGUMENT, c.message_part, c.what);
  }
  // 256 bytes is within the limit everywhere.
  {
    RawWorker w(channel_);
    w.Hello("job", longest, {longest}, false, longest);
    ASSERT_TRUE(w.WaitWelcome()) << EndStatusText(w);
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
  ExpectNormalRound("p", {"a"});
}

TEST_F(ChaosTest, OversizedMessageEndsOnlyItsStreamWithResourceExhausted) {
  config_.pipelines = {TestSpec("p", {"a"}), TestSpec("bystander", {"a"}, 50)};
  StartDaemon();
  // A bystander checkpoints all along, on its own stream over the same channel.
  std::atomic<bool> stop{false};
  std::atomic<int> bystander_completes{0};
  std::atomic<bool> bystander_failed{false};
  std::thread bystander([&] {
    RawWorker w(channel_);
    w.Hello("job", "bystander", {"a"});
    while (!stop) {
      auto t = w.WaitTrigger(milliseconds(5000));
      if (!t) {
        bystander_failed = true;
        return;
      }
      w.Ack(t->trigger().checkpoint_id(), "a");
      if (!w.WaitComplete(milliseconds(5000))) {
        bystander_failed = true;
        return;
      }
      ++bystander_completes;
    }
  });

  // An ack whose state.uri alone is 9 MiB, over the daemon's 8 MiB receive limit.
  {
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    ASSERT_TRUE(w.WaitWelcome());
    auto trigger = w.WaitTrigger();
    ASSERT_TRUE(trigger);
    v1::WorkerMessage big;
    big.mutable_ack()->set_checkpoint_id(trigger->trigger().checkpoint_id());
    big.mutable_ack()->set_task_id("a");
    big.mutable_ack()->mutable_state()->set_uri(std::string(9 << 20, 'u'));
    w.Write(big);  // may fail once the daemon has reset the stream
    auto status = w.WaitEnd();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << status->error_message();
    // The stream is gone, so is its task; the round it was in did not complete.
    EXPECT_TRUE(Eventually([&] {
      auto s = Describe("p");
      return s.state == PipelineState::kWaitingForTasks && s.sessions == 0;
    }));
    auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
    ASSERT_TRUE(history.ok());
    EXPECT_TRUE(history->empty()) << "a round completed with the oversized ack";
  }
  // An oversized hello (first message) too.
  ExpectStreamEnds(
      [](RawWorker& w) {
        std::vector<std::string> tasks(90000, std::string(100, 't'));
        w.Hello("job", "p", tasks);
      },
      grpc::StatusCode::RESOURCE_EXHAUSTED, "", "hello of ~9 MiB");

  const int before = bystander_completes.load();
  ASSERT_TRUE(
      Eventually([&] { return bystander_completes.load() >= before + 3 || bystander_failed; }));
  stop = true;
  bystander.join();
  EXPECT_FALSE(bystander_failed) << "the bystander's stream stalled";
  EXPECT_GT(bystander_completes.load(), 0);
  ExpectNormalRound("p", {"a"});
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
}

TEST_F(ChaosTest, MessageWithNoKindSetIsIgnoredCountedAndTheStreamStaysUp) {
  config_.pipelines = {TestSpec("p", {"a"}, 60000)};
  StartDaemon();
  // As the first message it is not a hello.
  ExpectStreamEnds([](RawWorker& w) { w.Write(v1::WorkerMessage{}); },
                   grpc::StatusCode::INVALID_ARGUMENT, "hello", "empty first message");
  EXPECT_EQ(daemon_->metrics().ignored_unknown_message_total.load(), 0u);

  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  ASSERT_TRUE(w.WaitWelcome());
  auto first = w.WaitTrigger();  // the first periodic trigger; then none for a minute
  ASSERT_TRUE(first);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w.Write(v1::WorkerMessage{}));
  // An unknown field (a newer worker's message kind, field 99) parses as "no case set" too.
  {
    v1::WorkerMessage future;
    future.GetReflection()->MutableUnknownFields(&future)->AddLengthDelimited(99,
                                                                              "from the future");
    ASSERT_TRUE(w.Write(future));
  }
  EXPECT_TRUE(Eventually([&] {
    return daemon_->metrics().ignored_unknown_message_total.load() == 4;
  })) << daemon_->metrics().ignored_unknown_message_total.load();
  // Still up, still registered: the pending round completes on this very stream.
  w.Ack(first->trigger().checkpoint_id(), "a");
  auto complete = w.WaitComplete();
  ASSERT_TRUE(complete) << EndStatusText(w);
  EXPECT_EQ(complete->complete().checkpoint_id(), first->trigger().checkpoint_id());
  EXPECT_EQ(Describe("p").sessions, 1);
}

TEST_F(ChaosTest, AcksAndOtherMessagesBeforeHelloAreInvalidArgument) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartDaemon();
  ExpectStreamEnds([](RawWorker& w) { w.Ack(1, "a"); }, grpc::StatusCode::INVALID_ARGUMENT, "hello",
                   "ack before hello");
  ExpectStreamEnds(
      [](RawWorker& w) {
        w.Ack(1, "a");
        w.Ack(2, "a");
        w.Hello("job", "p", {"a"});  // too late: the stream is already refused
      },
      grpc::StatusCode::INVALID_ARGUMENT, "hello", "acks, then hello");
  ExpectStreamEnds([](RawWorker& w) { w.Decline(1, "a", "no"); },
                   grpc::StatusCode::INVALID_ARGUMENT, "hello", "decline before hello");
  ExpectStreamEnds(
      [](RawWorker& w) {
        v1::WorkerMessage m;
        m.mutable_heartbeat();
        w.Write(m);
      },
      grpc::StatusCode::INVALID_ARGUMENT, "hello", "heartbeat before hello");
  ExpectStreamEnds(
      [](RawWorker& w) {
        w.Hello("job", "p", {"a"});
        w.Hello("job", "p", {"a"});
      },
      grpc::StatusCode::INVALID_ARGUMENT, "hello", "a second hello");
  EXPECT_EQ(daemon_->metrics().acks_total.load(), 0u) << "an ack before hello reached a pipeline";
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
  ExpectNormalRound("p", {"a"});
}

TEST_F(ChaosTest, AdminCallsWithAbsurdValuesAreInvalidArgumentNamingTheField) {
  config_.pipelines = {TestSpec("p", {"a"})};
  StartAdmin();
  auto base = [] {
    v1::PipelineSpec spec;
    spec.set_job_id("job");
    spec.set_pipeline_id("absurd");
    spec.add_task_ids("a");
    return spec;
  };
  struct Case {
    std::string what;
    std::function<void(v1::PipelineSpec&)> edit;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"interval_ms = 1<<60", [](auto& s) { s.set_interval_ms(int64_t{1} << 60); }, "interval_ms"},
      {"interval_ms = INT64_MAX",
       [](auto& s) { s.set_interval_ms(std::numeric_limits<int64_t>::max()); }, "interval_ms"},
      {"interval_ms = INT64_MIN",
       [](auto& s) { s.set_interval_ms(std::numeric_limits<int64_t>::min()); }, "interval_ms"},
      {"interval_ms = 0", [](auto& s) { s.set_interval_ms(0); }, "interval_ms"},
      {"timeout_ms = -5", [](auto& s) { s.set_timeout_ms(-5); }, "timeout_ms"},
      {"timeout_ms = 0", [](auto& s) { s.set_timeout_ms(0); }, "timeout_ms"},
      {"min_pause_ms = -1", [](auto& s) { s.set_min_pause_ms(-1); }, "min_pause_ms"},
      {"min_pause_ms = 1<<62", [](auto& s) { s.set_min_pause_ms(int64_t{1} << 62); },
       "min_pause_ms"},
      {"tolerable_failures = -1", [](auto& s) { s.set_tolerable_failures(-1); },
       "tolerable_failures"},
      {"retained = 0", [](auto& s) { s.set_retained(0); }, "retained"},
      {"retained = -1", [](auto& s) { s.set_retained(-1); }, "retained"},
      {"retained = INT32_MAX", [](auto& s) { s.set_retained(std::numeric_limits<int32_t>::max()); },
       "retained"},
      {"200k tasks",
       [](auto& s) {
         s.clear_task_ids();
         for (int i = 0; i < 200000; ++i) s.add_task_ids("t" + std::to_string(i));
       },
       // The message reads "more than 100000 tasks in one pipeline": it names the tasks, though
       // not by the field's name task_ids.
       "task"},
      {"no tasks", [](auto& s) { s.clear_task_ids(); }, "task_ids"},
      {"task id with a newline", [](auto& s) { s.add_task_ids("b\n"); }, "task_ids[1]"},
      {"duplicate task", [](auto& s) { s.add_task_ids("a"); }, "task_ids[1]"},
      {"job_id of 257 bytes", [](auto& s) { s.set_job_id(std::string(257, 'j')); }, "job_id"},
      {"empty pipeline_id", [](auto& s) { s.set_pipeline_id(""); }, "pipeline_id"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    v1::PipelineSpec spec = base();
    c.edit(spec);
    auto s = CreateRaw(spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(c.field), std::string::npos)
        << "message \"" << s.error_message() << "\" does not name " << c.field;
  }
  {
    grpc::ClientContext ctx;
    v1::ListPipelinesRequest req;
    v1::ListPipelinesResponse resp;
    ASSERT_TRUE(admin_->ListPipelines(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.pipelines_size(), 1) << "a refused create left a pipeline behind";
  }

  // UpdatePipeline is held to the same rules, and a refused update changes nothing.
  for (const auto& c : cases) {
    if (c.what == "job_id of 257 bytes" || c.what == "empty pipeline_id" || c.what == "no tasks") {
      continue;  // these address no pipeline, or mean "keep the tasks" in an update
    }
    SCOPED_TRACE("update: " + c.what);
    v1::PipelineSpec spec = base();  // task_ids {"a"}: the current set, so no change by itself
    spec.set_pipeline_id("p");
    c.edit(spec);
    grpc::ClientContext ctx;
    v1::Pipeline reply;
    auto s = admin_->UpdatePipeline(&ctx, spec, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(c.field), std::string::npos) << s.error_message();
  }
  {
    auto st = Describe("p");
    EXPECT_EQ(st.spec.interval_ms, 100);
    EXPECT_EQ(st.spec.timeout_ms, 10000);
    EXPECT_EQ(st.spec.retained, 1000);
    EXPECT_EQ(st.spec.task_ids, std::vector<std::string>{"a"});
  }

  // ListCheckpoints with a negative limit; a huge one is fine.
  for (int32_t limit : {-1, std::numeric_limits<int32_t>::min()}) {
    v1::ListCheckpointsRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    req.set_limit(limit);
    v1::ListCheckpointsResponse resp;
    grpc::ClientContext ctx;
    auto s = admin_->ListCheckpoints(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << limit;
    EXPECT_NE(s.error_message().find("limit"), std::string::npos) << s.error_message();
  }
  {
    v1::ListCheckpointsRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    req.set_limit(std::numeric_limits<int32_t>::max());
    v1::ListCheckpointsResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(admin_->ListCheckpoints(&ctx, req, &resp).ok());
  }

  // TriggerSavepoint with a negative or absurd timeout.
  for (int64_t timeout : {int64_t{-1}, std::numeric_limits<int64_t>::min(), int64_t{1} << 60}) {
    SCOPED_TRACE("savepoint timeout_ms " + std::to_string(timeout));
    v1::TriggerSavepointRequest req;
    req.set_job_id("job");
    req.set_pipeline_id("p");
    req.set_timeout_ms(timeout);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = admin_->TriggerSavepoint(&ctx, req);
    v1::SavepointProgress p;
    int messages = 0;
    while (reader->Read(&p)) ++messages;
    auto s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("timeout_ms"), std::string::npos) << s.error_message();
    EXPECT_EQ(messages, 0);
  }
  EXPECT_EQ(Describe("p").state, PipelineState::kWaitingForTasks) << "no savepoint was queued";
  ExpectNormalRound("p", {"a"});
}

TEST_F(ChaosTest, UnparsableMessagesEndTheStreamWithAnError) {
  // Invalid UTF-8 in a proto3 string field: the C++ client only logs when it serializes it; the
  // daemon's parse fails. The worker must learn that with an error status, not a plain OK.
  config_.pipelines = {TestSpec("p", {"a"}, 100)};
  StartDaemon();
  {
    SCOPED_TRACE("hello");
    RawWorker w(channel_);
    w.Hello("jo\xff", "p", {"a"});
    auto status = w.WaitEnd();
    ASSERT_TRUE(status);
    EXPECT_NE(status->error_code(), grpc::StatusCode::OK)
        << "an unparsable hello was answered OK: an SDK worker retries that forever";
    EXPECT_FALSE(status->error_message().empty());
  }
  {
    SCOPED_TRACE("ack");
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    v1::WorkerMessage m;
    m.mutable_ack()->set_checkpoint_id(t->trigger().checkpoint_id());
    m.mutable_ack()->set_task_id("a");
    m.mutable_ack()->mutable_state()->set_uri("mem://\xc3\x28");
    w.Write(m);
    auto status = w.WaitEnd();
    ASSERT_TRUE(status);
    EXPECT_NE(status->error_code(), grpc::StatusCode::OK) << "an unparsable ack was answered OK";
    EXPECT_FALSE(status->error_message().empty());
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
  ExpectNormalRound("p", {"a"});
}

// Before its hello a stream has hello_timeout_ms, not a lease; that, short here, must end every
// one of many silent streams well within the wait below.
TEST_F(ChaosTest, StreamsThatNeverSayHelloAreEndedByTheHelloTimeout) {
  config_.hello_timeout_ms = 300;
  config_.pipelines = {TestSpec("p", {"a"})};
  StartDaemon();
  std::vector<std::unique_ptr<RawWorker>> silent;
  for (int i = 0; i < 50; ++i) silent.push_back(std::make_unique<RawWorker>(channel_));
  for (auto& w : silent) {
    auto status = w->WaitEnd();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status->error_message();
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
}

}  // namespace
}  // namespace ckpt::testing
