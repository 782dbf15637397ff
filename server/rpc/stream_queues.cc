#include "rpc/stream_queues.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "rpc/async_bidi_reactor.h"

namespace ckpt {

namespace {

// Connect calls requested ahead on each queue: a burst of new streams is accepted without waiting
// for the queue's thread to request the next one.
constexpr int kPendingConnectsPerQueue = 4;

// While Stop waits for the accepted calls to end: how often it says it still waits.
constexpr auto kLiveCallsReport = std::chrono::seconds(10);

}  // namespace

// One requested Connect call: the context and stream gRPC fills when a call arrives.
class StreamQueues::PendingConnect final : public QueuedOperation {
 public:
  PendingConnect(StreamQueues& owner, grpc::ServerCompletionQueue& queue)
      : owner_(owner),
        queue_(queue),
        context_(std::make_unique<grpc::ServerContext>()),
        stream_(std::make_unique<Stream>(context_.get())) {}

  void Request(v1::WorkerService::AsyncService& service) {
    Arm(&Completed);
    service.RequestConnect(context_.get(), stream_.get(), &queue_, &queue_,
                           static_cast<QueuedOperation*>(this));
  }

 private:
  static void Completed(QueuedOperation& operation, bool ok) {
    std::unique_ptr<PendingConnect> self(static_cast<PendingConnect*>(&operation));
    if (!ok) return;                            // the server is shutting down
    self->owner_.RequestConnect(self->queue_);  // the next caller first, then this one
    self->owner_.accept_(std::move(self->context_), std::move(self->stream_),
                         self->owner_.TakeTicket());
  }

  StreamQueues& owner_;
  grpc::ServerCompletionQueue& queue_;
  std::unique_ptr<grpc::ServerContext> context_;
  std::unique_ptr<Stream> stream_;
};

StreamQueues::StreamQueues(grpc::ServerBuilder& builder, size_t count) {
  for (size_t i = 0; i < std::max<size_t>(1, count); ++i) {
    queues_.push_back(builder.AddCompletionQueue());
  }
}

StreamQueues::~StreamQueues() { Stop(); }

void StreamQueues::Start(v1::WorkerService::AsyncService& service, Accept accept) {
  service_ = &service;
  accept_ = std::move(accept);
  for (auto& queue : queues_) {
    for (int i = 0; i < kPendingConnectsPerQueue; ++i) RequestConnect(*queue);
  }
  for (auto& queue : queues_) {
    threads_.emplace_back([q = queue.get()] { Drain(*q); });
  }
}

void StreamQueues::RequestConnect(grpc::ServerCompletionQueue& queue) {
  MutexLock lock(mu_);
  if (stopped_) return;
  auto pending = std::make_unique<PendingConnect>(*this, queue);
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
