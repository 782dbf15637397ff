#include "sdk/session_mux.h"

#include <vector>

#include "common/channel_security.h"

namespace ckpt::sdk::internal {

std::shared_ptr<SessionMux> SessionMux::Start(v1::WorkerService::Stub& stub,
                                              grpc::CompletionQueue& queue,
                                              const std::string& token) {
  std::shared_ptr<SessionMux> mux(new SessionMux());
  cli::AttachBearerToken(token, &mux->context());
  auto stream = stub.PrepareAsyncSession(&mux->context(), &queue);
  // The call's first write is its first channel's hello; until Open queues it, an empty frame
  // (nothing for the daemon to do) lets the call start.
  mux->Begin(std::move(stream), mux, v1::WorkerFrame());
  return mux;
}

v1::WorkerFrame SessionMux::Envelope(uint32_t channel, v1::WorkerMessage message) {
  v1::WorkerFrame frame;
  auto* envelope = frame.add_envelopes();
  envelope->set_channel(channel);
  *envelope->mutable_message() = std::move(message);
  return frame;
}

uint32_t SessionMux::Open(v1::WorkerMessage hello, std::shared_ptr<AttemptListener> listener,
                          uint64_t attempt_id) {
  uint32_t number = 0;
  {
    std::lock_guard<std::mutex> lock(channels_mu_);
    if (closing_ || next_number_ >= kMaxChannelNumber) return 0;
    number = next_number_++;
    channels_[number] = Channel{std::move(listener), attempt_id};
  }
  // Refused only when the call is ending: its end then tells this channel's listener too.
  Enqueue(Envelope(number, std::move(hello)), kMaxQueuedEnvelopes);
  return number;
}

bool SessionMux::Usable() {
  std::lock_guard<std::mutex> lock(channels_mu_);
  return !closing_ && next_number_ < kMaxChannelNumber;
}

bool SessionMux::Send(uint32_t channel, v1::WorkerMessage message) {
  {
    std::lock_guard<std::mutex> lock(channels_mu_);
    if (!channels_.count(channel)) return false;
  }
  return Enqueue(Envelope(channel, std::move(message)), kMaxQueuedEnvelopes);
}

std::optional<SessionMux::Channel> SessionMux::Remove(uint32_t channel, bool* last) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  auto it = channels_.find(channel);
  if (it == channels_.end()) return std::nullopt;
  Channel removed = std::move(it->second);
  channels_.erase(it);
  // The last channel gone: this call is done (a pipeline that comes back opens a new one).
  *last = channels_.empty() && !closing_;
  if (*last) closing_ = true;
  return removed;
}

void SessionMux::Close(uint32_t channel) {
  bool last = false;
  auto gone = Remove(channel, &last);
  if (!gone) return;
  if (last) {
    CancelCall();  // the daemon sees the call end, as it would see a Connect stream cancelled
  } else {
    v1::WorkerMessage goodbye;  // the daemon's side of this channel ends too
    goodbye.mutable_goodbye();
    Enqueue(Envelope(channel, std::move(goodbye)), kMaxQueuedEnvelopes);
  }
  gone->listener->OnAttemptDone(gone->attempt_id, grpc::Status::CANCELLED, std::nullopt);
}

void SessionMux::TakeNext(std::deque<v1::WorkerFrame>& queue, v1::WorkerFrame* next) {
  // Everything queued while the last frame was written, up to the frame size.
  *next = std::move(queue.front());
  queue.pop_front();
  int64_t bytes = static_cast<int64_t>(next->ByteSizeLong());
  while (!queue.empty()) {
    v1::WorkerFrame& following = queue.front();
    const auto more = static_cast<int64_t>(following.ByteSizeLong());
    if (bytes + more > kMaxFrameBytes) break;
    bytes += more;
    for (auto& envelope : *following.mutable_envelopes()) {
      *next->add_envelopes() = std::move(envelope);
    }
    queue.pop_front();
  }
}

void SessionMux::OnMessage(v1::CoordinatorFrame frame) {
  for (auto& envelope : *frame.mutable_envelopes()) {
    const uint32_t number = envelope.channel();
    if (envelope.has_end()) {
      bool last = false;
      if (auto gone = Remove(number, &last)) {
        if (last) CancelCall();
        gone->listener->OnAttemptDone(
            gone->attempt_id,
            grpc::Status(static_cast<grpc::StatusCode>(envelope.end().code()),
                         envelope.end().message()),
            std::nullopt);
      }
      continue;
    }
    Channel to;
    {
      std::lock_guard<std::mutex> lock(channels_mu_);
      auto it = channels_.find(number);
      if (it == channels_.end()) continue;  // a channel dropped here; its end is on its way
      to = it->second;
    }
    to.listener->OnAttemptMessage(to.attempt_id, std::move(*envelope.mutable_message()));
  }
}

void SessionMux::OnEnded(const grpc::Status& status, std::optional<std::string> leader) {
  std::unordered_map<uint32_t, Channel> open;
  {
    std::lock_guard<std::mutex> lock(channels_mu_);
    closing_ = true;
    open.swap(channels_);
  }
  // Every channel ends as its Connect stream would have, with the call's status and trailer.
  for (auto& [number, channel] : open) {
    channel.listener->OnAttemptDone(channel.attempt_id, status, leader);
  }
}

}  // namespace ckpt::sdk::internal
