#pragma once
// SessionCall is one WorkerService.Session stream: many pipelines on one stream. Each channel,
// opened by a hello on a number not in use, is exactly one Connect stream (rpc/worker_channel.h
// does for it what it does for a Connect stream) but ends with an `end` envelope instead of a
// status, and the call goes on. What the daemon writes to the channels is batched: at most one
// frame is being written at a time, and everything that became ready meanwhile, for any channel,
// goes in the next one (docs/PROTOCOL.md, "Worker sessions"; docs/DESIGN.md says how).
//
// Threading:
// - Reactions (OnReadDone, OnWriteDone, OnDone) run on the call's stream-queue thread, one at a
//   time. The read side alone hands messages to channels.
// - Channels are written to from their pipelines' strands, on any io thread, at once. A message
//   is turned into its envelope on the sender's thread and pushed onto outgoing_, a BatchQueue
//   (common/batch_queue.h): no lock. The sender that finds the queue idle becomes its writer
//   and starts the frame's write itself; while a write is in flight, OnWriteDone is the writer.
//   Members marked "writer only" are touched only by the writer of the moment, which the
//   queue's atomics hand from thread to thread.
// - channels_ (number -> channel) is guarded by channels_mu_, held for a lookup or an update,
//   never while a channel handles a message. The end of the call (status, Finish, cancel) is
//   guarded by end_mu_, which is off the per-message path.
// - The lease (rpc/stream_lease.h) runs on a strand of its own, as a Connect stream's.
//
// Lifetime: the call owns itself (self_) from Create until OnDone. A channel holds only a
// weak_ptr to it: a pipeline still holding the channel after the call is gone writes to nothing.

#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <memory>
#include <unordered_map>

#include "ckpt/v1/worker.grpc.pb.h"
#include "common/batch_queue.h"
#include "common/daemon_clock.h"
#include "common/mutex.h"
#include "rpc/async_bidi_reactor.h"
#include "rpc/stream_lease.h"
#include "rpc/worker_channel.h"
#include "rpc/worker_session.h"

namespace ckpt {

class SessionChannel;

// What a Session call is sent: one envelope, with what the queue limit needs of it.
struct OutgoingEnvelope {
  v1::CoordinatorEnvelope envelope;
  int64_t bytes = 0;     // envelope's serialized size
  bool welcome = false;  // counts on top of max_session_queue_bytes until written (as Connect)
  bool wake = false;     // no envelope: wakes the writer (to finish, or to drop what is queued)
};

class SessionCall final : public AsyncBidiReactor<v1::WorkerFrame, v1::CoordinatorFrame>,
                          public StreamLease::Owner,
                          public std::enable_shared_from_this<SessionCall> {
 public:
  // An outgoing frame holds envelopes up to this size (one larger envelope goes alone).
  static constexpr int64_t kMaxFrameBytes = 4 << 20;

  // Takes over an accepted call and starts it (the first read, or the refusal in `admission`).
  // `admission.slots` is where its channels take their stream slots (the call itself holds
  // none); `admission.pending` the pending slot it holds until its first hello. `channel_deps`
  // and `next_id` (the ids channels register under) belong to the service, which outlives it.
  static void Create(const SessionDeps& deps, const ChannelDeps& channel_deps,
                     std::atomic<SessionId>& next_id, std::unique_ptr<grpc::ServerContext> context,
                     std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket,
                     Admission admission);

  // Reactions
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

  // StreamLease::Owner
  bool LeaseOver() const override { return done_; }
  void NoHelloInTime(std::chrono::milliseconds hello_timeout) override;
  Status LeaseExpired(std::chrono::milliseconds lease_ttl) override;
  void EndNotWritten(Status expired) override { Abandon(std::move(expired)); }

  // From a channel, on any thread: `message` for channel `number`, or its end.
  void Write(uint32_t number, const OutboundMessage& message);
  void WriteEnd(uint32_t number, const Status& status);
  // Forgets `channel` (under its number, if it is still the one there): its number may be used
  // again. Its stream slot is the channel's to give back.
  void Forget(uint32_t number, const SessionChannel* channel);
  // Wall-clock ms of the last frame the worker sent (or of the call's start).
  int64_t LastMessageAtMs() const;

 private:
  SessionCall(const SessionDeps& deps, const ChannelDeps& channel_deps,
              std::atomic<SessionId>& next_id, std::unique_ptr<grpc::ServerContext> context,
              std::unique_ptr<Stream> stream, std::shared_ptr<void> ticket, Admission admission);

  // Read side. False when the whole call ends.
  bool HandleEnvelope(const v1::WorkerEnvelope& envelope);
  bool OpenChannel(uint32_t number, const v1::WorkerMessage& hello);
  // Hands `message` to `channel`; ends the channel, or the whole call for a refused caller, as
  // its handling says. False when the call ends.
  bool Deliver(SessionChannel& channel, const v1::WorkerMessage& message);
  std::shared_ptr<SessionChannel> Find(uint32_t number) CKPT_EXCLUDES(channels_mu_);
  // Tells every open channel's pipeline the channel is gone, with why.
  void ReportEndedAll(const std::string& why) CKPT_EXCLUDES(channels_mu_);

  // Queues an envelope; the caller serves the queue if it became its writer.
  void Enqueue(OutgoingEnvelope item);
  // Writer only: writes the next frame, or finishes, or gives the role up.
  void Serve();
  // Writer only: fills frame_ from pending_ (up to kMaxFrameBytes).
  void BuildFrame();
  // Writer only: drops every queued envelope (the call is being abandoned, or its write failed).
  void DropPending();
  // Writer only: frame_'s envelopes no longer count as queued (written, or never to be).
  void DropFrame();

  // Ends the call with `status` once what is queued is written (the first end asked for wins).
  void End(Status status);
  // Ends the call with `status` (or an end already asked for) without writing what is queued:
  // a write in flight is cancelled, so that a peer that never reads cannot hold the call.
  void Abandon(Status status);
  // Whether an end was asked for; the status it asked for.
  bool EndRequested() const { return end_requested_.load(std::memory_order_acquire); }
  void ReleasePending();

  // Constant after construction.
  const ChannelDeps& channel_deps_;
  std::atomic<SessionId>& next_id_;
  DaemonMetrics& metrics_;
  const Limits limits_;
  const Leadership& leadership_;
  const Admission admission_;

  std::atomic<bool> done_{false};
  std::atomic<bool> pending_released_{false};  // the pending slot given back (first hello, OnDone)
  StreamLease lease_;                          // one for the call: any frame renews every channel

  // Read side only. Each frame is parsed onto in_arena_, reset before the next read: a frame's
  // envelopes, their messages and strings are bump allocations instead of a malloc and a free
  // each (at ack ingest the allocator was a fifth of the io threads' time, most of it here).
  // Nothing keeps a reference into a frame past its OnReadDone. in_block_ is the arena's first
  // block, kept across resets; a larger frame takes more blocks, freed at the reset.
  static constexpr size_t kReadBlockBytes = 32 * 1024;
  std::unique_ptr<char[]> in_block_;
  google::protobuf::Arena in_arena_;
  v1::WorkerFrame* in_ = nullptr;  // on in_arena_; NextFrame() makes a new one
  // Resets in_arena_ and returns the frame the next read fills.
  v1::WorkerFrame* NextFrame();
  static google::protobuf::ArenaOptions ReadArenaOptions(char* block);

  Mutex channels_mu_;
  std::unordered_map<uint32_t, std::shared_ptr<SessionChannel>> channels_
      CKPT_GUARDED_BY(channels_mu_);

  // The write path (see Threading). queued_bytes_: envelopes pushed and not yet written;
  // welcome_bytes_: of them, welcomes (on top of the limit).
  BatchQueue<OutgoingEnvelope> outgoing_;
  std::atomic<int64_t> queued_bytes_{0};
  std::atomic<int64_t> welcome_bytes_{0};
  // A frame is in flight (set and cleared by the writer), and the call abandoned: both
  // sequentially consistent (Serve and Abandon).
  std::atomic<bool> writing_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> overflowed_{false};   // max_session_queue_bytes passed (ended once)
  std::deque<OutgoingEnvelope> pending_;  // writer only: taken, not yet in a frame
  v1::CoordinatorFrame frame_;            // writer only: the frame in flight
  int64_t frame_bytes_ = 0;               // writer only
  int64_t frame_welcome_bytes_ = 0;       // writer only

  std::atomic<bool> end_requested_{false};  // mirrors end_status_ being set, for the fast path
  Mutex end_mu_;
  Status end_status_ CKPT_GUARDED_BY(end_mu_);
  bool finish_called_ CKPT_GUARDED_BY(end_mu_) = false;
  bool cancelled_ CKPT_GUARDED_BY(end_mu_) = false;

  std::shared_ptr<SessionCall> self_;  // released in OnDone
};

// One channel of a Session call: the pipeline's SessionSink, and the channel's own handling.
// Threading: Send and End from any thread (the pipeline's strand, the call's read side);
// `logic` is used as WorkerChannel says.
class SessionChannel final : public SessionSink,
                             public std::enable_shared_from_this<SessionChannel> {
 public:
  SessionChannel(uint32_t number, SessionId id, const ChannelDeps& deps,
                 std::weak_ptr<SessionCall> call, StreamSlots* slots, std::string peer)
      : logic(id, deps, "WorkerService.Session"),
        number_(number),
        call_(std::move(call)),
        slots_(slots),
        peer_(std::move(peer)) {}
  ~SessionChannel() override { Close(); }

  // SessionSink
  void Send(OutboundMessage message) override;
  // Queues the channel's `end` (after what it queued before) and frees its number and slot.
  void End(Status status) override;
  int64_t LastMessageAtMs() const override;

  // Frees the number and slot without writing an end (the call itself is over). Idempotent.
  void Close();
  bool ended() const { return ended_.load(std::memory_order_acquire); }

  WorkerChannel logic;

 private:
  // True for the one caller that ends the channel.
  bool TakeEnd();

  const uint32_t number_;
  const std::weak_ptr<SessionCall> call_;
  StreamSlots* const slots_;
  const std::string peer_;
  std::atomic<bool> ended_{false};
};

}  // namespace ckpt
