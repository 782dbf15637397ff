#include "rpc/worker_session.h"

#include <spdlog/spdlog.h>

#include "api/proto_convert.h"
#include "core/spec_validation.h"
#include "rpc/status_mapping.h"

namespace ckpt {

void WorkerSession::Create(SessionId id, const SessionDeps& deps, const ChannelDeps& channel_deps,
                           std::unique_ptr<grpc::ServerContext> context,
                           std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket,
                           Admission admission) {
  std::shared_ptr<WorkerSession> session(
      new WorkerSession(id, deps, channel_deps, std::move(context), std::move(stream),
                        std::move(ticket), std::move(admission)));
  session->self_ = session;
  ++session->metrics_.worker_sessions;
  if (!session->admission_.refused.ok()) {
    // Refused before a byte was read: nothing to register, no lease; OnDone follows the Finish.
    session->End(session->admission_.refused);
    return;
  }
  // A stream that says no hello is ended once hello_timeout passes (the lease then takes over).
  session->lease_.Start(session);
  session->StartRead(&session->in_);
}

WorkerSession::WorkerSession(SessionId id, const SessionDeps& deps, const ChannelDeps& channel_deps,
                             std::unique_ptr<grpc::ServerContext> context,
                             std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket,
                             Admission admission)
    : AsyncBidiReactor(std::move(context), std::move(stream), std::move(ticket)),
      metrics_(deps.metrics),
      limits_(deps.limits),
      leadership_(deps.leadership),
      admission_(std::move(admission)),
      lease_(deps.shards.Next(), std::chrono::milliseconds(deps.lease_ttl_ms),
             std::chrono::milliseconds(deps.hello_timeout_ms)),
      channel_(id, channel_deps, "WorkerService.Connect") {}

void WorkerSession::OnReadDone(bool ok) {
  if (!ok) {
    // The worker closed its side without goodbye, or sent bytes that do not parse, or the call
    // was cancelled (the worker went away, or the daemon shuts down): gRPC reports them alike, and
    // the tasks are gone either way. A clean end is a goodbye.
    ReportEnded("stream ended by the worker");
    End(Status::InvalidArgument(
        "the stream closed without goodbye, or a message could not be parsed"));
    return;
  }
  lease_.Touch();
  if (HandleMessage()) StartRead(&in_);
}

int64_t WorkerSession::LastMessageAtMs() const { return lease_.LastActivityWallMs(); }

bool WorkerSession::HandleMessage() {
  if (!channel_.hello_seen()) {
    if (in_.has_hello()) {
      ReleasePending();
      lease_.Greet(shared_from_this());
    }
  }
  auto ending = channel_.Handle(in_, shared_from_this(), *context());
  if (!ending) return true;
  End(std::move(ending->status));
  return false;
}

void WorkerSession::Send(OutboundMessage message) {
  // Past its local lease deadline a leader sends nothing, not even the `complete` of a round
  // that just became durable: a standby may already lead, and the next leader's `welcome`
  // announces that round (docs/PROTOCOL.md, "High availability"). The stream ends instead: a worker
  // that missed an abort or complete would hold its barrier out of step with the rounds, and
  // the welcome it gets on reconnecting (from whoever leads then) puts it back in step
  // (model/ha.pml, `withhold`).
  if (!leadership_.MaySendToWorkers()) {
    {
      MutexLock lock(mu_);
      if (finish_called_ || done_) return;
    }
    metrics_.messages_withheld_total.fetch_add(1, std::memory_order_relaxed);
    ReportEnded("a message withheld past the local lease deadline");
    MutexLock lock(mu_);
    AbandonQueueLocked(Status::Unavailable(
        "this daemon's leadership is unconfirmed (past its local lease deadline); reconnect"));
    return;
  }
  {
    MutexLock lock(mu_);
    if (finish_requested_ || done_) return;
    out_queue_.emplace_back();
    ToProto(message, &out_queue_.back());
    StampEpoch(leadership_.epoch(), &out_queue_.back());
    const int64_t bytes = static_cast<int64_t>(out_queue_.back().ByteSizeLong());
    queued_bytes_ += bytes;
    // The welcome comes on top of the limit: with a wide pipeline's restore point (a rescaled
    // one holds every task's state) it alone may pass it, and it is sent once, first.
    if (std::holds_alternative<WelcomeMessage>(message)) welcome_allowance_bytes_ = bytes;
    if (queued_bytes_ <= limits_.max_session_queue_bytes + welcome_allowance_bytes_) {
      if (!writing_) StartNextWriteLocked();
      return;
    }
  }
  // The worker does not read (or too slowly to matter). First its tasks are released, with the
  // reason (outside mu_: ReportEnded takes runner_mu_), before the end below lets another
  // reaction report a vaguer one.
  ReportEnded("not reading its stream (limits.max_session_queue_bytes)");
  MutexLock lock(mu_);
  if (finish_requested_) return;
  metrics_.CountLimit(CountedLimit::kMaxSessionQueueBytes);
  AbandonQueueLocked(Status::ResourceExhausted(
      "the worker does not read its stream: unsent messages passed " +
      NameLimit("max_session_queue_bytes", limits_.max_session_queue_bytes)));
}

void WorkerSession::AbandonQueueLocked(Status status) {
  if (finish_called_ || done_) return;
  // Nothing queued goes out any more (its memory here stays bounded, and past a lease deadline
  // nothing may); cancelling fails the outstanding write, which lets Finish go ahead instead of
  // waiting on a peer that never drains. Also when an end was asked for already: that end may
  // be waiting for the very write that will never complete.
  out_queue_.erase(out_queue_.begin() + (writing_ ? 1 : 0), out_queue_.end());
  queued_bytes_ = writing_ ? out_queue_.front().GetCachedSize() : 0;
  if (!finish_requested_) {
    finish_requested_ = true;
    finish_status_ = std::move(status);
  }
  if (writing_ && !cancelled_) {
    // The peer may never take that write: without a cancel, Finish would wait for it (and the
    // client then sees CANCELLED rather than the status).
    cancelled_ = true;
    context()->TryCancel();
  }
  MaybeFinishLocked();  // nothing in flight: finish now; else when the failed write returns
}

void WorkerSession::End(Status status) {
  MutexLock lock(mu_);
  if (finish_requested_) return;
  finish_requested_ = true;
  finish_status_ = std::move(status);
  MaybeFinishLocked();
}

void WorkerSession::StartNextWriteLocked() {
  writing_ = true;
  StartWrite(&out_queue_.front());
}

void WorkerSession::OnWriteDone(bool ok) {
  MutexLock lock(mu_);
  queued_bytes_ -= out_queue_.front().GetCachedSize();
  if (out_queue_.front().has_welcome()) welcome_allowance_bytes_ = 0;  // written: the limit again
  out_queue_.pop_front();
  writing_ = false;
  if (!ok) {
    // The stream is broken; nothing more will get through.
    out_queue_.clear();
    queued_bytes_ = 0;
    if (!finish_requested_) {
      finish_requested_ = true;
      finish_status_ = Status::Unavailable("write to the worker failed");
    }
  }
  if (!out_queue_.empty() && !leadership_.MaySendToWorkers()) {
    // Queued before the lease deadline, due after it: not sent (see Send).
    metrics_.messages_withheld_total.fetch_add(1, std::memory_order_relaxed);
    AbandonQueueLocked(Status::Unavailable(
        "this daemon's leadership is unconfirmed (past its local lease deadline); reconnect"));
    return;
  }
  if (!out_queue_.empty()) {
    StartNextWriteLocked();
  } else {
    MaybeFinishLocked();
  }
}

void WorkerSession::MaybeFinishLocked() {
  // Queued messages go out first (a welcome before an error cannot happen, but an abort before a
  // shutdown status can); Finish is called exactly once.
  if (!finish_requested_ || writing_ || !out_queue_.empty() || finish_called_) return;
  finish_called_ = true;
  Finish(ToGrpcStatus(finish_status_));
}

void WorkerSession::OnDone() {
  done_ = true;
  ReportEnded("stream ended");
  ReleasePending();
  if (admission_.slots) admission_.slots->Remove(admission_.peer);
  --metrics_.worker_sessions;
  ++metrics_.worker_sessions_ended_total;
  lease_.Cancel(shared_from_this());
  auto last_reference_held_by_us = std::move(self_);
}

void WorkerSession::ReleasePending() {
  if (admission_.pending && !pending_released_.exchange(true)) {
    admission_.pending->Remove(admission_.peer);
  }
}

void WorkerSession::NoHelloInTime(std::chrono::milliseconds hello_timeout) {
  End(Status::DeadlineExceeded("no hello within " + std::to_string(hello_timeout.count()) +
                               " ms (hello_timeout_ms)"));
}

Status WorkerSession::LeaseExpired(std::chrono::milliseconds lease_ttl) {
  ReportEnded("lease expired");
  Status expired = Status::DeadlineExceeded("lease expired: no message for " +
                                            std::to_string(lease_ttl.count()) + " ms");
  End(expired);  // the worker hears it, if its write gets through
  return expired;
}

void WorkerSession::EndNotWritten(Status expired) {
  MutexLock lock(mu_);
  AbandonQueueLocked(std::move(expired));
}

}  // namespace ckpt
