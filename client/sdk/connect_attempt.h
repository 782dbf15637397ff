#pragma once
// One Connect stream of one pipeline: a BidiCall (sdk/bidi_call.h) that writes its messages one
// at a time and hands what it reads to the pipeline's listener under the attempt's id.

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ckpt/v1/worker.grpc.pb.h"
#include "sdk/attempt.h"
#include "sdk/bidi_call.h"

namespace ckpt::sdk::internal {

// Threading: Send and Cancel are safe from any thread; reactions run on the queue's thread.
// Lifetime: the attempt holds itself until its end, the listener until it has been told.
class ConnectAttempt final : public Attempt,
                             public BidiCall<v1::WorkerMessage, v1::CoordinatorMessage>,
                             public std::enable_shared_from_this<ConnectAttempt> {
 public:
  // More queued messages than this means the daemon stopped reading: drop rather than grow.
  static constexpr size_t kMaxQueuedMessages = 4096;

  // Opens the stream on `queue` with `hello` as its first message, with `token` (unless empty)
  // as its `authorization: Bearer` metadata.
  static std::shared_ptr<ConnectAttempt> Start(v1::WorkerService::Stub& stub,
                                               grpc::CompletionQueue& queue, uint64_t id,
                                               v1::WorkerMessage hello, const std::string& token,
                                               std::shared_ptr<AttemptListener> listener);

  bool Send(v1::WorkerMessage message) override {
    return Enqueue(std::move(message), kMaxQueuedMessages);
  }
  void Cancel() override { CancelCall(); }
  bool over_session() const override { return false; }

 private:
  ConnectAttempt(uint64_t id, std::shared_ptr<AttemptListener> listener)
      : id_(id), listener_(std::move(listener)) {}

  void TakeNext(std::deque<v1::WorkerMessage>& queue, v1::WorkerMessage* next) override {
    *next = std::move(queue.front());
    queue.pop_front();
  }
  void OnMessage(v1::CoordinatorMessage message) override {
    listener_->OnAttemptMessage(id_, std::move(message));
  }
  void OnEnded(const grpc::Status& status, std::optional<std::string> leader) override {
    // Let go of the listener as it is told: it may release its own reference to us at once.
    std::shared_ptr<AttemptListener> listener = std::move(listener_);
    listener->OnAttemptDone(id_, status, std::move(leader));
  }

  const uint64_t id_;
  std::shared_ptr<AttemptListener> listener_;  // the read chain and the end only
};

}  // namespace ckpt::sdk::internal
