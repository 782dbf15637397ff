#pragma once
// One Connect stream of one pipeline: a gRPC client bidi reactor, modelled on gRPC's own
// health-check WatchReactor (one write outstanding, a queue for the rest).

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ckpt/v1/worker.grpc.pb.h"

namespace ckpt::sdk::internal {

// Receives what a stream reads and how it ended.
// Threading: called on gRPC threads, from reactions: must not block (post and return).
class AttemptListener {
 public:
  virtual ~AttemptListener() = default;
  virtual void OnAttemptMessage(uint64_t attempt_id, v1::CoordinatorMessage message) = 0;
  // The last call for this attempt; no message follows it. `leader`: the stream's `ckpt-leader`
  // trailer (a standby refused it; "" when the standby knows no leader), nullopt without one.
  virtual void OnAttemptDone(uint64_t attempt_id, grpc::Status status,
                             std::optional<std::string> leader) = 0;
};

// Threading: Send and Cancel are safe from any thread; reactions run on gRPC threads.
// Lifetime: the attempt holds itself until OnDone. Others may hold a shared_ptr longer: Send and
// Cancel are then no-ops. The listener is held until OnDone.
class ConnectAttempt final
    : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  // More queued messages than this means the daemon stopped reading: drop rather than grow.
  static constexpr size_t kMaxQueuedMessages = 4096;

  // Opens the stream with `hello` as its first message, with `token` (unless empty) as its
  // `authorization: Bearer` metadata.
  static std::shared_ptr<ConnectAttempt> Start(v1::WorkerService::Stub& stub, uint64_t id,
                                               v1::WorkerMessage hello, const std::string& token,
                                               std::shared_ptr<AttemptListener> listener);

  ConnectAttempt(const ConnectAttempt&) = delete;
  ConnectAttempt& operator=(const ConnectAttempt&) = delete;

  // Queues a message. False if the stream is ending (or the queue is full): the message is dropped.
  bool Send(v1::WorkerMessage message);
  // Ends the stream (CANCELLED); OnAttemptDone follows.
  void Cancel();

  uint64_t id() const { return id_; }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  ConnectAttempt(uint64_t id, std::shared_ptr<AttemptListener> listener);
  // Starts the write of outgoing_.front() if none is in flight.
  void MaybeStartWriteLocked();

  // Constant after construction.
  const uint64_t id_;
  grpc::ClientContext context_;

  // Touched only by the read chain (one read at a time) and OnDone.
  v1::CoordinatorMessage incoming_;
  std::shared_ptr<AttemptListener> listener_;
  std::shared_ptr<ConnectAttempt> self_;  // set by Start, released in OnDone

  std::atomic<bool> done_{false};  // OnDone ran

  std::mutex mu_;
  // The front is in flight while writing_ is true and must stay alive until OnWriteDone.
  std::deque<v1::WorkerMessage> outgoing_;  // guarded by mu_
  bool writing_ = false;                    // guarded by mu_
  // The read side ended (the hold is gone, OnDone may come) or a write failed: no more writes.
  bool closed_ = false;  // guarded by mu_
};

}  // namespace ckpt::sdk::internal
