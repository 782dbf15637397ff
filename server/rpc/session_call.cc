#include "rpc/session_call.h"

#include <vector>

#include "api/proto_convert.h"
#include "rpc/status_mapping.h"

namespace ckpt {

namespace {
// No envelope: wakes the writer, to finish or to drop what is queued.
OutgoingEnvelope WakeUp() {
  OutgoingEnvelope item;
  item.wake = true;
  return item;
}

Status WithheldStatus() {
  return Status::Unavailable(
      "this daemon's leadership is unconfirmed (past its local lease deadline); reconnect");
}
}  // namespace

// ---- SessionChannel ---------------------------------------------------------------------------

void SessionChannel::Send(OutboundMessage message) {
  if (ended()) return;
  if (auto call = call_.lock()) call->Write(number_, message);
}

bool SessionChannel::TakeEnd() {
  if (ended_.exchange(true, std::memory_order_acq_rel)) return false;
  if (slots_) slots_->Remove(peer_);
  return true;
}

void SessionChannel::End(Status status) {
  if (!TakeEnd()) return;
  if (auto call = call_.lock()) {
    call->WriteEnd(number_, status);
    call->Forget(number_, this);
  }
  // Whoever ended it (the pipeline, or the read side for the worker's mistake), the pipeline
  // hears that the channel is gone, as it does when a Connect stream's call is over.
  logic.ReportEnded("channel ended: " + status.ToString(), status.ok());
}

void SessionChannel::Close() { TakeEnd(); }

int64_t SessionChannel::LastMessageAtMs() const {
  auto call = call_.lock();
  return call ? call->LastMessageAtMs() : 0;
}

// ---- SessionCall: start, read side ------------------------------------------------------------

void SessionCall::Create(const SessionDeps& deps, const ChannelDeps& channel_deps,
                         std::atomic<SessionId>& next_id,
                         std::unique_ptr<grpc::ServerContext> context,
                         std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket,
                         Admission admission) {
  std::shared_ptr<SessionCall> call(new SessionCall(deps, channel_deps, next_id, std::move(context),
                                                    std::move(stream), std::move(ticket),
                                                    std::move(admission)));
  call->self_ = call;
  ++call->metrics_.session_calls;
  if (!call->admission_.refused.ok()) {
    call->End(call->admission_.refused);  // before a byte was read; OnDone follows the Finish
    return;
  }
  // A call that opens no channel is ended once hello_timeout passes (the lease then takes over).
  call->lease_.Start(call);
  call->StartRead(call->NextFrame());
}

SessionCall::SessionCall(const SessionDeps& deps, const ChannelDeps& channel_deps,
                         std::atomic<SessionId>& next_id,
                         std::unique_ptr<grpc::ServerContext> context,
                         std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket,
                         Admission admission)
    : AsyncBidiReactor(std::move(context), std::move(stream), std::move(ticket)),
      channel_deps_(channel_deps),
      next_id_(next_id),
      metrics_(deps.metrics),
      limits_(deps.limits),
      leadership_(deps.leadership),
      admission_(std::move(admission)),
      lease_(deps.shards.Next(), std::chrono::milliseconds(deps.lease_ttl_ms),
             std::chrono::milliseconds(deps.hello_timeout_ms)),
      in_block_(new char[kReadBlockBytes]),
      in_arena_(ReadArenaOptions(in_block_.get())) {}

google::protobuf::ArenaOptions SessionCall::ReadArenaOptions(char* block) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = kReadBlockBytes;
  return options;
}

v1::WorkerFrame* SessionCall::NextFrame() {
  in_arena_.Reset();
  in_ = google::protobuf::Arena::CreateMessage<v1::WorkerFrame>(&in_arena_);
  return in_;
}

void SessionCall::OnReadDone(bool ok) {
  if (!ok) {
    // The worker closed its side, sent bytes that do not parse or a frame over the limit, or
    // the call was cancelled: every channel's tasks are gone either way.
    ReportEndedAll("session ended by the worker");
    End(Status::InvalidArgument(
        "the session closed, or a frame could not be parsed (or passed limits.max_message_bytes)"));
    return;
  }
  lease_.Touch();
  metrics_.session_frames_read_total.fetch_add(1, std::memory_order_relaxed);
  // An ending call opens no channel and hands nothing on: it reads on only to see its end.
  if (EndRequested()) {
    StartRead(NextFrame());
    return;
  }
  for (const v1::WorkerEnvelope& envelope : in_->envelopes()) {
    if (!HandleEnvelope(envelope)) return;
  }
  StartRead(NextFrame());
}

std::shared_ptr<SessionChannel> SessionCall::Find(uint32_t number) {
  MutexLock lock(channels_mu_);
  auto it = channels_.find(number);
  return it == channels_.end() ? nullptr : it->second;
}

bool SessionCall::HandleEnvelope(const v1::WorkerEnvelope& envelope) {
  const uint32_t number = envelope.channel();
  const v1::WorkerMessage& message = envelope.message();
  if (number == 0) {
    // The call's own: a heartbeat renews every channel's lease, which the frame did already;
    // its positions name no pipeline, so they go nowhere.
    if (!message.has_heartbeat()) metrics_.CountIgnored(IgnoredReason::kNoChannel);
    return true;
  }
  std::shared_ptr<SessionChannel> channel = Find(number);
  if (message.has_hello() && !channel) return OpenChannel(number, message);
  if (!channel) {
    metrics_.CountIgnored(IgnoredReason::kNoChannel);
    return true;
  }
  if (message.has_hello()) {
    channel->End(Status::InvalidArgument("hello on channel " + std::to_string(number) +
                                         ", which is in use"));
    return true;
  }
  return Deliver(*channel, message);
}

bool SessionCall::OpenChannel(uint32_t number, const v1::WorkerMessage& hello) {
  if (lease_.Greet(shared_from_this())) ReleasePending();
  // limits.max_streams and max_streams_per_peer count channels.
  switch (admission_.slots->TryTake(admission_.peer)) {
    case StreamSlots::Outcome::kTaken: break;
    case StreamSlots::Outcome::kAllTaken:
      metrics_.CountLimit(CountedLimit::kMaxStreams);
      WriteEnd(number, Status::ResourceExhausted("the daemon holds " +
                                                 NameLimit("max_streams", limits_.max_streams) +
                                                 " worker streams"));
      return true;
    case StreamSlots::Outcome::kPeerFull:
      metrics_.CountLimit(CountedLimit::kMaxStreamsPerPeer);
      WriteEnd(number, Status::ResourceExhausted(
                           "this peer holds " +
                           NameLimit("max_streams_per_peer", limits_.max_streams_per_peer) +
                           " worker streams"));
      return true;
  }
  auto channel = std::make_shared<SessionChannel>(
      number, next_id_++, channel_deps_, weak_from_this(), admission_.slots, admission_.peer);
  {
    MutexLock lock(channels_mu_);
    channels_[number] = channel;
  }
  ++metrics_.worker_sessions;
  return Deliver(*channel, hello);
}

bool SessionCall::Deliver(SessionChannel& channel, const v1::WorkerMessage& message) {
  auto ending = channel.logic.Handle(message, channel.shared_from_this(), *context());
  if (!ending) return true;
  if (ending->caller_refused) {
    ReportEndedAll(ending->status.message());
    End(std::move(ending->status));
    return false;
  }
  channel.End(std::move(ending->status));
  return true;
}

void SessionCall::Forget(uint32_t number, const SessionChannel* channel) {
  {
    MutexLock lock(channels_mu_);
    auto it = channels_.find(number);
    if (it == channels_.end() || it->second.get() != channel) return;
    channels_.erase(it);
  }
  --metrics_.worker_sessions;
  ++metrics_.worker_sessions_ended_total;
}

void SessionCall::ReportEndedAll(const std::string& why) {
  std::vector<std::shared_ptr<SessionChannel>> open;
  {
    MutexLock lock(channels_mu_);
    open.reserve(channels_.size());
    for (auto& [number, channel] : channels_) open.push_back(channel);
  }
  for (auto& channel : open) channel->logic.ReportEnded(why);
}

int64_t SessionCall::LastMessageAtMs() const { return lease_.LastActivityWallMs(); }

// ---- write side ---------------------------------------------------------------------------------

void SessionCall::Write(uint32_t number, const OutboundMessage& message) {
  if (EndRequested() || done_) return;
  if (!leadership_.MaySendToWorkers()) {
    // Past its local lease deadline a leader sends nothing (docs/PROTOCOL.md, "High
    // availability"): as every Connect stream would, the whole call ends.
    metrics_.messages_withheld_total.fetch_add(1, std::memory_order_relaxed);
    ReportEndedAll("a message withheld past the local lease deadline");
    Abandon(WithheldStatus());
    return;
  }
  OutgoingEnvelope item;
  item.envelope.set_channel(number);
  ToProto(message, item.envelope.mutable_message());
  StampEpoch(leadership_.epoch(), item.envelope.mutable_message());
  item.bytes = static_cast<int64_t>(item.envelope.ByteSizeLong());
  // The welcome comes on top of the limit: with a wide pipeline's restore point it alone may pass
  // it, and it is sent once, first.
  item.welcome = std::holds_alternative<WelcomeMessage>(message);
  int64_t allowance =
      item.welcome ? welcome_bytes_.fetch_add(item.bytes, std::memory_order_relaxed) + item.bytes
                   : welcome_bytes_.load(std::memory_order_relaxed);
  const int64_t queued =
      queued_bytes_.fetch_add(item.bytes, std::memory_order_relaxed) + item.bytes;
  if (queued > limits_.max_session_queue_bytes + allowance) {
    // The worker does not read (or too slowly to matter): every channel's tasks are released,
    // with the reason, and nothing queued goes out.
    queued_bytes_.fetch_sub(item.bytes, std::memory_order_relaxed);
    if (item.welcome) welcome_bytes_.fetch_sub(item.bytes, std::memory_order_relaxed);
    // Senders on several strands may pass the limit at once: the call is ended, and counted, once.
    if (overflowed_.exchange(true)) return;
    ReportEndedAll("not reading its session (limits.max_session_queue_bytes)");
    metrics_.CountLimit(CountedLimit::kMaxSessionQueueBytes);
    Abandon(Status::ResourceExhausted(
        "the worker does not read its session: unsent messages passed " +
        NameLimit("max_session_queue_bytes", limits_.max_session_queue_bytes)));
    return;
  }
  Enqueue(std::move(item));
}

void SessionCall::WriteEnd(uint32_t number, const Status& status) {
  if (EndRequested() || done_) return;
  OutgoingEnvelope item;
  item.envelope.set_channel(number);
  const grpc::Status grpc_status = ToGrpcStatus(status);
  item.envelope.mutable_end()->set_code(static_cast<int32_t>(grpc_status.error_code()));
  item.envelope.mutable_end()->set_message(grpc_status.error_message());
  item.bytes = static_cast<int64_t>(item.envelope.ByteSizeLong());
  queued_bytes_.fetch_add(item.bytes, std::memory_order_relaxed);
  Enqueue(std::move(item));
}

void SessionCall::Enqueue(OutgoingEnvelope item) {
  if (outgoing_.Push(std::move(item))) Serve();
}

void SessionCall::Serve() {
  for (;;) {
    for (auto* node = outgoing_.TakeAll(); node;) {
      auto* next = node->next;
      if (!node->value.wake) pending_.push_back(std::move(node->value));
      BatchQueue<OutgoingEnvelope>::Free(node);
      node = next;
    }
    if (abandoned_.load(std::memory_order_acquire)) DropPending();
    if (!pending_.empty()) {
      if (!leadership_.MaySendToWorkers()) {
        // Queued before the lease deadline, due after it: not sent (see Write).
        metrics_.messages_withheld_total.fetch_add(1, std::memory_order_relaxed);
        ReportEndedAll("a message withheld past the local lease deadline");
        {
          MutexLock lock(end_mu_);
          if (!end_requested_.exchange(true)) end_status_ = WithheldStatus();
        }
        abandoned_ = true;
        continue;
      }
      BuildFrame();
      // Against Abandon (Dekker's pattern, both sequentially consistent): either it sees this
      // write in flight and cancels it, or this sees the call abandoned and does not start it.
      writing_.store(true);
      if (abandoned_.load()) {
        writing_.store(false);
        DropFrame();
        continue;
      }
      StartWrite(&frame_);
      return;
    }
    if (EndRequested()) {
      // Everything queued is written (or dropped): the status goes last. The writer's role is
      // kept for good, so nothing starts another write.
      MutexLock lock(end_mu_);
      if (!finish_called_) {
        finish_called_ = true;
        Finish(ToGrpcStatus(end_status_));
      }
      return;
    }
    if (outgoing_.TryIdle()) return;
  }
}

void SessionCall::BuildFrame() {
  frame_.Clear();
  frame_bytes_ = 0;
  frame_welcome_bytes_ = 0;
  while (!pending_.empty()) {
    OutgoingEnvelope& next = pending_.front();
    if (frame_.envelopes_size() > 0 && frame_bytes_ + next.bytes > kMaxFrameBytes) break;
    frame_bytes_ += next.bytes;
    if (next.welcome) frame_welcome_bytes_ += next.bytes;
    *frame_.add_envelopes() = std::move(next.envelope);
    pending_.pop_front();
  }
}

void SessionCall::DropPending() {
  for (const OutgoingEnvelope& item : pending_) {
    queued_bytes_.fetch_sub(item.bytes, std::memory_order_relaxed);
    if (item.welcome) welcome_bytes_.fetch_sub(item.bytes, std::memory_order_relaxed);
  }
  pending_.clear();
}

void SessionCall::DropFrame() {
  queued_bytes_.fetch_sub(frame_bytes_, std::memory_order_relaxed);
  welcome_bytes_.fetch_sub(frame_welcome_bytes_, std::memory_order_relaxed);
  frame_bytes_ = 0;
  frame_welcome_bytes_ = 0;
}

void SessionCall::OnWriteDone(bool ok) {
  // The writer: the frame is out (or the stream broke).
  writing_.store(false);
  if (ok) {
    metrics_.session_frames_written_total.fetch_add(1, std::memory_order_relaxed);
    metrics_.session_envelopes_written_total.fetch_add(
        static_cast<uint64_t>(frame_.envelopes_size()), std::memory_order_relaxed);
  }
  DropFrame();
  if (!ok) {
    // Nothing more will get through.
    {
      MutexLock lock(end_mu_);
      if (!end_requested_.exchange(true)) {
        end_status_ = Status::Unavailable("write to the worker failed");
      }
    }
    abandoned_ = true;
  }
  Serve();
}

// ---- the call's end -----------------------------------------------------------------------------

void SessionCall::End(Status status) {
  {
    MutexLock lock(end_mu_);
    if (end_requested_.load(std::memory_order_relaxed)) return;
    end_status_ = std::move(status);
    end_requested_.store(true, std::memory_order_release);
  }
  Enqueue(WakeUp());  // the writer finishes once what is queued is out
}

void SessionCall::Abandon(Status status) {
  {
    MutexLock lock(end_mu_);
    if (finish_called_ || done_) return;
    if (!end_requested_.load(std::memory_order_relaxed)) {
      end_status_ = std::move(status);
      end_requested_.store(true, std::memory_order_release);
    }
    abandoned_.store(true);  // before writing_ is read: see Serve
    if (writing_.load() && !cancelled_) {
      // The peer may never take that write: without a cancel, Finish would wait for it.
      cancelled_ = true;
      context()->TryCancel();
    }
  }
  Enqueue(WakeUp());
}

void SessionCall::OnDone() {
  done_ = true;
  ReportEndedAll("session ended");
  std::unordered_map<uint32_t, std::shared_ptr<SessionChannel>> open;
  {
    MutexLock lock(channels_mu_);
    open.swap(channels_);
  }
  for (auto& [number, channel] : open) {
    channel->Close();
    --metrics_.worker_sessions;
    ++metrics_.worker_sessions_ended_total;
  }
  ReleasePending();
  --metrics_.session_calls;
  ++metrics_.session_calls_ended_total;
  lease_.Cancel(shared_from_this());
  auto last_reference_held_by_us = std::move(self_);
}

void SessionCall::ReleasePending() {
  if (admission_.pending && !pending_released_.exchange(true)) {
    admission_.pending->Remove(admission_.peer);
  }
}

void SessionCall::NoHelloInTime(std::chrono::milliseconds hello_timeout) {
  End(Status::DeadlineExceeded("no channel opened within " + std::to_string(hello_timeout.count()) +
                               " ms (hello_timeout_ms)"));
}

Status SessionCall::LeaseExpired(std::chrono::milliseconds lease_ttl) {
  ReportEndedAll("lease expired");
  Status expired = Status::DeadlineExceeded("lease expired: no frame for " +
                                            std::to_string(lease_ttl.count()) + " ms");
  End(expired);
  return expired;
}

}  // namespace ckpt
