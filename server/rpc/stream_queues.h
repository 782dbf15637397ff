#pragma once
// StreamQueues: the completion queues of the worker streams, each with one thread of its own that
// runs its streams' reactions (rpc/async_bidi_reactor.h says why not gRPC's callback API). New
// WorkerService.Connect and WorkerService.Session calls are requested on every queue, and a call
// stays on the queue that accepted it, so streams spread over the queues as they arrive.
//
// Threading: construct (before the server's BuildAndStart), Start (after it) and Stop (after the
// server's Shutdown) on the controlling thread. `accept` runs on a queue's thread.

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "common/mutex.h"

namespace ckpt {

class StreamQueues {
 public:
  using Stream = grpc::ServerAsyncReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>;
  using SessionStream = grpc::ServerAsyncReaderWriter<v1::CoordinatorFrame, v1::WorkerFrame>;
  // `ticket` counts the call as live until it is released (AsyncBidiReactor releases it once its
  // OnDone has returned); Stop waits for every ticket.
  using Accept = std::function<void(std::unique_ptr<grpc::ServerContext>, std::unique_ptr<Stream>,
                                    std::shared_ptr<void> ticket)>;
  using AcceptSession =
      std::function<void(std::unique_ptr<grpc::ServerContext>, std::unique_ptr<SessionStream>,
                         std::shared_ptr<void> ticket)>;

  // Adds `count` queues (at least one) to `builder`.
  StreamQueues(grpc::ServerBuilder& builder, size_t count);
  // Stops (see Stop).
  ~StreamQueues();
  StreamQueues(const StreamQueues&) = delete;
  StreamQueues& operator=(const StreamQueues&) = delete;

  // Once the server is started: requests Connect and Session calls on every queue and starts the
  // threads. `service` must be registered with that server and outlive the queues.
  void Start(v1::WorkerService::AsyncService& service, Accept accept, AcceptSession accept_session);
  // Once the server is shut down (its calls cancelled): waits until every accepted call is over
  // (its reactions may still start operations, such as the Finish of a cancelled stream, and a
  // queue must not be shut down under them), logging while it waits; then shuts the queues down,
  // lets each thread drain its queue and joins them. Idempotent.
  void Stop();

  size_t size() const { return queues_.size(); }

 private:
  template <typename Kind>
  class PendingCall;
  struct ConnectKind;
  struct SessionKind;
  template <typename Kind>
  void Request(grpc::ServerCompletionQueue& queue) CKPT_EXCLUDES(mu_);
  static void Drain(grpc::ServerCompletionQueue& queue);
  std::shared_ptr<void> TakeTicket() CKPT_EXCLUDES(live_mu_);

  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  // Set by Start before any thread runs; read by the threads.
  v1::WorkerService::AsyncService* service_ = nullptr;
  Accept accept_;
  AcceptSession accept_session_;
  // Guards requesting against Stop: a request on a queue that is shut down aborts gRPC, and a
  // call accepted just before the server's shutdown still asks for the next one.
  Mutex mu_;
  bool stopped_ CKPT_GUARDED_BY(mu_) = false;

  Mutex live_mu_;
  CondVar no_live_calls_;
  size_t live_calls_ CKPT_GUARDED_BY(live_mu_) = 0;  // accepted, tickets not yet released
};

}  // namespace ckpt
