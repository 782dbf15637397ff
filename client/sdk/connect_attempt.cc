#include "sdk/connect_attempt.h"

#include "common/channel_security.h"
#include "common/leader_redirect.h"

namespace ckpt::sdk::internal {

std::shared_ptr<ConnectAttempt> ConnectAttempt::Start(v1::WorkerService::Stub& stub,
                                                      grpc::CompletionQueue& queue, uint64_t id,
                                                      v1::WorkerMessage hello,
                                                      const std::string& token,
                                                      std::shared_ptr<AttemptListener> listener) {
  std::shared_ptr<ConnectAttempt> attempt(new ConnectAttempt(id, std::move(listener)));
  attempt->self_ = attempt;
  // Per call, not as CallCredentials: gRPC refuses those on a plaintext channel, and the daemon
  // accepts a token over plaintext from loopback.
  cli::AttachBearerToken(token, &attempt->context_);
  ConnectAttempt& a = *attempt;
  {
    std::lock_guard<std::mutex> lock(a.ops_mu_);
    a.stream_ = stub.PrepareAsyncConnect(&a.context_, &queue);
  }
  {
    // StartCall sends the metadata with the stream's write operation: the first message waits
    // for it as for a write in flight (OnWriteOperationDone).
    std::lock_guard<std::mutex> lock(a.mu_);
    a.writing_ = true;
  }
  a.StartOperation([&a](Stream& stream) {
    a.start_op_.Arm(&Operation::Completed);
    stream.StartCall(static_cast<QueuedOperation*>(&a.start_op_));
  });
  a.StartOperation([&a](Stream& stream) {
    a.read_op_.Arm(&Operation::Completed);
    stream.Read(&a.incoming_, static_cast<QueuedOperation*>(&a.read_op_));
  });
  a.Send(std::move(hello));
  return attempt;
}

ConnectAttempt::ConnectAttempt(uint64_t id, std::shared_ptr<AttemptListener> listener)
    : id_(id), listener_(std::move(listener)) {}

template <typename Call>
void ConnectAttempt::StartOperation(Call&& call) {
  std::lock_guard<std::mutex> lock(ops_mu_);
  ++outstanding_;
  call(*stream_);
}

bool ConnectAttempt::Send(v1::WorkerMessage message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || outgoing_.size() >= kMaxQueuedMessages) return false;
  outgoing_.push_back(std::move(message));
  MaybeStartWriteLocked();
  return true;
}

void ConnectAttempt::MaybeStartWriteLocked() {
  if (writing_ || closed_ || outgoing_.empty()) return;
  writing_ = true;
  StartOperation([this](Stream& stream) {
    write_op_.Arm(&Operation::Completed);
    stream.Write(outgoing_.front(), static_cast<QueuedOperation*>(&write_op_));
  });
  // Write serialized the message before it returned: freed here, on the thread that most often
  // made it (a handler's ack), not later on the queue's thread, which costs malloc more.
  outgoing_.pop_front();
}

void ConnectAttempt::Cancel() {
  // The context keeps its own reference to the call, so this is harmless after OnDone too.
  if (!done_.load(std::memory_order_acquire)) context_.TryCancel();
}

void ConnectAttempt::Completed(Kind kind, bool ok) {
  // The reaction first: what it starts (the next read, the finish) is counted before this
  // operation is counted out, so the call cannot look over meanwhile.
  if (kind == Kind::kRead) OnReadDone(ok);
  // The call's start sends its metadata with the write operation: done, it lets the first
  // message go.
  if (kind == Kind::kStart || kind == Kind::kWrite) OnWriteOperationDone(ok);
  {
    std::lock_guard<std::mutex> lock(ops_mu_);
    if (kind == Kind::kFinish) finish_done_ = true;
    if (--outstanding_ > 0 || !finish_done_) return;
  }
  OnDone();  // may destroy this attempt: nothing follows
}

void ConnectAttempt::OnReadDone(bool ok) {
  if (ok) {
    listener_->OnAttemptMessage(id_, std::move(incoming_));
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

void ConnectAttempt::OnWriteOperationDone(bool ok) {
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

void ConnectAttempt::OnDone() {
  done_.store(true, std::memory_order_release);
  // Drop both references before returning: the listener may release its own reference to us on
  // another thread right after being told, and `this` may then be destroyed with `self`.
  std::shared_ptr<ConnectAttempt> self = std::move(self_);
  std::shared_ptr<AttemptListener> listener = std::move(listener_);
  // The trailers are complete once the call is done.
  listener->OnAttemptDone(id_, status_, cli::LeaderTrailer(context_));
}

}  // namespace ckpt::sdk::internal
