// ckpt-bench-sim-stand-in: a stand-in daemon that drives ckpt-worker-sim at a rate the real
// daemon cannot reach on the same two cores, so that the simulator's own cost a round can be
// measured at 20,000 pipelines x 2 tasks at 1 s (the end-to-end runs are capped by the daemon).
//
// It speaks the worker protocol's messages and nothing else: no coordinator, no store, no lease.
// Every stream is welcomed and then triggered once per --interval-ms (streams spread over the
// interval in 10 ms slots); once it acked every task its hello named, it gets the round's
// complete. gRPC's async API on --threads completion queues, a thread each; a stream lives on the
// queue it was accepted on and is touched by that queue's thread only.
//
//   ckpt-bench-sim-stand-in --port 0 --interval-ms 1000
// Prints {"port": P} once listening, then every second {"t_s": .., "rounds": .., "streams": ..}
// (cumulative), on stdout. SIGTERM or SIGINT ends it.

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "common/bench_args.h"

namespace {

using namespace ckpt;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kTick{10};

// What a completion queue hands back: the operation's owner and what it was.
struct Tag {
  enum class Kind { kAccept, kRead, kWrite, kFinish, kTick };
  void* owner;
  Kind kind;
};

// One Connect stream. Threading: its shard's thread only.
struct Stream {
  grpc::ServerContext context;
  grpc::ServerAsyncReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage> rw{&context};
  v1::WorkerMessage in;
  std::deque<v1::CoordinatorMessage> out;  // the front is being written while `writing`
  bool writing = false;
  bool reading_done = false;  // the worker is gone: finish once no write is in flight
  bool finish_started = false;
  bool finished = false;
  bool in_slot = false;
  int tasks = 0;
  int acks = 0;
  int64_t pending = 0;  // the round in flight (0: none)
  Tag accept_tag{this, Tag::Kind::kAccept};
  Tag read_tag{this, Tag::Kind::kRead};
  Tag write_tag{this, Tag::Kind::kWrite};
  Tag finish_tag{this, Tag::Kind::kFinish};
};

// A completion queue, its thread, its streams and their schedule.
class Shard {
 public:
  Shard(v1::WorkerService::AsyncService& service, std::unique_ptr<grpc::ServerCompletionQueue> cq,
        std::chrono::milliseconds interval)
      : service_(service),
        cq_(std::move(cq)),
        slots_(std::max<size_t>(1, interval / kTick)),
        tick_at_(Clock::now()) {}

  void Run() {
    Accept();
    ArmTick();
    void* raw = nullptr;
    bool ok = false;
    while (cq_->Next(&raw, &ok)) {
      Tag& tag = *static_cast<Tag*>(raw);
      if (tag.kind == Tag::Kind::kTick) {
        OnTick();
        continue;
      }
      Stream& s = *static_cast<Stream*>(tag.owner);
      switch (tag.kind) {
        case Tag::Kind::kAccept: OnAccepted(s, ok); break;
        case Tag::Kind::kRead: OnRead(s, ok); break;
        case Tag::Kind::kWrite: OnWritten(s, ok); break;
        case Tag::Kind::kFinish: s.finished = true; break;
        case Tag::Kind::kTick: break;
      }
      if (s.finished && !s.in_slot) delete &s;
    }
  }

  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
  uint64_t streams() const { return streams_.load(std::memory_order_relaxed); }

 private:
  void Accept() {
    auto* s = new Stream;
    service_.RequestConnect(&s->context, &s->rw, cq_.get(), cq_.get(), &s->accept_tag);
  }

  void OnAccepted(Stream& s, bool ok) {
    if (!ok) {  // shutting down
      s.finished = true;
      return;
    }
    Accept();
    s.rw.Read(&s.in, &s.read_tag);
  }

  void OnRead(Stream& s, bool ok) {
    if (!ok) {
      s.reading_done = true;
      MaybeFinish(s);
      return;
    }
    if (s.in.has_hello() && s.tasks == 0) {
      s.tasks = s.in.hello().task_ids_size();
      v1::CoordinatorMessage welcome;
      welcome.mutable_welcome()->set_session_id("stand-in");
      welcome.mutable_welcome()->set_generation(1);
      welcome.mutable_welcome()->set_heartbeat_interval_ms(3000);
      welcome.mutable_welcome()->set_lease_ttl_ms(10000);
      Write(s, std::move(welcome));
      slots_[next_slot_++ % slots_.size()].push_back(&s);
      s.in_slot = true;
      streams_.fetch_add(1, std::memory_order_relaxed);
    } else if (s.in.has_ack() && s.pending != 0 && s.in.ack().checkpoint_id() == s.pending) {
      if (++s.acks == s.tasks) {
        v1::CoordinatorMessage complete;
        complete.mutable_complete()->set_checkpoint_id(s.pending);
        complete.mutable_complete()->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
        Write(s, std::move(complete));
        s.pending = 0;
        rounds_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    s.in.Clear();
    s.rw.Read(&s.in, &s.read_tag);
  }

  void Write(Stream& s, v1::CoordinatorMessage message) {
    s.out.push_back(std::move(message));
    if (!s.writing) StartWrite(s);
  }
  void StartWrite(Stream& s) {
    s.writing = true;
    s.rw.Write(s.out.front(), &s.write_tag);
  }
  void OnWritten(Stream& s, bool ok) {
    s.out.pop_front();
    s.writing = false;
    if (!ok) s.out.clear();
    if (!s.out.empty()) {
      StartWrite(s);
      return;
    }
    MaybeFinish(s);
  }
  void MaybeFinish(Stream& s) {
    if (!s.reading_done || s.writing || s.finish_started) return;
    s.finish_started = true;
    s.rw.Finish(grpc::Status::OK, &s.finish_tag);
  }

  // One slot a tick (more when late): each of its streams without a round in flight gets one.
  void OnTick() {
    while (tick_at_ <= Clock::now()) {
      std::vector<Stream*>& slot = slots_[tick_ % slots_.size()];
      for (size_t i = 0; i < slot.size();) {
        Stream& s = *slot[i];
        if (s.reading_done) {  // gone: out of the schedule; deleted once its finish is in
          s.in_slot = false;
          slot[i] = slot.back();
          slot.pop_back();
          if (s.finished) delete &s;
          continue;
        }
        if (s.pending == 0) {
          s.pending = ++next_id_;
          s.acks = 0;
          v1::CoordinatorMessage trigger;
          trigger.mutable_trigger()->set_checkpoint_id(s.pending);
          trigger.mutable_trigger()->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
          trigger.mutable_trigger()->set_generation(1);
          Write(s, std::move(trigger));
        }
        ++i;
      }
      ++tick_;
      tick_at_ += kTick;
    }
    ArmTick();
  }
  void ArmTick() {
    alarm_.Set(cq_.get(), std::chrono::system_clock::now() + (tick_at_ - Clock::now()), &tick_tag_);
  }

  v1::WorkerService::AsyncService& service_;
  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  // This shard's thread only.
  std::vector<std::vector<Stream*>> slots_;
  uint64_t next_slot_ = 0;
  uint64_t tick_ = 0;
  Clock::time_point tick_at_;
  int64_t next_id_ = 0;
  grpc::Alarm alarm_;
  Tag tick_tag_{this, Tag::Kind::kTick};
  // Read by the reporter.
  std::atomic<uint64_t> rounds_{0};
  std::atomic<uint64_t> streams_{0};
};

std::atomic<bool> g_stop{false};

}  // namespace

int main(int argc, char** argv) {
  const ckpt::bench::BenchArgs args(argc, argv,
                                    {{"port", "0"}, {"interval-ms", "1000"}, {"threads", "2"}});
  std::signal(SIGTERM, [](int) { g_stop.store(true); });
  std::signal(SIGINT, [](int) { g_stop.store(true); });

  v1::WorkerService::AsyncService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:" + args.Str("port"), grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  for (int i = 0; i < args.Int("threads"); ++i) queues.push_back(builder.AddCompletionQueue());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "ckpt-bench-sim-stand-in: cannot listen on port %s\n",
                 args.Str("port").c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<std::thread> threads;
  for (auto& queue : queues) {
    shards.push_back(std::make_unique<Shard>(service, std::move(queue),
                                             std::chrono::milliseconds(args.Int("interval-ms"))));
    threads.emplace_back([shard = shards.back().get()] { shard->Run(); });
  }
  std::printf("{\"port\": %d}\n", port);
  std::fflush(stdout);

  const Clock::time_point start = Clock::now();
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    uint64_t rounds = 0, streams = 0;
    for (const auto& shard : shards) {
      rounds += shard->rounds();
      streams += shard->streams();
    }
    std::printf("{\"t_s\": %.3f, \"rounds\": %llu, \"streams\": %llu}\n",
                std::chrono::duration<double>(Clock::now() - start).count(),
                static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(streams));
    std::fflush(stdout);
  }
  // A measuring tool: the process ends here, streams and all.
  std::_Exit(0);
}
