#pragma once
// BidiCall: one gRPC async client stream on one of the runtime's completion queues
// (RuntimeCore::NextQueue): its start, one read always outstanding, one write outstanding with a
// queue for the rest, and its end. A Connect stream (sdk/connect_attempt.h) writes its queue one
// message at a time; a Session call (sdk/session_mux.h) writes everything queued meanwhile as one
// frame. Subclasses say what a write takes from the queue, and what to do with what is read.
//
// Why not gRPC's callback API: Debian's gRPC runs every callback of the process through one
// completion queue and, built without NDEBUG, checks each completion against every tag
// outstanding on it under its one mutex; with a read outstanding per stream, a runtime of 20,000
// streams spent a quarter of its CPU in that scan, one thread at a time. On the runtime's own
// queues each scan covers one queue's streams, under a lock of its own.
//
// Threading: Enqueue and Cancel are safe from any thread; reactions (OnMessage, OnEnded) run on
// the queue's thread, one at a time, and must not block. TakeNext runs under mu_.
// Lifetime: the call holds itself from Begin until its end. Others may hold a shared_ptr longer:
// Enqueue and Cancel are then no-ops.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/leader_redirect.h"

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

template <typename Out, typename In>
class BidiCall {
 public:
  using Stream = grpc::ClientAsyncReaderWriter<Out, In>;

  virtual ~BidiCall() = default;
  BidiCall(const BidiCall&) = delete;
  BidiCall& operator=(const BidiCall&) = delete;

  // Ends the stream (CANCELLED); OnEnded follows.
  void CancelCall() {
    // The context keeps its own reference to the call, so this is harmless after the end too.
    if (!done_.load(std::memory_order_acquire)) context_.TryCancel();
  }

  // Blocks until the call is over and OnEnded has returned: nothing of it is left on its queue.
  // Never from a reaction (the queue's thread would wait for itself).
  void WaitUntilDone() {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait(lock, [this] { return ended_; });
  }

 protected:
  BidiCall() = default;

  grpc::ClientContext& context() { return context_; }

  // Starts the call made by `prepare` (e.g. stub.PrepareAsyncConnect(&context, &queue)) with
  // `first` queued as its first write. `self` is the subclass's own shared_ptr: the call holds it
  // until OnEnded has returned.
  void Begin(std::unique_ptr<Stream> prepared, std::shared_ptr<void> self, Out first) {
    self_ = std::move(self);
    {
      std::lock_guard<std::mutex> lock(ops_mu_);
      stream_ = std::move(prepared);
    }
    {
      // StartCall sends the metadata with the stream's write operation: the first message waits
      // for it as for a write in flight (OnWriteOperationDone).
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = true;
    }
    StartOperation([this](Stream& stream) {
      start_op_.Arm(&Operation::Completed);
      stream.StartCall(static_cast<QueuedOperation*>(&start_op_));
    });
    StartOperation([this](Stream& stream) {
      read_op_.Arm(&Operation::Completed);
      stream.Read(&incoming_, static_cast<QueuedOperation*>(&read_op_));
    });
    Enqueue(std::move(first));
  }

  // Queues `message`. False (and dropped) if the stream is ending, or when `max_queued` messages
  // wait already (the daemon stopped reading: drop rather than grow).
  bool Enqueue(Out message, size_t max_queued = SIZE_MAX) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || outgoing_.size() >= max_queued) return false;
    outgoing_.push_back(std::move(message));
    MaybeStartWriteLocked();
    return true;
  }

  // What the next write sends, taken from `queue` (never empty). Under mu_: must be quick.
  virtual void TakeNext(std::deque<Out>& queue, Out* next) = 0;
  // On the queue's thread.
  virtual void OnMessage(In message) = 0;
  // The last call: the stream is over. `leader`: its `ckpt-leader` trailer, if any.
  virtual void OnEnded(const grpc::Status& status, std::optional<std::string> leader) = 0;

 private:
  enum class Kind { kStart, kRead, kWrite, kFinish };
  struct Operation final : QueuedOperation {
    Operation(BidiCall* owner, Kind kind) : owner(owner), kind(kind) {}
    static void Completed(QueuedOperation& operation, bool ok) {
      auto& self = static_cast<Operation&>(operation);
      self.owner->Completed(self.kind, ok);
    }
    BidiCall* const owner;
    const Kind kind;
  };

  // Every call into the stream goes through here, under ops_mu_ (see there).
  template <typename Call>
  void StartOperation(Call&& call) {
    std::lock_guard<std::mutex> lock(ops_mu_);
    ++outstanding_;
    call(*stream_);
  }

  void MaybeStartWriteLocked() {
    if (writing_ || closed_ || outgoing_.empty()) return;
    writing_ = true;
    TakeNext(outgoing_, &next_);
    StartOperation([this](Stream& stream) {
      write_op_.Arm(&Operation::Completed);
      stream.Write(next_, static_cast<QueuedOperation*>(&write_op_));
    });
    // Write serialized the message before it returned: freed here, on the thread that most often
    // made it (a handler's ack), not later on the queue's thread, which costs malloc more.
    next_.Clear();
  }

  // On the queue's thread: the reaction first (what it starts is counted before this operation
  // is counted out, so the call cannot look over meanwhile), then the count; the end once the
  // call is over.
  void Completed(Kind kind, bool ok) {
    if (kind == Kind::kRead) OnReadDone(ok);
    // The call's start sends its metadata with the write operation: done, it lets the first
    // message go.
    if (kind == Kind::kStart || kind == Kind::kWrite) OnWriteOperationDone(ok);
    {
      std::lock_guard<std::mutex> lock(ops_mu_);
      if (kind == Kind::kFinish) finish_done_ = true;
      if (--outstanding_ > 0 || !finish_done_) return;
    }
    OnDone();  // may destroy this call: nothing follows
  }

  void OnReadDone(bool ok) {
    if (ok) {
      OnMessage(std::move(incoming_));
      incoming_.Clear();
      StartOperation([this](Stream& stream) {
        read_op_.Arm(&Operation::Completed);
        stream.Read(&incoming_, static_cast<QueuedOperation*>(&read_op_));
      });
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      outgoing_.clear();  // never sent (the one in flight, if any, is serialized already)
    }
    // The server is done (or the call broke): ask for the status. No write starts from here on.
    StartOperation([this](Stream& stream) {
      finish_op_.Arm(&Operation::Completed);
      stream.Finish(&status_, static_cast<QueuedOperation*>(&finish_op_));
    });
  }

  void OnWriteOperationDone(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      // The call did not start, or the stream broke; the read side sees the end and reports the
      // status.
      closed_ = true;
      outgoing_.clear();
      return;
    }
    MaybeStartWriteLocked();
  }

  void OnDone() {
    done_.store(true, std::memory_order_release);
    // Our own reference is dropped only after the subclass has been told: it may release its
    // listeners' references, and `this` may then go with `self`.
    std::shared_ptr<void> self = std::move(self_);
    // The trailers are complete once the call is done.
    OnEnded(status_, cli::LeaderTrailer(context_));
    std::lock_guard<std::mutex> lock(done_mu_);
    ended_ = true;
    done_cv_.notify_all();
  }

  grpc::ClientContext context_;

  // ops_mu_ orders every call into the stream (from any thread) before the call's end on the
  // queue's thread: gRPC hands completions over through its own locks, which ThreadSanitizer
  // cannot see. Never held while a reaction runs.
  std::mutex ops_mu_;
  std::unique_ptr<Stream> stream_;  // set by Begin
  int outstanding_ = 0;             // guarded by ops_mu_: operations started, not completed
  bool finish_done_ = false;        // guarded by ops_mu_: the status is in
  grpc::Status status_;             // written by the finish, read by OnDone after it
  Operation start_op_{this, Kind::kStart};
  Operation read_op_{this, Kind::kRead};
  Operation write_op_{this, Kind::kWrite};
  Operation finish_op_{this, Kind::kFinish};

  In incoming_;                 // the read chain only (one read at a time)
  std::shared_ptr<void> self_;  // set by Begin, released in OnDone
  std::atomic<bool> done_{false};
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool ended_ = false;  // guarded by done_mu_: OnEnded has returned

  std::mutex mu_;
  // Messages not yet handed to gRPC; next_: the one being handed over (serialized by Write, then
  // cleared). writing_: a write is in flight (or, at first, the call's start: it uses the same
  // operation).
  std::deque<Out> outgoing_;  // guarded by mu_
  Out next_;                  // guarded by mu_
  bool writing_ = false;      // guarded by mu_
  // The read side ended (the finish is asked for, the end may come) or a write failed: no more
  // writes.
  bool closed_ = false;  // guarded by mu_
};

}  // namespace ckpt::sdk::internal
