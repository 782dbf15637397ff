#include "rpc/stream_queues.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "rpc/async_bidi_reactor.h"

namespace ckpt {

namespace {

// Calls of each method requested ahead on each queue: a burst of new streams is accepted without
// waiting for the queue's thread to request the next one.
constexpr int kPendingConnectsPerQueue = 4;

// While Stop waits for the accepted calls to end: how often it says it still waits.
constexpr auto kLiveCallsReport = std::chrono::seconds(10);

}  // namespace

// The two methods a queue serves: how each is requested and handed over.
struct StreamQueues::ConnectKind {
  using CallStream = Stream;
  static void Request(v1::WorkerService::AsyncService& service, grpc::ServerContext* context,
                      CallStream* stream, grpc::ServerCompletionQueue* queue, void* tag) {
    service.RequestConnect(context, stream, queue, queue, tag);
  }
  static void Accept(StreamQueues& owner, std::unique_ptr<grpc::ServerContext> context,
                     std::unique_ptr<CallStream> stream) {
    owner.accept_(std::move(context), std::move(stream), owner.TakeTicket());
  }
};

struct StreamQueues::SessionKind {
  using CallStream = SessionStream;
  static void Request(v1::WorkerService::AsyncService& service, grpc::ServerContext* context,
                      CallStream* stream, grpc::ServerCompletionQueue* queue, void* tag) {
    service.RequestSession(context, stream, queue, queue, tag);
  }
  static void Accept(StreamQueues& owner, std::unique_ptr<grpc::ServerContext> context,
                     std::unique_ptr<CallStream> stream) {
    owner.accept_session_(std::move(context), std::move(stream), owner.TakeTicket());
  }
};

// One requested call: the context and stream gRPC fills when a call arrives.
template <typename Kind>
class StreamQueues::PendingCall final : public QueuedOperation {
 public:
  using CallStream = typename Kind::CallStream;

  PendingCall(StreamQueues& owner, grpc::ServerCompletionQueue& queue)
      : owner_(owner),
        queue_(queue),
        context_(std::make_unique<grpc::ServerContext>()),
        stream_(std::make_unique<CallStream>(context_.get())) {}

  void Request(v1::WorkerService::AsyncService& service) {
    Arm(&Completed);
    Kind::Request(service, context_.get(), stream_.get(), &queue_,
                  static_cast<QueuedOperation*>(this));
  }

 private:
  static void Completed(QueuedOperation& operation, bool ok) {
    std::unique_ptr<PendingCall> self(static_cast<PendingCall*>(&operation));
    if (!ok) return;                                    // the server is shutting down
    self->owner_.template Request<Kind>(self->queue_);  // the next caller first, then this one
    Kind::Accept(self->owner_, std::move(self->context_), std::move(self->stream_));
  }

  StreamQueues& owner_;
  grpc::ServerCompletionQueue& queue_;
  std::unique_ptr<grpc::ServerContext> context_;
  std::unique_ptr<CallStream> stream_;
};

StreamQueues::StreamQueues(grpc::ServerBuilder& builder, size_t count) {
  for (size_t i = 0; i < std::max<size_t>(1, count); ++i) {
    queues_.push_back(builder.AddCompletionQueue());
  }
}

StreamQueues::~StreamQueues() { Stop(); }

void StreamQueues::Start(v1::WorkerService::AsyncService& service, Accept accept,
                         AcceptSession accept_session) {
  service_ = &service;
  accept_ = std::move(accept);
  accept_session_ = std::move(accept_session);
  for (auto& queue : queues_) {
    for (int i = 0; i < kPendingConnectsPerQueue; ++i) {
      Request<ConnectKind>(*queue);
      Request<SessionKind>(*queue);
    }
  }
  for (auto& queue : queues_) {
    threads_.emplace_back([q = queue.get()] { Drain(*q); });
  }
}

template <typename Kind>
void StreamQueues::Request(grpc::ServerCompletionQueue& queue) {
  MutexLock lock(mu_);
  if (stopped_) return;
  auto pending = std::make_unique<PendingCall<Kind>>(*this, queue);
  pending->Request(*service_);
  pending.release();  // the queue hands it back, and Completed deletes it
}

void StreamQueues::Drain(grpc::ServerCompletionQueue& queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) static_cast<QueuedOperation*>(tag)->Complete(ok);
}

std::shared_ptr<void> StreamQueues::TakeTicket() {
  MutexLock lock(live_mu_);
  ++live_calls_;
  // No object of its own: the deleter is the release. StreamQueues outlives every call (Stop
  // waits for them).
  return std::shared_ptr<void>(this, [this](void*) {
    MutexLock lock(live_mu_);
    if (--live_calls_ == 0) no_live_calls_.NotifyAll();
  });
}

void StreamQueues::Stop() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
  }
  if (!threads_.empty()) {
    // Without a bound: a ticket released after the queues are gone would touch freed memory,
    // and the server's shutdown ends every call, so this is short; if it is not, it says so.
    MutexLock lock(live_mu_);
    while (!no_live_calls_.WaitFor(lock, kLiveCallsReport,
                                   [this]() CKPT_REQUIRES(live_mu_) { return live_calls_ == 0; })) {
      spdlog::error("worker streams: {} call(s) still open after the server's shutdown; waiting",
                    live_calls_);
    }
  }
  {
    MutexLock lock(mu_);
    stopped_ = true;
    for (auto& queue : queues_) queue->Shutdown();
  }
  if (threads_.empty()) {
    // Never started: nothing was requested, but a queue must be drained before it is destroyed.
    for (auto& queue : queues_) Drain(*queue);
    return;
  }
  for (auto& thread : threads_) thread.join();
}

}  // namespace ckpt
