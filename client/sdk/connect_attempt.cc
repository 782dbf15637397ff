#include "sdk/connect_attempt.h"

#include "common/channel_security.h"
#include "common/leader_redirect.h"

namespace ckpt::sdk::internal {

std::shared_ptr<ConnectAttempt> ConnectAttempt::Start(v1::WorkerService::Stub& stub, uint64_t id,
                                                      v1::WorkerMessage hello,
                                                      const std::string& token,
                                                      std::shared_ptr<AttemptListener> listener) {
  std::shared_ptr<ConnectAttempt> attempt(new ConnectAttempt(id, std::move(listener)));
  attempt->self_ = attempt;
  // Per call, not as CallCredentials: gRPC refuses those on a plaintext channel, and the daemon
  // accepts a token over plaintext from loopback.
  cli::AttachBearerToken(token, &attempt->context_);
  stub.async()->Connect(&attempt->context_, attempt.get());
  attempt->StartRead(&attempt->incoming_);
  attempt->Send(std::move(hello));
  // Writes start outside reactions (from the pipeline's strand): the hold keeps the call from
  // finishing under a concurrent Send. It is removed once, when the read side ends.
  attempt->AddHold();
  attempt->StartCall();
  return attempt;
}

ConnectAttempt::ConnectAttempt(uint64_t id, std::shared_ptr<AttemptListener> listener)
    : id_(id), listener_(std::move(listener)) {}

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
  StartWrite(&outgoing_.front());
}

void ConnectAttempt::Cancel() {
  // The context keeps its own reference to the call, so this is harmless after OnDone too.
  if (!done_.load(std::memory_order_acquire)) context_.TryCancel();
}

void ConnectAttempt::OnReadDone(bool ok) {
  if (ok) {
    listener_->OnAttemptMessage(id_, std::move(incoming_));
    incoming_.Clear();
    StartRead(&incoming_);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    // Keep the message in flight alive until OnWriteDone; the rest will never be sent.
    while (outgoing_.size() > (writing_ ? 1u : 0u)) outgoing_.pop_back();
  }
  // Outside the lock: with the hold gone OnDone may run (on another thread) as soon as the
  // outstanding operations finish. Nothing here touches the call afterwards.
  RemoveHold();
}

void ConnectAttempt::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  outgoing_.pop_front();
  writing_ = false;
  if (!ok) {
    // The stream is broken; the read side sees the end and reports the status.
    closed_ = true;
    outgoing_.clear();
    return;
  }
  MaybeStartWriteLocked();
}

void ConnectAttempt::OnDone(const grpc::Status& status) {
  done_.store(true, std::memory_order_release);
  // Drop both references before returning: the listener may release its own reference to us on
  // another thread right after being told, and `this` may then be destroyed with `self`.
  std::shared_ptr<ConnectAttempt> self = std::move(self_);
  std::shared_ptr<AttemptListener> listener = std::move(listener_);
  // The trailers are complete once the call is done.
  listener->OnAttemptDone(id_, status, cli::LeaderTrailer(context_));
}

}  // namespace ckpt::sdk::internal
