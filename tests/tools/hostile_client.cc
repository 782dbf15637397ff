// ckpt-hostile: a client that behaves as the red-team trial did, for the end-to-end tests of
// tests/e2e/test_hostile_clients.py. Each command does one hostile thing to a daemon and prints
// one JSON object saying what came back; the test then checks the daemon (memory, logs, answers).
//
//   no-hello      --streams N                 N Connect streams on one connection, no hello;
//                                             waits for the daemon to end them
//   churn         --job J --pipeline P --streams N
//                                             N streams each register one task (0..N-1, as
//                                             `parallelism` names them), then
//                                             all are cancelled
//   savepoints    --job J --calls N           N job-wide TriggerSavepoint calls, each cancelled
//                                             once its first progress message arrives
//   hello         --job J --pipeline P --worker-id W --task T [--task-bytes N] [--repeat K]
//                                             K hellos (C escapes in W and T: \n, \x1b); a task
//                                             id of N bytes if given; prints the statuses
//   unowned-acks  --job J --pipeline P --task T --acks K --ack-task-bytes N
//                                             registers T, then sends K acks for a task id of N
//                                             bytes it does not hold
//   invalid-utf8  --job J --pipeline P        a hello whose worker_id is not UTF-8 (raw bytes: a
//                                             conforming client cannot send it)
//   create-pipeline --job J --pipeline P --tasks N --task-bytes B
//                                             a pipeline of N tasks with ids of B bytes
//   no-read       --job J --pipeline P        task 0 on a stream that never reads (heartbeats
//                                             only), task 1 declining every trigger with a
//                                             1000-byte reason; waits until the daemon ends the
//                                             non-reading stream
//   (hello takes --takeover to ask for the task whoever holds it)
//
// Every command may play a client with credentials: --ca-file, --cert-file, --key-file (TLS,
// mutual with the last two), --token-file (`authorization: Bearer` on every call; unlike the other
// clients, also in clear text to an address that is not loopback, so that a test can see the
// daemon refuse it) and --tls-server-name. Unusable files: exit 2.
//
// One program in one file: the commands are short branches of main over the same frame (the
// channel and its credentials, the stream reactors, the tally printed as JSON, the deadline), which
// a split by command would move into a header that every file includes.
//
// Threading: gRPC's callback reactors, counted down on a latch; main waits with a deadline.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/v1/admin.grpc.pb.h"
#include "ckpt/v1/worker.grpc.pb.h"
#include "common/channel_security.h"
#include "common/grpc_code_name.h"
#include "common/security_flags.h"

namespace {

using namespace ckpt;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Counts outcomes (status code names) of calls and lets main wait for all of them.
class Tally {
 public:
  explicit Tally(int expected) : remaining_(expected) {}
  void Done(const grpc::Status& status) {
    std::lock_guard lock(mu_);
    ++codes_[cli::GrpcCodeName(status.error_code())];
    if (!status.ok() && example_.empty()) example_ = status.error_message().substr(0, 300);
    if (--remaining_ == 0) cv_.notify_all();
  }
  bool Wait(milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return remaining_ == 0; });
  }
  nlohmann::json Json() {
    std::lock_guard lock(mu_);
    return {{"codes", codes_}, {"unfinished", remaining_}, {"example_error", example_}};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int remaining_;
  std::map<std::string, int> codes_;
  std::string example_;
};

// "\n" and "\x1b" in a command-line argument become the bytes they name.
std::string Unescape(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    const char c = in[++i];
    if (c == 'n') {
      out += '\n';
    } else if (c == 'r') {
      out += '\r';
    } else if (c == 't') {
      out += '\t';
    } else if (c == 'x' && i + 2 < in.size()) {
      out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

v1::WorkerMessage Hello(const std::string& worker, const std::string& job,
                        const std::string& pipeline, const std::vector<std::string>& tasks,
                        bool takeover = false) {
  v1::WorkerMessage m;
  m.mutable_hello()->set_takeover(takeover);
  m.mutable_hello()->set_worker_id(worker);
  m.mutable_hello()->set_job_id(job);
  m.mutable_hello()->set_pipeline_id(pipeline);
  for (const auto& t : tasks) m.mutable_hello()->add_task_ids(t);
  return m;
}

// One Connect stream that writes the given messages in order, reads until the daemon ends it,
// and can be cancelled. Owned by main, which destroys it only after its OnDone (the Tally).
// What the streams of a command saw, summed.
struct StreamCounts {
  std::atomic<int> welcomes{0};
  std::atomic<int> writes{0};  // messages written
};

class Stream final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  Stream(v1::WorkerService::Stub* stub, const std::string& token,
         std::vector<v1::WorkerMessage> messages, Tally* tally, StreamCounts* counts)
      : messages_(std::move(messages)), tally_(tally), counts_(counts) {
    cli::AttachBearerToken(token, &context_);
    stub->async()->Connect(&context_, this);
    StartRead(&in_);
    if (!messages_.empty()) StartWrite(&messages_[0]);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }

  void OnWriteDone(bool ok) override {
    if (!ok) return;
    if (counts_) counts_->writes.fetch_add(1);
    if (++next_ >= messages_.size()) return;
    StartWrite(&messages_[next_]);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (in_.has_welcome() && counts_) counts_->welcomes.fetch_add(1);
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& status) override { tally_->Done(status); }

 private:
  grpc::ClientContext context_;
  std::vector<v1::WorkerMessage> messages_;
  size_t next_ = 0;
  v1::CoordinatorMessage in_;
  Tally* tally_;
  StreamCounts* counts_;
};

// Polls `done` until it holds or `timeout` passes.
template <typename F>
bool WaitFor(F done, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (!done() && steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(20));
  return done();
}

// One TriggerSavepoint call, cancelled at its first progress message.
class CancelledSavepoint final : public grpc::ClientReadReactor<v1::SavepointProgress> {
 public:
  CancelledSavepoint(v1::AdminService::Stub* stub, const std::string& token, const std::string& job,
                     Tally* tally)
      : tally_(tally) {
    cli::AttachBearerToken(token, &context_);
    request_.set_job_id(job);
    request_.set_timeout_ms(3600000);  // an hour: only the cancel may end it early
    stub->async()->TriggerSavepoint(&context_, &request_, this);
    StartRead(&progress_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) context_.TryCancel();
  }
  void OnDone(const grpc::Status& status) override {
    tally_->Done(status);
    delete this;
  }

 private:
  grpc::ClientContext context_;
  v1::TriggerSavepointRequest request_;
  v1::SavepointProgress progress_;
  Tally* tally_;
};

// One raw Connect stream: writes one ByteBuffer as it is, reads until the daemon ends it.
class RawStream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RawStream(grpc::GenericStub* stub, const std::string& token, const std::string& bytes,
            Tally* tally)
      : tally_(tally) {
    cli::AttachBearerToken(token, &context_);
    grpc::Slice slice(bytes);
    out_ = grpc::ByteBuffer(&slice, 1);
    stub->PrepareBidiStreamingCall(&context_, "/ckpt.v1.WorkerService/Connect", {}, this);
    StartRead(&in_);
    StartWrite(&out_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) StartRead(&in_);
  }
  void OnDone(const grpc::Status& status) override {
    tally_->Done(status);
    delete this;  // fire and forget: nothing else holds it
  }

 private:
  grpc::ClientContext context_;
  grpc::ByteBuffer out_, in_;
  Tally* tally_;
};

// A stream that says hello for one task and then never reads: it keeps its lease with
// heartbeats (writes need no reads) while what the daemon sends it piles up. Its end is seen in
// OnDone (the daemon cancels it).
class NonReader final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  NonReader(v1::WorkerService::Stub* stub, const std::string& token, v1::WorkerMessage hello) {
    cli::AttachBearerToken(token, &context_);
    stub->async()->Connect(&context_, this);
    out_ = std::move(hello);
    writing_ = true;
    StartWrite(&out_);
    StartCall();
  }
  // Sends a heartbeat unless a write is still in flight (the daemon stopped reading ours, or the
  // stream is over).
  void Heartbeat() {
    {
      std::lock_guard lock(mu_);
      if (writing_ || done_) return;
      out_.Clear();
      out_.mutable_heartbeat();
      writing_ = true;
    }
    StartWrite(&out_);  // outside mu_: gRPC may run OnWriteDone inline
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = !ok;  // a failed write: the stream is over, write no more
    if (!ok) {
      // The daemon ended the stream. gRPC holds its status back until the messages before it
      // are read, which this stream never does: a failed write is how it learns the end.
      write_failed_ = true;
      cv_.notify_all();
    }
  }
  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  // True once the stream is over (OnDone, or a write failed).
  bool WaitDone(milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return done_ || write_failed_; });
  }
  void Cancel() { context_.TryCancel(); }
  // Waits for OnDone: the reactor may not be destroyed before.
  bool WaitFinished(milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return done_; });
  }

 private:
  grpc::ClientContext context_;
  v1::WorkerMessage out_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool done_ = false;
  bool write_failed_ = false;
};

// A stream that says hello for one task and declines every trigger with a long reason, so that
// every round ends in an abort of about a kilobyte sent to every stream of the pipeline.
class Decliner final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  Decliner(v1::WorkerService::Stub* stub, const std::string& token, v1::WorkerMessage hello,
           std::string task)
      : task_(std::move(task)) {
    cli::AttachBearerToken(token, &context_);
    stub->async()->Connect(&context_, this);
    Queue(std::move(hello));
    StartRead(&in_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (in_.has_trigger()) {
      v1::WorkerMessage decline;
      decline.mutable_decline()->set_checkpoint_id(in_.trigger().checkpoint_id());
      decline.mutable_decline()->set_task_id(task_);
      decline.mutable_decline()->set_reason(std::string(1000, 'r'));
      Queue(std::move(decline));
      declines_.fetch_add(1);
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    const v1::WorkerMessage* next = nullptr;
    {
      std::lock_guard lock(mu_);
      queue_.pop_front();
      if (ok && !queue_.empty()) next = &queue_.front();
    }
    // Outside mu_ (gRPC may run OnWriteDone inline). Only this chain of writes pops, and a
    // deque's push_back moves no element.
    if (next) StartWrite(next);
  }
  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  void CancelAndWait(milliseconds timeout) {
    context_.TryCancel();
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return done_; });
  }
  int declines() const { return declines_.load(); }

 private:
  void Queue(v1::WorkerMessage message) {
    const v1::WorkerMessage* first = nullptr;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(message));
      if (queue_.size() == 1) first = &queue_.front();
    }
    if (first) StartWrite(first);
  }

  grpc::ClientContext context_;
  const std::string task_;
  v1::CoordinatorMessage in_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::WorkerMessage> queue_;  // front() is in flight
  bool done_ = false;
  std::atomic<int> declines_{0};
};

std::shared_ptr<grpc::Channel> Connect(const std::string& server,
                                       const cli::ChannelSecurity& security) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return cli::CreateSecuredChannel(server, security, args);
}

void Print(nlohmann::json out) { std::printf("%s\n", out.dump().c_str()); }

// Ends the process at once: a reactor may still be returning from its last reaction on a gRPC
// thread after the count that main waited for, and tearing gRPC down under it would crash.
int Exit(int code) {
  std::fflush(stdout);
  std::_Exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ckpt-hostile: hostile client behaviours for ckptd's end-to-end tests"};
  app.require_subcommand(1);
  std::string server = "127.0.0.1:7070";
  int64_t wait_ms = 60000;
  app.add_option("--server", server, "HOST:PORT of the daemon");
  app.add_option("--wait-ms", wait_ms, "how long to wait for the daemon's answers");
  cli::SecurityOptions security_files;
  cli::AddSecurityFlags(&app, &security_files, /*env_prefix=*/"", cli::ClearTextToken::kAnywhere);
  std::string job = "j", pipeline = "p", worker_id = "hostile", task = "t0";
  int streams = 1, calls = 1, repeat = 1, acks = 1;
  size_t task_bytes = 0, ack_task_bytes = 0;

  auto* no_hello = app.add_subcommand("no-hello", "streams that never say hello");
  no_hello->add_option("--streams", streams)->required();
  auto* churn = app.add_subcommand("churn", "streams of one task each, then all cancelled");
  for (auto* c : {churn}) {
    c->add_option("--job", job)->required();
    c->add_option("--pipeline", pipeline)->required();
    c->add_option("--streams", streams)->required();
  }
  auto* savepoints = app.add_subcommand("savepoints", "job-wide savepoint calls, cancelled");
  savepoints->add_option("--job", job)->required();
  savepoints->add_option("--calls", calls)->required();
  auto* hello = app.add_subcommand("hello", "hellos with the given ids");
  hello->add_option("--job", job)->required();
  hello->add_option("--pipeline", pipeline)->required();
  hello->add_option("--worker-id", worker_id);
  hello->add_option("--task", task);
  hello->add_option("--task-bytes", task_bytes, "make the task id this long");
  hello->add_option("--repeat", repeat);
  bool takeover = false;
  hello->add_flag("--takeover", takeover, "ask to take the task over from whoever holds it");
  auto* no_read = app.add_subcommand(
      "no-read", "task 0 on a stream that never reads, task 1 declining every round");
  no_read->add_option("--job", job)->required();
  no_read->add_option("--pipeline", pipeline)->required();
  auto* unowned = app.add_subcommand("unowned-acks", "acks for a task this stream does not hold");
  unowned->add_option("--job", job)->required();
  unowned->add_option("--pipeline", pipeline)->required();
  unowned->add_option("--task", task)->required();
  unowned->add_option("--acks", acks)->required();
  unowned->add_option("--ack-task-bytes", ack_task_bytes)->required();
  auto* invalid_utf8 = app.add_subcommand("invalid-utf8", "a hello that is not UTF-8");
  invalid_utf8->add_option("--job", job)->required();
  invalid_utf8->add_option("--pipeline", pipeline)->required();
  int tasks = 1;
  auto* create = app.add_subcommand("create-pipeline", "a pipeline of many long task ids");
  create->add_option("--job", job)->required();
  create->add_option("--pipeline", pipeline)->required();
  create->add_option("--tasks", tasks)->required();
  create->add_option("--task-bytes", task_bytes)->required();
  CLI11_PARSE(app, argc, argv);

  std::string error;
  const std::optional<cli::ChannelSecurity> security =
      cli::LoadChannelSecurity(security_files, cli::kSecurityFlagNames, &error);
  if (!security) {
    std::fprintf(stderr, "ckpt-hostile: %s\n", error.c_str());
    return 2;
  }
  const std::string& token = security->token;
  auto channel = Connect(server, *security);
  auto worker_stub = v1::WorkerService::NewStub(channel);
  const milliseconds wait(wait_ms);
  const auto started = steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration_cast<milliseconds>(steady_clock::now() - started).count();
  };

  std::vector<std::unique_ptr<Stream>> owned;  // destroyed at exit, after their OnDone
  if (*no_hello) {
    Tally tally(streams);
    for (int i = 0; i < streams; ++i) {
      owned.push_back(std::make_unique<Stream>(worker_stub.get(), token,
                                               std::vector<v1::WorkerMessage>{}, &tally, nullptr));
    }
    const bool all = tally.Wait(wait);
    auto out = tally.Json();
    out["all_ended"] = all;
    out["elapsed_ms"] = elapsed_ms();
    Print(out);
    if (!all) {  // the daemon did not end them: end them here before they are destroyed
      for (auto& s : owned) s->Cancel();
      tally.Wait(wait);
    }
    return Exit(all ? 0 : 1);
  }
  if (*churn) {
    Tally tally(streams);
    StreamCounts counts;
    for (int i = 0; i < streams; ++i) {
      owned.push_back(std::make_unique<Stream>(
          worker_stub.get(), token,
          std::vector<v1::WorkerMessage>{
              Hello("churn-" + std::to_string(i), job, pipeline, {std::to_string(i)})},
          &tally, &counts));
    }
    WaitFor([&] { return counts.welcomes.load() == streams; }, wait);
    const int welcomed = counts.welcomes.load();
    for (auto& s : owned) s->Cancel();  // a stream already ended ignores it
    const bool all = tally.Wait(wait);
    Print({{"welcomes", welcomed}, {"all_ended", all}, {"elapsed_ms", elapsed_ms()}});
    return Exit(welcomed == streams && all ? 0 : 1);
  }
  if (*savepoints) {
    auto admin = v1::AdminService::NewStub(channel);
    Tally tally(calls);
    for (int i = 0; i < calls; ++i) new CancelledSavepoint(admin.get(), token, job, &tally);
    const bool all = tally.Wait(wait);
    auto out = tally.Json();
    out["all_ended"] = all;
    out["elapsed_ms"] = elapsed_ms();
    Print(out);
    return Exit(all ? 0 : 1);
  }
  if (*hello) {
    std::string task_id = Unescape(task);
    if (task_bytes > task_id.size()) task_id += std::string(task_bytes - task_id.size(), 'x');
    Tally tally(repeat);
    for (int i = 0; i < repeat; ++i) {
      owned.push_back(std::make_unique<Stream>(
          worker_stub.get(), token,
          std::vector<v1::WorkerMessage>{
              Hello(Unescape(worker_id), Unescape(job), Unescape(pipeline), {task_id}, takeover)},
          &tally, nullptr));
    }
    // A refused hello ends its stream; an accepted one stays until the wait is over.
    tally.Wait(std::min(wait, milliseconds(5000)));
    for (auto& s : owned) s->Cancel();
    tally.Wait(wait);
    auto out = tally.Json();
    Print(out);
    return Exit(0);
  }
  if (*no_read) {
    // The non-reader on a connection of its own, without BDP probing: the flow-control window
    // stays at its initial size, so the daemon's writes stall soon and its queue grows.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    auto own = cli::CreateSecuredChannel(server, *security, args);
    auto own_stub = v1::WorkerService::NewStub(own);
    Decliner decliner(worker_stub.get(), token, Hello("decliner", job, pipeline, {"1"}), "1");
    NonReader reader(own_stub.get(), token, Hello("non-reader", job, pipeline, {"0"}));
    bool ended = false;
    const auto deadline = steady_clock::now() + wait;
    while (!ended && steady_clock::now() < deadline) {
      reader.Heartbeat();
      ended = reader.WaitDone(milliseconds(500));
    }
    reader.Cancel();  // its status is held back behind the messages it never read
    reader.WaitFinished(wait);
    decliner.CancelAndWait(wait);
    Print({{"ended", ended}, {"declines", decliner.declines()}, {"elapsed_ms", elapsed_ms()}});
    return Exit(ended ? 0 : 1);
  }
  if (*invalid_utf8) {
    // Serialised with a placeholder of the same length, which is then overwritten in the bytes.
    const std::string placeholder = "WORKERID";
    std::string bytes = Hello(placeholder, job, pipeline, {task}).SerializeAsString();
    bytes.replace(bytes.find(placeholder), placeholder.size(), "w\xff\xfe\xc3\x28id!");
    grpc::GenericStub generic(channel);
    Tally tally(1);
    new RawStream(&generic, token, bytes, &tally);
    tally.Wait(wait);
    Print(tally.Json());
    return Exit(0);
  }
  if (*create) {
    auto admin = v1::AdminService::NewStub(channel);
    v1::PipelineSpec spec;
    spec.set_job_id(job);
    spec.set_pipeline_id(pipeline);
    spec.set_interval_ms(3600000);
    for (int i = 0; i < tasks; ++i) {
      std::string id = "task-" + std::to_string(i) + "-";
      if (task_bytes > id.size()) id += std::string(task_bytes - id.size(), 'x');
      spec.add_task_ids(std::move(id));
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + wait);
    cli::AttachBearerToken(token, &ctx);
    v1::Pipeline created;
    const grpc::Status status = admin->CreatePipeline(&ctx, spec, &created);
    Print({{"code", cli::GrpcCodeName(status.error_code())},
           {"message", status.error_message()},
           {"request_bytes", spec.ByteSizeLong()}});
    return Exit(status.ok() ? 0 : 1);
  }
  if (*unowned) {
    Tally tally(1);
    StreamCounts counts;
    std::vector<v1::WorkerMessage> messages{Hello(worker_id, job, pipeline, {task})};
    const std::string bogus(ack_task_bytes, 'u');
    for (int i = 0; i < acks; ++i) {
      v1::WorkerMessage ack;
      ack.mutable_ack()->set_checkpoint_id(1);
      ack.mutable_ack()->set_task_id(bogus + "\n" + std::to_string(i));
      messages.push_back(std::move(ack));
    }
    const int total = static_cast<int>(messages.size());
    owned.push_back(
        std::make_unique<Stream>(worker_stub.get(), token, std::move(messages), &tally, &counts));
    Stream* stream = owned.back().get();
    // Every message written (the daemon read them: its stream's flow control), or the stream
    // ended (a hello refused).
    WaitFor([&] { return counts.writes.load() == total || tally.Json()["unfinished"] == 0; }, wait);
    stream->Cancel();
    tally.Wait(wait);
    auto out = tally.Json();
    out["welcomes"] = counts.welcomes.load();
    out["written"] = counts.writes.load();
    Print(out);
    return Exit(0);
  }
  return Exit(2);
}
