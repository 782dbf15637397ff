#include "sdk/runtime_core.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <stdexcept>

#include "common/channel_security.h"
#include "common/server_list.h"
#include "sdk/connect_attempt.h"
#include "sdk/pipeline_session.h"
#include "sdk/session_mux.h"

namespace ckpt::sdk::internal {
namespace {

// The core whose thread this is (nullptr off the runtime's threads).
thread_local const RuntimeCore* tls_current_core = nullptr;

// The channel's own reconnect backoff (gRPC defaults to 1 s growing to 120 s) caps how fast any
// stream can come back after the daemon restarts: keep it in the range of the streams' backoff.
constexpr int kChannelInitialReconnectMs = 100;
constexpr int kChannelMinConnectTimeoutMs = 1000;
constexpr int kChannelMaxReconnectMs = 2000;

// Completion queues for the streams, a thread each: every completion scans the tags outstanding
// on its queue (Debian's gRPC), about one per stream, so more queues mean shorter scans under
// more locks. The threads mostly sleep.
constexpr int kStreamQueues = 4;

// Runs the reactions of one queue's streams until the queue is shut down and empty.
void DrainQueue(grpc::CompletionQueue& queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) static_cast<QueuedOperation*>(tag)->Complete(ok);
}
// The largest message taken from the daemon (docs/PROTOCOL.md, "Limits": up to 64 MiB): a welcome
// with a 100,000-task restore point fits.
constexpr int kMaxDaemonMessageBytes = 64 << 20;

// What errors call the options: WorkerRuntimeOptions' fields.
constexpr cli::SecurityOptionNames kOptionNames{"ca_file", "cert_file", "key_file", "token_file",
                                                "tls_server_name"};

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const cli::ChannelSecurity& security, int index,
                                           bool own_connection) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kChannelInitialReconnectMs);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kChannelMinConnectTimeoutMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kChannelMaxReconnectMs);
  // A welcome carries the restore point's task states: a wide pipeline's (every task's, when
  // rescaled) passes gRPC's default 4 MiB.
  args.SetMaxReceiveMessageSize(kMaxDaemonMessageBytes);
  if (own_connection) {
    // Without this, channels with equal arguments share one subchannel (one TCP connection).
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("ckpt.sdk.channel_index", index);
  }
  return cli::CreateSecuredChannel(address, security, args);
}

}  // namespace

RuntimeCore::Checked RuntimeCore::Check(WorkerRuntimeOptions options) {
  cli::SecurityOptions files;
  files.ca_file = options.ca_file;
  files.cert_file = options.cert_file;
  files.key_file = options.key_file;
  files.token_file = options.token_file;
  files.tls_server_name = options.tls_server_name;
  std::string error;
  std::optional<std::vector<std::string>> servers =
      cli::ParseServerList(options.server_address, "server_address", &error);
  std::optional<cli::ChannelSecurity> security;
  if (servers) security = cli::LoadChannelSecurity(files, kOptionNames, &error);
  for (size_t i = 0; security && error.empty() && i < servers->size(); ++i) {
    error = cli::CheckTokenTransport((*servers)[i], *security, kOptionNames);
  }
  if (!error.empty()) throw std::invalid_argument("ckpt::sdk::WorkerRuntime: " + error);
  return {std::move(options), std::move(*servers), std::move(*security)};
}

RuntimeCore::RuntimeCore(WorkerRuntimeOptions options) : RuntimeCore(Check(std::move(options))) {}

RuntimeCore::RuntimeCore(Checked checked)
    : server_address_(std::move(checked.options.server_address)),
      servers_(std::move(checked.servers)),
      security_(checked.security),
      channels_per_server_(std::max(checked.options.channels, 1)),
      transport_(checked.options.transport),
      token_(kOptionNames.token_file, std::move(checked.options.token_file),
             std::move(checked.security.token)),
      seed_base_(std::random_device{}() * 0x9E3779B97F4A7C15ULL),
      io_(std::max(checked.options.threads, 1)) {
  const int threads = std::max(checked.options.threads, 1);
  // The first daemon's channels start connecting now, as they did before lists existed.
  StubFor(servers_.front());
  work_.emplace(io_.get_executor());
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { RunThread(); });
  for (int i = 0; i < kStreamQueues; ++i) {
    queues_.push_back(std::make_unique<grpc::CompletionQueue>());
    queue_threads_.emplace_back([queue = queues_.back().get()] { DrainQueue(*queue); });
  }
}

grpc::CompletionQueue& RuntimeCore::NextQueue() {
  return *queues_[next_queue_.fetch_add(1, std::memory_order_relaxed) % queues_.size()];
}

RuntimeCore::~RuntimeCore() { Shutdown(); }

void RuntimeCore::RunThread() {
  tls_current_core = this;
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ckpt worker sdk: a handler threw (ignored): %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "ckpt worker sdk: a handler threw (ignored)\n");
    }
  }
}

bool RuntimeCore::RunningInThisThread() const { return tls_current_core == this; }

bool RuntimeCore::RunAfter(const Strand& strand, std::chrono::milliseconds delay,
                           std::function<void()> fn) {
  // Held across the wait's start: Shutdown cannot destroy the timer service meanwhile.
  std::shared_lock<std::shared_mutex> lock(post_mu_);
  if (closed_) return false;
  auto timer = std::make_shared<boost::asio::steady_timer>(strand, delay);
  // Touched only here and by its own completion (on strand): no other thread ever sees the timer.
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& error) {
    if (!error) fn();
  });
  return true;
}

v1::WorkerService::Stub& RuntimeCore::StubFor(const std::string& address) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  ServerChannels& server = channels_[address];
  if (server.stubs.empty()) {
    for (int i = 0; i < channels_per_server_; ++i) {
      server.channels.push_back(MakeChannel(address, security_, i, channels_per_server_ > 1));
      server.stubs.push_back(v1::WorkerService::NewStub(server.channels.back()));
    }
  }
  return *server.stubs[server.next++ % server.stubs.size()];
}

std::shared_ptr<Attempt> RuntimeCore::StartAttempt(const std::string& address, uint64_t attempt_id,
                                                   v1::WorkerMessage hello,
                                                   std::shared_ptr<AttemptListener> listener) {
  v1::WorkerService::Stub& stub = StubFor(address);
  bool session = transport_ == WorkerTransport::kSession;
  // Two tries: a call found used up (its last channel just went) is replaced once.
  for (int tries = 0; session && tries < 2; ++tries) {
    std::shared_ptr<SessionMux> mux;
    {
      std::lock_guard<std::mutex> lock(channels_mu_);
      if (connect_only_addresses_.count(address)) {
        session = false;
        break;
      }
      std::shared_ptr<SessionMux>& slot = sessions_by_stub_[&stub];
      if (!slot || !slot->Usable()) {
        slot = SessionMux::Start(stub, NextQueue(), CurrentToken());
        std::erase_if(session_calls_, [](const auto& call) { return call.expired(); });
        session_calls_.push_back(slot);
      }
      mux = slot;
    }
    if (const uint32_t channel = mux->Open(hello, listener, attempt_id)) {
      return std::make_shared<ChannelAttempt>(std::move(mux), channel);
    }
  }
  // Read at each attempt: a token rotated in its file is used from the next stream on.
  return ConnectAttempt::Start(stub, NextQueue(), attempt_id, std::move(hello), CurrentToken(),
                               std::move(listener));
}

void RuntimeCore::SessionUnsupported(const std::string& address) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  if (connect_only_addresses_.insert(address).second) {
    std::fprintf(stderr,
                 "ckpt worker sdk: %s has no WorkerService.Session (UNIMPLEMENTED): one Connect "
                 "stream per pipeline there\n",
                 address.c_str());
  }
}

bool RuntimeCore::MayConnectTo(const std::string& address) {
  // Whether a token is sent at all is fixed at start (only its content rotates): the token read
  // then stands for it.
  const std::string why = cli::CheckTokenTransport(address, security_, kOptionNames);
  if (why.empty()) return true;
  std::lock_guard<std::mutex> lock(channels_mu_);
  if (refused_addresses_.insert(address).second) {
    std::fprintf(stderr, "ckpt worker sdk: not following the leader a daemon named: %s\n",
                 why.c_str());
  }
  return false;
}

uint64_t RuntimeCore::NextSeed() {
  // splitmix64 over a counter: distinct, well-mixed seeds.
  uint64_t z = seed_base_ + 0x9E3779B97F4A7C15ULL * (next_seed_.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void RuntimeCore::Register(const std::shared_ptr<PipelineSession>& session) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  sessions_[session.get()] = session;
}

void RuntimeCore::Unregister(const PipelineSession* session) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  sessions_.erase(session);
}

void RuntimeCore::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (RunningInThisThread()) {
    // Joining our own thread cannot work; failing loudly beats a deadlock.
    std::fprintf(stderr, "ckpt worker sdk: WorkerRuntime destroyed from one of its own handlers\n");
    std::abort();
  }
  std::vector<std::shared_ptr<PipelineSession>> live;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [ptr, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  for (auto& session : live) session->Stop();
  // Cancelled streams end promptly; their OnDone runs on gRPC threads and posts to the strands,
  // which the threads still run. After this no gRPC reaction refers to any pipeline.
  for (auto& session : live) session->WaitUntilStoppedForever();
  live.clear();
  std::vector<std::shared_ptr<SessionMux>> calls;
  {
    // Every channel has ended; a Session call may still be open or on its way out (its last
    // channel just went): each is cancelled, and waited for, so that none of its operations is
    // started on a queue being shut down.
    std::lock_guard<std::mutex> lock(channels_mu_);
    for (auto& weak : session_calls_) {
      if (auto call = weak.lock()) calls.push_back(std::move(call));
    }
    session_calls_.clear();
    sessions_by_stub_.clear();
  }
  for (auto& call : calls) call->CancelCall();
  for (auto& call : calls) call->WaitUntilDone();
  calls.clear();
  {
    std::unique_lock<std::shared_mutex> lock(post_mu_);
    closed_ = true;
  }
  work_.reset();
  io_.stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  // Every stream has ended (above): the queues hold nothing more for a pipeline.
  for (auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : queue_threads_) thread.join();
  queue_threads_.clear();
  // Destroys what is still queued (user timers, late posts) while the services are alive: handlers
  // holding pipelines release them, and pipelines that still have handles keep valid strands.
  io_.shutdown();
}

}  // namespace ckpt::sdk::internal
