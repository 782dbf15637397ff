#pragma once
// AsyncBidiReactor: the server side of one bidi stream on a completion queue the daemon polls
// itself (rpc/stream_queues.h), in the shape of gRPC's callback reactor: StartRead, StartWrite and
// Finish start operations; OnReadDone, OnWriteDone and OnDone report them.
//
// Why not gRPC's callback API: Debian's gRPC runs every callback of the process through one
// completion queue (the "callback alternative" queue: its poller has no background threads), and,
// built without NDEBUG, checks each completion against every tag outstanding on that queue under
// the queue's one mutex. A stream keeps a read outstanding for its whole life, so at 20,000
// streams each completion scanned ~40,000 tags under that lock and the worker edge stopped there
// with the CPU half idle (docs/perf-notes/notebook.md). Here each stream lives on one of several
// queues: a scan covers that queue's streams only, under a lock of its own.
//
// Threading: the On* reactions run on the queue's one thread, one at a time, never concurrently.
// StartWrite and Finish may be called from any thread, but never two at once, and never StartWrite
// after Finish (WorkerSession calls both under its write mutex); StartRead only from a reaction
// (or before the first one). At most one read and one write outstanding, as in the callback API.
// context() may be used until Finish is called (and by reactions until OnDone).
//
// Lifetime: OnDone comes once, after Finish has completed and no read or write is outstanding; the
// context and the stream are released with it (as gRPC's callback API does): context() is null
// from OnDone on. The reactor object itself belongs to its subclass's owners, and OnDone may drop
// the last reference to it.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "common/mutex.h"

namespace ckpt {

// One queued operation: the tag a completion queue hands back. Not virtual, on purpose: the
// queue's thread must not read anything of the operation before the acquire in Complete. gRPC
// hands the tag over through its own locks, which ThreadSanitizer cannot see; Arm (release, by
// whoever starts the operation, right before handing the tag to gRPC) and Complete (acquire)
// make every write before the start visible to the completion, for ThreadSanitizer too.
class QueuedOperation {
 public:
  using Handler = void (*)(QueuedOperation& operation, bool ok);

  void Arm(Handler handler) { handler_.store(handler, std::memory_order_release); }
  void Complete(bool ok) { handler_.load(std::memory_order_acquire)(*this, ok); }

 private:
  std::atomic<Handler> handler_{nullptr};
};

template <typename Request, typename Response>
class AsyncBidiReactor {
 public:
  using Stream = grpc::ServerAsyncReaderWriter<Response, Request>;

  virtual ~AsyncBidiReactor() = default;
  AsyncBidiReactor(const AsyncBidiReactor&) = delete;
  AsyncBidiReactor& operator=(const AsyncBidiReactor&) = delete;

  virtual void OnReadDone(bool ok) = 0;
  virtual void OnWriteDone(bool ok) = 0;
  virtual void OnDone() = 0;

 protected:
  // Takes over an accepted call: `context` and `stream` as RequestConnect filled them; `ticket`
  // (may be null) is released once OnDone has returned, after the call's own objects.
  AsyncBidiReactor(std::unique_ptr<grpc::ServerContext> context, std::unique_ptr<Stream> stream,
                   std::shared_ptr<void> ticket)
      : ticket_(std::move(ticket)), context_(std::move(context)), stream_(std::move(stream)) {}

  // Null from OnDone on. Read by reactions and by calls that come before Finish.
  grpc::ServerContext* context() const { return context_.get(); }

  void StartRead(Request* request) CKPT_EXCLUDES(ops_mu_) {
    MutexLock lock(ops_mu_);
    ++outstanding_;
    read_op_.Arm(&Operation::Completed);
    stream_->Read(request, static_cast<QueuedOperation*>(&read_op_));
  }
  void StartWrite(const Response* response) CKPT_EXCLUDES(ops_mu_) {
    MutexLock lock(ops_mu_);
    ++outstanding_;
    write_op_.Arm(&Operation::Completed);
    stream_->Write(*response, static_cast<QueuedOperation*>(&write_op_));
  }
  void Finish(const grpc::Status& status) CKPT_EXCLUDES(ops_mu_) {
    MutexLock lock(ops_mu_);
    ++outstanding_;
    finish_op_.Arm(&Operation::Completed);
    stream_->Finish(status, static_cast<QueuedOperation*>(&finish_op_));
  }

 private:
  enum class Kind { kRead, kWrite, kFinish };
  struct Operation final : QueuedOperation {
    Operation(AsyncBidiReactor* owner, Kind kind) : owner(owner), kind(kind) {}
    static void Completed(QueuedOperation& operation, bool ok) {
      auto& self = static_cast<Operation&>(operation);
      self.owner->Completed(self.kind, ok);
    }
    AsyncBidiReactor* const owner;
    const Kind kind;
  };

  // On the queue's thread. The reaction runs before its operation is counted out, so that one
  // it starts (the next read) keeps the call open.
  void Completed(Kind kind, bool ok) CKPT_EXCLUDES(ops_mu_) {
    // What the operation's start did under ops_mu_ (a write serializes its message there)
    // happens before its reaction, for ThreadSanitizer too: a reaction may reuse what was
    // written (SessionCall builds its next frame in the same message).
    { MutexLock lock(ops_mu_); }
    if (kind == Kind::kRead) OnReadDone(ok);
    if (kind == Kind::kWrite) OnWriteDone(ok);
    std::shared_ptr<void> ticket;  // declared first: released last
    std::unique_ptr<grpc::ServerContext> context;
    std::unique_ptr<Stream> stream;
    {
      MutexLock lock(ops_mu_);
      if (kind == Kind::kFinish) finished_ = true;
      if (--outstanding_ > 0 || !finished_) return;
      // Out of the members under the lock (a start call on another thread has returned), and
      // before OnDone, which may drop the last reference to this object. The stream goes before
      // the context it belongs to.
      ticket = std::move(ticket_);
      context = std::move(context_);
      stream = std::move(stream_);
    }
    OnDone();
  }

  // ops_mu_ orders every call into the stream (from any thread) before the call's teardown on
  // the queue's thread. gRPC hands completions over through its own locks, which
  // ThreadSanitizer cannot see; this lock it does see. Never held while a reaction runs.
  Mutex ops_mu_;
  std::shared_ptr<void> ticket_;                  // written under ops_mu_ once, at the end
  std::unique_ptr<grpc::ServerContext> context_;  // likewise
  std::unique_ptr<Stream> stream_;                // likewise
  Operation read_op_{this, Kind::kRead};
  Operation write_op_{this, Kind::kWrite};
  Operation finish_op_{this, Kind::kFinish};
  int outstanding_ CKPT_GUARDED_BY(ops_mu_) = 0;  // operations started, not yet completed
  bool finished_ CKPT_GUARDED_BY(ops_mu_) = false;
};

}  // namespace ckpt
