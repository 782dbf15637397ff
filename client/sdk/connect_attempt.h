#pragma once
// One Connect stream of one pipeline: a gRPC async client stream on one of the runtime's
// completion queues (RuntimeCore::NextQueue), one write outstanding and a queue for the rest.
//
// Why not gRPC's callback API: Debian's gRPC runs every callback of the process through one
// completion queue and, built without NDEBUG, checks each completion against every tag
// outstanding on it under its one mutex; with a read outstanding per stream, a runtime of 20,000
// streams spent a quarter of its CPU in that scan, one thread at a time. On the runtime's own
// queues each scan covers one queue's streams, under a lock of its own.

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

// One queued operation: the tag a runtime's completion queue hands back (RuntimeCore drains it).
// Not virtual, on purpose: the queue's thread must not read anything of the operation before the
// acquire in Complete. gRPC hands the tag over through its own locks, which ThreadSanitizer cannot
// see; Arm (release, by whoever starts the operation, right before handing the tag to gRPC) and
// Complete (acquire) make every write before the start visible to the completion.
class QueuedOperation {
 public:
  using Handler = void (*)(QueuedOperation& operation, bool ok);

  void Arm(Handler handler) { handler_.store(handler, std::memory_order_release); }
  void Complete(bool ok) { handler_.load(std::memory_order_acquire)(*this, ok); }

 private:
  std::atomic<Handler> handler_{nullptr};
};

// Receives what a stream reads and how it ended.
// Threading: called on a queue's thread, from reactions: must not block (post and return).
class AttemptListener {
 public:
  virtual ~AttemptListener() = default;
  virtual void OnAttemptMessage(uint64_t attempt_id, v1::CoordinatorMessage message) = 0;
  // The last call for this attempt; no message follows it. `leader`: the stream's `ckpt-leader`
  // trailer (a standby refused it; "" when the standby knows no leader), nullopt without one.
  virtual void OnAttemptDone(uint64_t attempt_id, grpc::Status status,
                             std::optional<std::string> leader) = 0;
};

// Threading: Send and Cancel are safe from any thread; reactions run on the queue's thread, one
// at a time.
// Lifetime: the attempt holds itself until OnDone. Others may hold a shared_ptr longer: Send and
// Cancel are then no-ops. The listener is held until OnDone.
class ConnectAttempt final {
 public:
  // More queued messages than this means the daemon stopped reading: drop rather than grow.
  static constexpr size_t kMaxQueuedMessages = 4096;

  // Opens the stream on `queue` with `hello` as its first message, with `token` (unless empty)
  // as its `authorization: Bearer` metadata.
  static std::shared_ptr<ConnectAttempt> Start(v1::WorkerService::Stub& stub,
                                               grpc::CompletionQueue& queue, uint64_t id,
                                               v1::WorkerMessage hello, const std::string& token,
                                               std::shared_ptr<AttemptListener> listener);

  ConnectAttempt(const ConnectAttempt&) = delete;
  ConnectAttempt& operator=(const ConnectAttempt&) = delete;

  // Queues a message. False if the stream is ending (or the queue is full): the message is dropped.
  bool Send(v1::WorkerMessage message);
  // Ends the stream (CANCELLED); OnAttemptDone follows.
  void Cancel();

  uint64_t id() const { return id_; }

 private:
  using Stream = grpc::ClientAsyncReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>;
  enum class Kind { kStart, kRead, kWrite, kFinish };
  struct Operation final : QueuedOperation {
    Operation(ConnectAttempt* owner, Kind kind) : owner(owner), kind(kind) {}
    static void Completed(QueuedOperation& operation, bool ok) {
      auto& self = static_cast<Operation&>(operation);
      self.owner->Completed(self.kind, ok);
    }
    ConnectAttempt* const owner;
    const Kind kind;
  };

  ConnectAttempt(uint64_t id, std::shared_ptr<AttemptListener> listener);
  // On the queue's thread: the reaction, then the count; OnDone once the call is over.
  void Completed(Kind kind, bool ok);
  void OnReadDone(bool ok);
  // The write operation is free again: after the call's start (which uses it for the metadata),
  // or after a message.
  void OnWriteOperationDone(bool ok);
  void OnDone();
  // Starts the write of outgoing_.front() if none is in flight.
  void MaybeStartWriteLocked();
  // Every call into the stream goes through here, under ops_mu_ (see there).
  template <typename Call>
  void StartOperation(Call&& call);

  // Constant after construction.
  const uint64_t id_;
  grpc::ClientContext context_;

  // ops_mu_ orders every call into the stream (from any thread) before the attempt's end on the
  // queue's thread: gRPC hands completions over through its own locks, which ThreadSanitizer
  // cannot see. Never held while a reaction runs.
  std::mutex ops_mu_;
  std::unique_ptr<Stream> stream_;  // set by Start
  int outstanding_ = 0;             // guarded by ops_mu_: operations started, not completed
  bool finish_done_ = false;        // guarded by ops_mu_: the status is in
  grpc::Status status_;             // written by the finish, read by OnDone after it
  Operation start_op_{this, Kind::kStart};
  Operation read_op_{this, Kind::kRead};
  Operation write_op_{this, Kind::kWrite};
  Operation finish_op_{this, Kind::kFinish};

  // Touched only by the read chain (one read at a time) and OnDone.
  v1::CoordinatorMessage incoming_;
  std::shared_ptr<AttemptListener> listener_;
  std::shared_ptr<ConnectAttempt> self_;  // set by Start, released in OnDone

  std::atomic<bool> done_{false};  // OnDone ran

  std::mutex mu_;
  // Messages not yet handed to gRPC (a write serializes its message at once, so the one in
  // flight is not here). writing_: a write is in flight (or, at first, the call's start: it uses
  // the same operation).
  std::deque<v1::WorkerMessage> outgoing_;  // guarded by mu_
  bool writing_ = false;                    // guarded by mu_
  // The read side ended (the finish is asked for, OnDone may come) or a write failed: no more
  // writes.
  bool closed_ = false;  // guarded by mu_
};

}  // namespace ckpt::sdk::internal
