// ckpt-bench-fanout-anchor: bare gRPC fan-out and fan-in of one wide pipeline, the anchor for the
// daemon's own share of a round (ckptd_round_fan_out_seconds, ckptd_round_fan_in_seconds).
//
// The server speaks the worker protocol's messages and nothing else: no coordinator, no store.
// Every --interval-ms one thread writes a trigger to each of --streams streams, one after the
// other (fan-out: its first write to its last one done); the workers ack each of their tasks in a
// message of its own; the thread that reads the round's last ack writes a complete to every
// stream (fan-in: that read to the last complete done). The server uses gRPC's synchronous API:
// a thread per stream reads it, and a write returns once gRPC has taken the message.
//
// The server starts the workers itself, as a second process of this program (--connect), so
// that one command runs the shape:
//   ckpt-bench-fanout-anchor --tasks 2000 --streams 200            1 pipeline x 2,000 tasks
// Prints one JSON object on stdout (microseconds over the rounds after --warmup-rounds).

#include <grpcpp/grpcpp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "common/bench_args.h"
#include "common/sample_recorder.h"

namespace {

using namespace ckpt;
using namespace ckpt::bench;
using SteadyClock = std::chrono::steady_clock;
using Stream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>;

int64_t MicrosSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t).count();
}

// The server's side. Threading: `mu_` guards the streams and the round; a stream is written by
// the driver (triggers) or by the reader of the round's last ack (completes), never both at once:
// the driver waits for the round's complete before the next trigger.
class FanoutServer final : public v1::WorkerService::Service {
 public:
  FanoutServer(int streams, int tasks, SampleRecorder& fan_out, SampleRecorder& fan_in)
      : streams_wanted_(streams), tasks_(tasks), fan_out_(fan_out), fan_in_(fan_in) {}

  grpc::Status Connect(grpc::ServerContext* context, Stream* stream) override {
    v1::WorkerMessage in;
    if (!stream->Read(&in) || !in.has_hello()) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "hello first"};
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams_.push_back(stream);
    }
    changed_.notify_all();
    while (stream->Read(&in)) {
      if (in.has_ack()) OnAck(in.ack().checkpoint_id());
    }
    // Gone from the list before its stream is: every write happens under mu_.
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(streams_, stream);
    return grpc::Status::OK;
  }

  // Runs `rounds` rounds; false if the workers did not all come, or a round did not complete.
  bool Drive(int rounds, int warmup_rounds, std::chrono::milliseconds interval) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_for(lock, std::chrono::seconds(60),
                           [&] { return static_cast<int>(streams_.size()) == streams_wanted_; })) {
      std::fprintf(stderr, "only %zu of %d streams came\n", streams_.size(), streams_wanted_);
      return false;
    }
    lock.unlock();
    auto next = SteadyClock::now();
    for (int round = 1; round <= rounds; ++round) {
      if (round == warmup_rounds + 1) {
        fan_out_.Arm();
        fan_in_.Arm();
      }
      next += interval;
      std::this_thread::sleep_until(next);
      v1::CoordinatorMessage trigger;
      trigger.mutable_trigger()->set_checkpoint_id(round);
      trigger.mutable_trigger()->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
      trigger.mutable_trigger()->set_generation(1);
      lock.lock();
      round_ = round;
      acked_ = 0;
      const auto start = SteadyClock::now();
      trigger.mutable_trigger()->set_timestamp_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count());
      for (Stream* stream : streams_) stream->Write(trigger);
      fan_out_.Record(MicrosSince(start));
      if (!changed_.wait_for(lock, std::chrono::seconds(10), [&] { return completed_ == round; })) {
        std::fprintf(stderr, "round %d: %d of %d acks within 10 s\n", round, acked_, tasks_);
        return false;
      }
      lock.unlock();
    }
    fan_out_.Disarm();
    fan_in_.Disarm();
    return true;
  }

 private:
  void OnAck(int64_t checkpoint_id) {
    const auto read_at = SteadyClock::now();  // before the lock: its wait is part of the fan-in
    std::lock_guard<std::mutex> lock(mu_);
    if (checkpoint_id != round_ || ++acked_ != tasks_) return;
    v1::CoordinatorMessage complete;
    complete.mutable_complete()->set_checkpoint_id(checkpoint_id);
    complete.mutable_complete()->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
    for (Stream* stream : streams_) stream->Write(complete);
    fan_in_.Record(MicrosSince(read_at));
    completed_ = checkpoint_id;
    changed_.notify_all();
  }

  const int streams_wanted_;
  const int tasks_;
  SampleRecorder& fan_out_;
  SampleRecorder& fan_in_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Stream*> streams_;  // guarded by mu_; each written only under it
  int64_t round_ = 0;             // guarded by mu_
  int acked_ = 0;                 // guarded by mu_
  int64_t completed_ = 0;         // guarded by mu_
};

// One worker stream: sends `hello`, then acks tasks [first, last) of every trigger until the
// stream ends. Returns whether the server sent it anything (false: it ended before its first
// trigger); `status` is how it ended.
bool ServeStream(v1::WorkerService::Stub& stub, const v1::WorkerMessage& hello, int first, int last,
                 grpc::Status* status) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  auto stream = stub.Connect(&context);
  bool served = false;
  v1::CoordinatorMessage in;
  bool open = stream->Write(hello);
  while (open && stream->Read(&in)) {
    served = true;
    if (!in.has_trigger()) continue;
    for (int t = first; t < last && open; ++t) {
      v1::WorkerMessage ack;
      ack.mutable_ack()->set_checkpoint_id(in.trigger().checkpoint_id());
      ack.mutable_ack()->set_task_id(std::to_string(t));
      ack.mutable_ack()->mutable_state()->set_uri("sim://anchor/p0/" + std::to_string(t) + "/" +
                                                  std::to_string(in.trigger().checkpoint_id()));
      ack.mutable_ack()->mutable_state()->set_size_bytes(1024);
      open = stream->Write(ack);
    }
  }
  *status = stream->Finish();
  return served;
}

// The workers' side: a thread per stream, which acks each of its tasks on every trigger.
int RunWorkers(const std::string& address, int streams, int tasks, int channels) {
  std::vector<std::shared_ptr<grpc::Channel>> pool;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", c);  // distinct arguments: a connection each
    pool.push_back(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  }
  std::vector<std::thread> threads;
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&, s] {
      auto stub = v1::WorkerService::NewStub(pool[s % channels]);
      v1::WorkerMessage hello;
      hello.mutable_hello()->set_worker_id("anchor-s" + std::to_string(s));
      hello.mutable_hello()->set_job_id("anchor");
      hello.mutable_hello()->set_pipeline_id("p0");
      const int first = static_cast<int>(int64_t{s} * tasks / streams);
      const int last = static_cast<int>(int64_t{s + 1} * tasks / streams);
      for (int t = first; t < last; ++t) hello.mutable_hello()->add_task_ids(std::to_string(t));
      // Two hundred streams opened at once over fresh connections: a call can fail, or be ended
      // by the server, before its first trigger (in one run 25 streams never came, and the run
      // failed). Such a stream is opened again, a few times; one that ends later is done.
      grpc::Status status;
      for (int attempt = 1; !ServeStream(*stub, hello, first, last, &status); ++attempt) {
        if (attempt == 5) {
          std::fprintf(stderr, "stream %d: ended before its first trigger, 5 times: %s\n", s,
                       status.error_message().c_str());
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  for (auto& t : threads) t.join();
  return 0;
}

nlohmann::json Summary(const std::vector<int64_t>& sorted) {
  return {{"p50_us", Percentile(sorted, 0.5)},
          {"p99_us", Percentile(sorted, 0.99)},
          {"max_us", sorted.empty() ? 0 : sorted.back()},
          {"n", sorted.size()}};
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args(argc, argv,
                 {{"tasks", "2000"},
                  {"streams", "200"},
                  {"channels", "8"},
                  {"interval-ms", "100"},
                  {"rounds", "120"},
                  {"warmup-rounds", "20"},
                  {"connect", ""}});
  const int tasks = static_cast<int>(args.Int("tasks"));
  const int streams = static_cast<int>(args.Int("streams"));
  const int channels = static_cast<int>(args.Int("channels"));
  if (tasks < 1 || streams < 1 || streams > tasks || channels < 1) {
    std::fprintf(stderr, "%s: need 1 <= --streams <= --tasks and --channels >= 1\n", argv[0]);
    return 2;
  }
  if (!args.Str("connect").empty()) {
    return RunWorkers(args.Str("connect"), streams, tasks, channels);
  }

  const int rounds = static_cast<int>(args.Int("rounds"));
  SampleRecorder fan_out(rounds), fan_in(rounds);
  FanoutServer service(streams, tasks, fan_out, fan_in);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS, 2);
  // A thread per stream, held for the stream's life, and pollers beside them.
  grpc::ResourceQuota quota("fanout-anchor");
  quota.SetMaxThreads(2 * streams + 16);
  builder.SetResourceQuota(quota);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "%s: could not listen on loopback\n", argv[0]);
    return 1;
  }

  // The workers: this program again, in a process of their own.
  const std::string address = "127.0.0.1:" + std::to_string(port);
  std::vector<std::string> worker_args = {argv[0],
                                          "--connect",
                                          address,
                                          "--streams",
                                          std::to_string(streams),
                                          "--tasks",
                                          std::to_string(tasks),
                                          "--channels",
                                          std::to_string(channels)};
  std::vector<char*> worker_argv;
  for (auto& a : worker_args) worker_argv.push_back(a.data());
  worker_argv.push_back(nullptr);
  pid_t workers = 0;
  if (posix_spawn(&workers, "/proc/self/exe", nullptr, nullptr, worker_argv.data(), environ) != 0) {
    std::fprintf(stderr, "%s: could not start the workers\n", argv[0]);
    return 1;
  }

  const bool ok = service.Drive(rounds, static_cast<int>(args.Int("warmup-rounds")),
                                std::chrono::milliseconds(args.Int("interval-ms")));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  int status = 0;
  waitpid(workers, &status, 0);

  nlohmann::json out = {{"bench", "fanout-anchor"},
                        {"api", "grpc-sync"},
                        {"tasks", tasks},
                        {"streams", streams},
                        {"channels", channels},
                        {"interval_ms", args.Int("interval-ms")},
                        {"fan_out", Summary(fan_out.TakeSorted())},
                        {"fan_in", Summary(fan_in.TakeSorted())},
                        {"status", ok ? "ok" : "failed"}};
  std::printf("%s\n", out.dump().c_str());
  return ok ? 0 : 1;
}
