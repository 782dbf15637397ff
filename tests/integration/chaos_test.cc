// Trying to break the daemon: bad RPC input, a reconnect storm across restarts, stale acks after a
// takeover or a re-registration, races between streams for the same task, input that the daemon
// accepts and then repeats to other clients, and concurrent operator updates. Tests of bad input
// end by checking that the daemon still does its job (a normal round completes).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <ckpt/worker.h>
#include <latch>
#include <limits>
#include <thread>

#include "ckpt/v1/admin.grpc.pb.h"
#include "common/grpc_code_name.h"
#include "daemon_fixture.h"
#include "raw_worker.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

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
    auto complete = w.WaitFor([id](const auto& m) {
      return m.has_complete() && m.complete().checkpoint_id() == id;
    });
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

// ---------------------------------------------------------------------------------------------
// a) Bad RPC input

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
      {"task_id of 257 bytes", "job", "p", too_long, "w", "task_id is longer than 256"},
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
    ExpectStreamEnds(
        [&c](RawWorker& w) { w.Hello(c.job, c.pipeline, {c.task}, false, c.worker); },
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
  ASSERT_TRUE(Eventually([&] { return bystander_completes.load() >= before + 3 || bystander_failed; }));
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
    future.GetReflection()->MutableUnknownFields(&future)->AddLengthDelimited(99, "from the future");
    ASSERT_TRUE(w.Write(future));
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().ignored_unknown_message_total.load() == 4; }))
      << daemon_->metrics().ignored_unknown_message_total.load();
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
  ExpectStreamEnds([](RawWorker& w) { w.Ack(1, "a"); }, grpc::StatusCode::INVALID_ARGUMENT,
                   "hello", "ack before hello");
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
      {"min_pause_ms = 1<<62", [](auto& s) { s.set_min_pause_ms(int64_t{1} << 62); }, "min_pause_ms"},
      {"tolerable_failures = -1", [](auto& s) { s.set_tolerable_failures(-1); }, "tolerable_failures"},
      {"retained = 0", [](auto& s) { s.set_retained(0); }, "retained"},
      {"retained = -1", [](auto& s) { s.set_retained(-1); }, "retained"},
      {"retained = INT32_MAX",
       [](auto& s) { s.set_retained(std::numeric_limits<int32_t>::max()); }, "retained"},
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
    if (c.what == "job_id of 257 bytes" || c.what == "empty pipeline_id" ||
        c.what == "no tasks") {
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

// ---------------------------------------------------------------------------------------------
// b) Reconnect storm: 300 pipelines of one WorkerRuntime come back by themselves after restarts.

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
    w->worker = runtime->AddPipeline({.worker_id = "storm", .job_id = "job",
                                      .pipeline_id = "p" + std::to_string(i), .task_ids = {"0"},
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

// ---------------------------------------------------------------------------------------------
// c) Stale acks after a takeover or a re-registration are dropped.

TEST_F(ChaosTest, StaleAckAfterATakeoverIsIgnoredAsNotPending) {
  config_.pipelines = {TestSpec("p", {"a"}, 200)};
  StartDaemon();
  RawWorker old_worker(channel_);
  old_worker.Hello("job", "p", {"a"}, false, "old");
  auto trigger = old_worker.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t stale = trigger->trigger().checkpoint_id();
  const int64_t old_generation = trigger->trigger().generation();
  const uint64_t not_pending = daemon_->metrics().ignored_not_pending_total.load();

  RawWorker new_worker(channel_);
  new_worker.Hello("job", "p", {"a"}, /*takeover=*/true, "new");
  auto welcome = new_worker.WaitWelcome();
  ASSERT_TRUE(welcome);
  EXPECT_GT(welcome->welcome().generation(), old_generation);
  auto ended = old_worker.WaitEnd();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->error_code(), grpc::StatusCode::ABORTED);

  // The new stream owns the task now, and acks the round it took over: too late, it was aborted.
  new_worker.Ack(stale, "a");
  EXPECT_TRUE(Eventually([&] {
    return daemon_->metrics().ignored_not_pending_total.load() == not_pending + 1;
  })) << daemon_->metrics().ignored_not_pending_total.load();
  EXPECT_EQ(daemon_->metrics().ignored_unowned_task_total.load(), 0u);

  // The next round is a new one, of the new generation, and it completes.
  auto next = new_worker.WaitTrigger();
  ASSERT_TRUE(next);
  EXPECT_GT(next->trigger().checkpoint_id(), stale);
  EXPECT_GE(next->trigger().generation(), welcome->welcome().generation());
  new_worker.Ack(next->trigger().checkpoint_id(), "a");
  auto complete = new_worker.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), next->trigger().checkpoint_id());
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  for (const auto& c : *history) EXPECT_NE(c.checkpoint_id, stale) << "the stale round completed";
  EXPECT_TRUE(Eventually([&] { return Describe("p").counters.completed_count == 1; }));
}

TEST_F(ChaosTest, StaleAckReplayedRightAfterAReRegistrationIsIgnored) {
  // A worker that lost its stream comes back and replays the ack it had not got through, in the
  // same breath as its hello (no wait for welcome).
  config_.pipelines = {TestSpec("p", {"a", "b"}, 200)};
  StartDaemon();
  RawWorker wa(channel_);
  wa.Hello("job", "p", {"a"}, false, "wa");
  auto wb = std::make_unique<RawWorker>(channel_);
  wb->Hello("job", "p", {"b"}, false, "wb");
  auto trigger = wa.WaitTrigger();
  ASSERT_TRUE(trigger);
  const int64_t stale = trigger->trigger().checkpoint_id();
  wa.Ack(stale, "a");
  // a's ack must be in before b goes: arriving after the abort, it would be counted not_pending
  // too, and the count below could not tell it from the replayed one.
  auto runner = daemon_->pipelines().registry().Find({"job", "p"});
  ASSERT_TRUE(runner);
  ASSERT_TRUE(Eventually([&] {
    std::promise<bool> acked;
    runner->Inspect([&](const PipelineCoordinator& c) {
      auto pending = c.Pending();
      acked.set_value(pending && std::find(pending->acked_tasks.begin(),
                                           pending->acked_tasks.end(),
                                           "a") != pending->acked_tasks.end());
    });
    return acked.get_future().get();
  }));
  runner.reset();
  wb->Cancel();  // b is lost before it acked: the round is aborted
  auto abort = wa.WaitAbort();
  ASSERT_TRUE(abort);
  EXPECT_EQ(abort->abort().checkpoint_id(), stale);
  const uint64_t not_pending = daemon_->metrics().ignored_not_pending_total.load();

  wb = std::make_unique<RawWorker>(channel_);
  wb->Hello("job", "p", {"b"}, false, "wb");
  wb->Ack(stale, "b");
  ASSERT_TRUE(wb->WaitWelcome());
  EXPECT_TRUE(Eventually([&] {
    return daemon_->metrics().ignored_not_pending_total.load() == not_pending + 1;
  }));
  auto next = wa.WaitTrigger();
  ASSERT_TRUE(next);
  const int64_t id = next->trigger().checkpoint_id();
  EXPECT_GT(id, stale);
  EXPECT_GT(next->trigger().generation(), trigger->trigger().generation());
  wa.Ack(id, "a");
  wb->Ack(id, "b");
  auto complete = wa.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), id);
  auto history = daemon_->store().ListCompleted({"job", "p"}, 0);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().checkpoint_id, id);
}

TEST_F(ChaosTest, TakeoverRacingTheOldStreamsLastAckNeverLosesACompletion) {
  // The old stream's last ack and a takeover hello race. Either order is fine; what must hold:
  // the round is durable if and only if some stream was told it completed, and the pipeline goes
  // on.
  constexpr int kRounds = 15;
  for (int i = 0; i < kRounds; ++i) {
    config_.pipelines.push_back(TestSpec("r" + std::to_string(i), {"a"}, 100));
  }
  StartDaemon();
  int completed_first = 0, aborted_first = 0;
  for (int i = 0; i < kRounds; ++i) {
    const std::string pipeline = "r" + std::to_string(i);
    SCOPED_TRACE(pipeline);
    RawWorker old_worker(channel_);
    old_worker.Hello("job", pipeline, {"a"}, false, "old");
    auto trigger = old_worker.WaitTrigger();
    ASSERT_TRUE(trigger);
    const int64_t stale = trigger->trigger().checkpoint_id();

    RawWorker new_worker(channel_);
    std::latch go(3);
    std::thread acker([&] {
      go.arrive_and_wait();
      old_worker.Ack(stale, "a");
    });
    std::thread taker([&] {
      go.arrive_and_wait();
      new_worker.Hello("job", pipeline, {"a"}, true, "new");
    });
    go.arrive_and_wait();
    acker.join();
    taker.join();

    // Everything each stream hears, up to the next round's complete on the new stream.
    bool told_complete = false;
    int64_t welcome_last_completed = -1;
    auto next = new_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_welcome()) welcome_last_completed = m.welcome().last_completed_checkpoint_id();
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return m.has_trigger();
    });
    ASSERT_TRUE(next) << "no new round after the takeover: " << EndStatusText(new_worker);
    EXPECT_GT(next->trigger().checkpoint_id(), stale);
    auto old_end = old_worker.WaitEnd();
    ASSERT_TRUE(old_end);
    EXPECT_EQ(old_end->error_code(), grpc::StatusCode::ABORTED);
    old_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return false;
    }, milliseconds(0));
    new_worker.Ack(next->trigger().checkpoint_id(), "a");
    auto complete = new_worker.WaitFor([&](const v1::CoordinatorMessage& m) {
      if (m.has_complete() && m.complete().checkpoint_id() == stale) told_complete = true;
      return m.has_complete() && m.complete().checkpoint_id() == next->trigger().checkpoint_id();
    });
    ASSERT_TRUE(complete) << "the round after the takeover did not complete";
    if (welcome_last_completed == stale) told_complete = true;

    auto history = daemon_->store().ListCompleted({"job", pipeline}, 0);
    ASSERT_TRUE(history.ok());
    bool durable = false;
    for (const auto& c : *history) durable = durable || c.checkpoint_id == stale;
    EXPECT_EQ(durable, told_complete)
        << "checkpoint " << stale << (durable ? " is durable but nobody was told"
                                              : " was announced complete but is not stored");
    (durable ? completed_first : aborted_first)++;
  }
  std::printf("takeover vs last ack: the ack won %d time(s), the takeover %d time(s)\n",
              completed_first, aborted_first);
}

// ---------------------------------------------------------------------------------------------
// e) Input the daemon accepts (under its 8 MiB receive limit) and then repeats to every client: a
//    client with gRPC's default 4 MiB receive limit (the SDK, ckptctl, RawWorker) must not be
//    broken by what another client sent.

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
  wa.Decline(id, "a", std::string(5 << 20, 'r'));  // 5 MiB: accepted by the daemon
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
  req.set_target(std::string(5 << 20, 'T'));  // 5 MiB: accepted by the daemon
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
    ASSERT_TRUE(w.WaitFor([id](const auto& m) {
      return m.has_complete() && m.complete().checkpoint_id() == id;
    }));
  }
  v1::ListCheckpointsRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");  // limit 0: the daemon's default
  v1::ListCheckpointsResponse resp;
  grpc::ClientContext ctx;
  auto s = admin_->ListCheckpoints(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
}

// ---------------------------------------------------------------------------------------------
// f) Other probes.

TEST_F(ChaosTest, ConcurrentUpdatesOfDifferentFieldsAreBothApplied) {
  // Two operators update different fields of one pipeline at the same moment; each gets OK, so
  // both changes must hold afterwards.
  config_.pipelines = {TestSpec("p", {"a"}, 100)};
  StartAdmin();
  constexpr int kTrials = 50;
  int lost = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int64_t interval = 1000 + trial, timeout = 20000 + trial;
    std::latch go(3);
    grpc::Status s1, s2;
    std::thread t1([&] {
      v1::PipelineSpec spec;
      spec.set_job_id("job");
      spec.set_pipeline_id("p");
      spec.set_interval_ms(interval);
      grpc::ClientContext ctx;
      v1::Pipeline reply;
      go.arrive_and_wait();
      s1 = admin_->UpdatePipeline(&ctx, spec, &reply);
    });
    std::thread t2([&] {
      v1::PipelineSpec spec;
      spec.set_job_id("job");
      spec.set_pipeline_id("p");
      spec.set_timeout_ms(timeout);
      grpc::ClientContext ctx;
      v1::Pipeline reply;
      go.arrive_and_wait();
      s2 = admin_->UpdatePipeline(&ctx, spec, &reply);
    });
    go.arrive_and_wait();
    t1.join();
    t2.join();
    ASSERT_TRUE(s1.ok() && s2.ok()) << s1.error_message() << " / " << s2.error_message();
    auto st = Describe("p");
    if (st.spec.interval_ms != interval || st.spec.timeout_ms != timeout) ++lost;
  }
  EXPECT_EQ(lost, 0) << lost << " of " << kTrials
                     << " trials lost one of two concurrent updates that were both answered OK";
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

TEST_F(ChaosTest, AckForAnImpossibleIdIsIgnoredAsNotPending) {
  config_.pipelines = {TestSpec("p", {"a"}, 60000)};
  StartDaemon();
  RawWorker w(channel_);
  w.Hello("job", "p", {"a"});
  auto t = w.WaitTrigger();
  ASSERT_TRUE(t);
  const int64_t id = t->trigger().checkpoint_id();
  for (int64_t bogus : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min(),
                        std::numeric_limits<int64_t>::max(), id + 1}) {
    w.Ack(bogus, "a");
    w.Decline(bogus, "a", "bogus");
  }
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().ignored_not_pending_total.load() == 10; }))
      << daemon_->metrics().ignored_not_pending_total.load();
  w.Ack(id, "a");
  auto complete = w.WaitComplete();
  ASSERT_TRUE(complete);
  EXPECT_EQ(complete->complete().checkpoint_id(), id);
  EXPECT_EQ(Describe("p").counters.failed_count, 0);
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

// ---------------------------------------------------------------------------------------------
// d) Duplicate registrations at the same moment.

// "welcome", or the status the stream ended with.
std::string Outcome(RawWorker& w) {
  if (w.WaitWelcome()) return "welcome";
  auto s = w.WaitEnd();
  if (!s) return "nothing";
  return std::string(cli::GrpcCodeName(s->error_code()));
}

TEST_F(ChaosTest, SimultaneousHellosForOneTaskWelcomeExactlyOne) {
  config_.pipelines = {TestSpec("p", {"a", "b"}, 100)};
  StartDaemon();
  constexpr int kTrials = 25;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    {
      RawWorker w1(channel_), w2(channel_);
      std::latch go(3);
      // Overlapping, not equal, task sets: b is contended too.
      std::thread t1([&] {
        go.arrive_and_wait();
        w1.Hello("job", "p", {"a", "b"}, false, "w1");
      });
      std::thread t2([&] {
        go.arrive_and_wait();
        w2.Hello("job", "p", {"b", "a"}, false, "w2");
      });
      go.arrive_and_wait();
      t1.join();
      t2.join();
      const std::string o1 = Outcome(w1), o2 = Outcome(w2);
      const bool one_each = (o1 == "welcome" && o2 == "ALREADY_EXISTS") ||
                            (o2 == "welcome" && o1 == "ALREADY_EXISTS");
      ASSERT_TRUE(one_each) << "w1: " << o1 << ", w2: " << o2;
      auto s = Describe("p");
      EXPECT_EQ(s.sessions, 1);
      EXPECT_EQ(s.registered_tasks, 2);
      // The winner is a working stream.
      RawWorker& winner = o1 == "welcome" ? w1 : w2;
      auto t = winner.WaitTrigger();
      ASSERT_TRUE(t);
      winner.Ack(t->trigger().checkpoint_id(), "a");
      winner.Ack(t->trigger().checkpoint_id(), "b");
      ASSERT_TRUE(winner.WaitFor([&](const auto& m) {
        return m.has_complete() && m.complete().checkpoint_id() == t->trigger().checkpoint_id();
      }));
    }
    ASSERT_TRUE(Eventually([&] {
      return Describe("p").sessions == 0 && daemon_->metrics().worker_sessions.load() == 0;
    }));
  }
}

TEST_F(ChaosTest, SimultaneousTakeoverHellosLeaveExactlyOneStream) {
  config_.pipelines = {TestSpec("p", {"a"}, 100)};
  StartDaemon();
  constexpr int kTrials = 25;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    {
      RawWorker w1(channel_), w2(channel_);
      std::latch go(3);
      std::thread t1([&] {
        go.arrive_and_wait();
        w1.Hello("job", "p", {"a"}, true, "w1");
      });
      std::thread t2([&] {
        go.arrive_and_wait();
        w2.Hello("job", "p", {"a"}, true, "w2");
      });
      go.arrive_and_wait();
      t1.join();
      t2.join();
      // Both are welcomed in turn; the later one takes the task from the earlier one.
      ASSERT_TRUE(w1.WaitWelcome());
      ASSERT_TRUE(w2.WaitWelcome());
      ASSERT_TRUE(Eventually([&] { return w1.WaitEnd(milliseconds(0)) || w2.WaitEnd(milliseconds(0)); }))
          << "neither stream was taken over";
      auto e1 = w1.WaitEnd(milliseconds(0));
      auto e2 = w2.WaitEnd(milliseconds(0));
      ASSERT_TRUE(e1.has_value() != e2.has_value())
          << "w1 " << (e1 ? std::to_string(e1->error_code()) : "open") << ", w2 "
          << (e2 ? std::to_string(e2->error_code()) : "open");
      EXPECT_EQ((e1 ? e1 : e2)->error_code(), grpc::StatusCode::ABORTED);
      RawWorker& winner = e1 ? w2 : w1;
      EXPECT_EQ(Describe("p").sessions, 1);
      auto t = winner.WaitTrigger();
      ASSERT_TRUE(t);
      winner.Ack(t->trigger().checkpoint_id(), "a");
      ASSERT_TRUE(winner.WaitFor([&](const auto& m) {
        return m.has_complete() && m.complete().checkpoint_id() == t->trigger().checkpoint_id();
      }));
    }
    ASSERT_TRUE(Eventually([&] {
      return Describe("p").sessions == 0 && daemon_->metrics().worker_sessions.load() == 0;
    }));
  }
}

}  // namespace
}  // namespace ckpt::testing
