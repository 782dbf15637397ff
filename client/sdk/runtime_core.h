#pragma once
// What every pipeline of a WorkerRuntime shares: the io_context and its threads, the gRPC channels
// (to each daemon of the server list, and to leaders they name), the Session calls on them (one
// per channel, sdk/session_mux.h), and the list of live pipelines (so that shutdown can stop them
// all).

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "ckpt/worker.h"
#include "common/security_options.h"
#include "sdk/attempt.h"
#include "sdk/token_source.h"

namespace ckpt::sdk::internal {

class PipelineSession;
class SessionMux;

// A pipeline's serialized context: its handlers, its state machine and the user's Post/RunAfter
// work run there, one at a time.
using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

// An io_context whose handlers can be destroyed without destroying the context: pipelines may
// outlive the runtime (users hold handles), and their strands and timers need the context's
// services until they go.
class RuntimeIoContext : public boost::asio::io_context {
 public:
  using boost::asio::execution_context::shutdown;
  using boost::asio::io_context::io_context;
};

// Threading: safe for concurrent use without external synchronization. Shutdown is called once,
// from a thread that is not one of the runtime's.
// Lifetime: shared by the WorkerRuntime and every PipelineSession; the last one out destroys it.
class RuntimeCore {
 public:
  // Throws std::invalid_argument when a credential file of `options` cannot be used (see
  // WorkerRuntime), before any thread or channel exists.
  explicit RuntimeCore(WorkerRuntimeOptions options);
  ~RuntimeCore();
  RuntimeCore(const RuntimeCore&) = delete;
  RuntimeCore& operator=(const RuntimeCore&) = delete;

  // Stops every pipeline, waits for their streams to end, joins the threads and destroys the queued
  // handlers. Afterwards Post refuses everything.
  void Shutdown();

  // Posts fn to ex unless the runtime shut down; false (and fn destroyed) if it did.
  template <class Executor, class Fn>
  bool Post(const Executor& ex, Fn&& fn) {
    std::shared_lock<std::shared_mutex> lock(post_mu_);
    if (closed_) return false;
    boost::asio::post(ex, std::forward<Fn>(fn));
    return true;
  }
  // Runs fn on strand once delay has passed, unless the runtime shut down first; false (and fn
  // destroyed) if it had. The timer is owned by its own wait, so nothing outside has to outlive
  // it: Shutdown destroys the two together, fn unrun.
  bool RunAfter(const Strand& strand, std::chrono::milliseconds delay, std::function<void()> fn);

  RuntimeIoContext& io_context() { return io_; }
  const std::string& server_address() const { return server_address_; }
  // server_address parsed (common/server_list.h): at least one.
  const std::vector<std::string>& servers() const { return servers_; }
  // The stub of the next channel to `address`, round robin over `channels` channels made on its
  // first use. Stubs live as long as the core.
  v1::WorkerService::Stub& StubFor(const std::string& address);
  // The completion queue for the next stream, round robin; each has a thread of the runtime
  // that runs its streams' reactions (sdk/connect_attempt.h). Valid until Shutdown has joined
  // them, which is after every pipeline's stream ended.
  grpc::CompletionQueue& NextQueue();
  // A new attempt of `listener`'s (its id `attempt_id`) at `address` with `hello`: a channel of
  // that channel's Session call (opened on first use) or, with the Connect transport or where
  // the daemon answered Session with UNIMPLEMENTED, a Connect stream of its own.
  std::shared_ptr<Attempt> StartAttempt(const std::string& address, uint64_t attempt_id,
                                        v1::WorkerMessage hello,
                                        std::shared_ptr<AttemptListener> listener);
  // The daemon at `address` answered Session with UNIMPLEMENTED: Connect streams from now on.
  void SessionUnsupported(const std::string& address);
  // True when a stream may go to `address` (a leader named by a daemon): a token is sent in clear
  // text only to loopback, as to the addresses of server_address. Says why not on stderr, once
  // per address.
  bool MayConnectTo(const std::string& address);
  // The bearer token for a new stream ("" for none), re-read if its file changed.
  std::string CurrentToken() { return token_.Current(); }
  // A fresh seed for a pipeline's jitter.
  uint64_t NextSeed();
  // True on one of this runtime's threads.
  bool RunningInThisThread() const;

  void Register(const std::shared_ptr<PipelineSession>& session);
  void Unregister(const PipelineSession* session);

 private:
  // The options and what their files hold, checked.
  struct Checked {
    WorkerRuntimeOptions options;
    std::vector<std::string> servers;
    cli::ChannelSecurity security;
  };
  // The channels to one daemon.
  struct ServerChannels {
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    std::vector<std::unique_ptr<v1::WorkerService::Stub>> stubs;
    uint64_t next = 0;  // round robin over stubs
  };
  // Throws std::invalid_argument naming the field and the file.
  static Checked Check(WorkerRuntimeOptions options);
  explicit RuntimeCore(Checked checked);
  void RunThread();

  // Constant after construction.
  const std::string server_address_;
  const std::vector<std::string> servers_;
  const cli::ChannelSecurity security_;  // holds the key and the token: never log it
  const int channels_per_server_;
  const WorkerTransport transport_;
  TokenSource token_;  // itself thread-safe
  const uint64_t seed_base_;

  RuntimeIoContext io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;  // joined by Shutdown

  // The streams' completion queues, a thread each draining it (joined by Shutdown).
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues_;
  std::vector<std::thread> queue_threads_;
  std::atomic<uint64_t> next_queue_{0};
  bool shut_down_ = false;  // touched only by the constructor and Shutdown

  std::atomic<uint64_t> next_seed_{0};

  std::mutex channels_mu_;
  // Entries are never removed: a stub handed out stays valid. Grows by the leaders named over the
  // runtime's life, a handful.
  std::map<std::string, ServerChannels> channels_;  // guarded by channels_mu_
  std::set<std::string> refused_addresses_;         // guarded by channels_mu_
  // The Session call of each stub (one per gRPC channel), replaced once it takes no more
  // channels; the addresses whose daemon has no Session.
  std::map<const v1::WorkerService::Stub*, std::shared_ptr<SessionMux>>
      sessions_by_stub_;  // guarded by channels_mu_
  // Every call made, until it is gone: Shutdown waits for each before the queues close.
  std::vector<std::weak_ptr<SessionMux>> session_calls_;  // guarded by channels_mu_
  std::set<std::string> connect_only_addresses_;          // guarded by channels_mu_

  std::shared_mutex post_mu_;
  bool closed_ = false;  // guarded by post_mu_

  std::mutex sessions_mu_;
  std::unordered_map<const PipelineSession*, std::weak_ptr<PipelineSession>>
      sessions_;  // guarded by sessions_mu_
};

}  // namespace ckpt::sdk::internal
