#pragma once
// SessionMux: one WorkerService.Session call that the pipelines of a runtime share, a channel
// each (docs/PROTOCOL.md, "Worker sessions"). What the pipelines send while a frame is being
// written goes out together in the next frame (never held back to fill one); what the daemon
// sends is handed to each channel's listener as a Connect stream's messages would be, and a
// channel's `end` as its stream's status. ChannelAttempt is one pipeline's attempt on it.
//
// Channel numbers are never used twice on one call: a channel the worker drops (Cancel) may still
// have an `end` on its way, which must not reach a newer channel. A call that ran out of numbers,
// or whose last channel went, takes no more channels (the runtime starts another).
//
// Threading: Open, Send and Close are safe from any thread; reactions run on the call's queue
// thread. channels_ and the call's state are guarded by channels_mu_, never held while a listener
// is called.

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "ckpt/v1/worker.grpc.pb.h"
#include "sdk/attempt.h"
#include "sdk/bidi_call.h"

namespace ckpt::sdk::internal {

class SessionMux final : public BidiCall<v1::WorkerFrame, v1::CoordinatorFrame>,
                         public std::enable_shared_from_this<SessionMux> {
 public:
  // A frame holds envelopes up to this size (one larger envelope goes alone).
  static constexpr int64_t kMaxFrameBytes = 4 << 20;
  // More queued envelopes than this means the daemon stopped reading: drop rather than grow.
  static constexpr size_t kMaxQueuedEnvelopes = 1 << 20;
  // Channel numbers a call hands out before it takes no more.
  static constexpr uint32_t kMaxChannelNumber = 1u << 30;

  // Opens the call on `queue`, with `token` (unless empty) as its bearer token.
  static std::shared_ptr<SessionMux> Start(v1::WorkerService::Stub& stub,
                                           grpc::CompletionQueue& queue, const std::string& token);

  // A new channel for `listener`'s attempt `attempt_id`, its hello queued: its number, or 0 when
  // this call takes no more channels.
  uint32_t Open(v1::WorkerMessage hello, std::shared_ptr<AttemptListener> listener,
                uint64_t attempt_id);
  // Queues `message` on an open channel. False (dropped) when the channel or the call ended.
  bool Send(uint32_t channel, v1::WorkerMessage message);
  // Drops a channel at once: the daemon gets its goodbye (if the call goes on), the listener
  // hears CANCELLED now. A no-op for a channel already gone.
  void Close(uint32_t channel);
  // Whether Open may still succeed.
  bool Usable();

 private:
  struct Channel {
    std::shared_ptr<AttemptListener> listener;
    uint64_t attempt_id = 0;
  };

  SessionMux() = default;
  void TakeNext(std::deque<v1::WorkerFrame>& queue, v1::WorkerFrame* next) override;
  void OnMessage(v1::CoordinatorFrame frame) override;
  void OnEnded(const grpc::Status& status, std::optional<std::string> leader) override;
  // A frame of one envelope.
  static v1::WorkerFrame Envelope(uint32_t channel, v1::WorkerMessage message);
  // Takes `channel` out of the table; its entry if it was there. `*last`: it was the last one,
  // and the call takes no more (the caller ends it).
  std::optional<Channel> Remove(uint32_t channel, bool* last);

  std::mutex channels_mu_;
  std::unordered_map<uint32_t, Channel> channels_;  // guarded by channels_mu_
  uint32_t next_number_ = 1;                        // guarded by channels_mu_
  bool closing_ = false;                            // guarded by channels_mu_: no more channels
};

// One pipeline's attempt over a SessionMux channel.
class ChannelAttempt final : public Attempt {
 public:
  ChannelAttempt(std::shared_ptr<SessionMux> mux, uint32_t channel)
      : mux_(std::move(mux)), channel_(channel) {}
  bool Send(v1::WorkerMessage message) override { return mux_->Send(channel_, std::move(message)); }
  void Cancel() override { mux_->Close(channel_); }
  bool over_session() const override { return true; }

 private:
  const std::shared_ptr<SessionMux> mux_;
  const uint32_t channel_;
};

}  // namespace ckpt::sdk::internal
