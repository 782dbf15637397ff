#pragma once
// WorkerSession is one worker's Connect stream: its reactor on a stream queue
// (rpc/async_bidi_reactor.h), the one channel it carries (rpc/worker_channel.h: the hello, the
// pipeline's runner, each message handed on) and, for the pipeline, the SessionSink it writes to.
//
// Threading: reactions run on the stream's queue thread, one at a time; Send and End come from
// the pipeline's strand, the lease timer and shutdown. Write state is guarded by mu_; done_ and
// the activity time are atomics. Reactions never block and never touch a coordinator: the
// channel posts to the pipeline's strand through its runner. The lease (rpc/stream_lease.h)
// runs on a strand of its own.
//
// Lifetime: the session owns itself (self_) from Create until OnDone. Strand handlers and the lease
// timer may hold more references, so every call after OnDone is a no-op. Finish is called exactly
// once, every path (goodbye, errors, cancel, lease expiry, shutdown) going through End(). A
// cancelled call (the worker went away) fails the read that is always outstanding until End.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <memory>

#include "ckpt/v1/worker.grpc.pb.h"
#include "common/daemon_clock.h"
#include "common/mutex.h"
#include "core/limits.h"
#include "rpc/async_bidi_reactor.h"
#include "rpc/gatekeeper.h"
#include "rpc/stream_lease.h"
#include "rpc/stream_slots.h"
#include "rpc/worker_channel.h"
#include "runtime/daemon_metrics.h"
#include "runtime/io_shards.h"
#include "runtime/quarantine.h"
#include "runtime/registry.h"
#include "runtime/session_sink.h"

namespace ckpt {

struct SessionDeps {
  Registry& registry;
  DaemonMetrics& metrics;
  IoShards& shards;  // each session's lease timer goes to the next shard in turn
  int64_t lease_ttl_ms;
  int64_t hello_timeout_ms;  // a stream without hello is ended after this
  const Gatekeeper& gatekeeper;
  Limits limits;
  // Whether messages may go to workers now (a leader past its local lease deadline sends none)
  // and the epoch welcome and trigger carry.
  const Leadership& leadership;
  // Pipelines whose records could not be read: a hello for one is FAILED_PRECONDITION with why.
  // May be null (no quarantine).
  const Quarantine* quarantine = nullptr;

  ChannelDeps channel() const { return {registry, metrics, gatekeeper, limits, quarantine}; }
};

// What WorkerService.Connect (or .Session) decided about a new stream before it reads a byte of it.
struct Admission {
  Status refused;  // not OK: the stream is ended with this at once
  // Where the stream holds a slot until OnDone (null when it holds none: refused).
  StreamSlots* slots = nullptr;
  // Where it holds a pending slot until its hello (or OnDone, if none came).
  StreamSlots* pending = nullptr;
  std::string peer;
};

class WorkerSession final : public AsyncBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>,
                            public SessionSink,
                            public StreamLease::Owner,
                            public std::enable_shared_from_this<WorkerSession> {
 public:
  // Takes over an accepted call (`context`, `stream` and `ticket` as the stream queue gave them)
  // and starts it: the first read, or the refusal. The session keeps itself alive until OnDone.
  // `channel_deps` (deps.channel(), kept by the service) must outlive it.
  static void Create(SessionId id, const SessionDeps& deps, const ChannelDeps& channel_deps,
                     std::unique_ptr<grpc::ServerContext> context, std::unique_ptr<Stream> stream,
                     std::shared_ptr<void> ticket, Admission admission);

  // SessionSink
  void Send(OutboundMessage message) override;
  void End(Status status) override;
  int64_t LastMessageAtMs() const override;

  // Reactions
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

  // StreamLease::Owner
  bool LeaseOver() const override { return done_; }
  void NoHelloInTime(std::chrono::milliseconds hello_timeout) override;
  Status LeaseExpired(std::chrono::milliseconds lease_ttl) override;
  void EndNotWritten(Status expired) override;

 private:
  WorkerSession(SessionId id, const SessionDeps& deps, const ChannelDeps& channel_deps,
                std::unique_ptr<grpc::ServerContext> context, std::unique_ptr<Stream> stream,
                std::shared_ptr<void> ticket, Admission admission);
  // Handles in_; returns false when the stream must read no more.
  bool HandleMessage();
  void ReportEnded(const std::string& why, bool goodbye = false) {
    channel_.ReportEnded(why, goodbye);
  }
  void StartNextWriteLocked() CKPT_REQUIRES(mu_);
  void MaybeFinishLocked() CKPT_REQUIRES(mu_);
  // Drops every queued message but the one being written, cancels the call (so that write
  // fails at once, whether or not the peer reads) and ends the stream with `status` (or with the
  // status of an end already asked for).
  void AbandonQueueLocked(Status status) CKPT_REQUIRES(mu_);
  // Gives the pending slot back, once.
  void ReleasePending();

  // Constant after construction.
  DaemonMetrics& metrics_;
  const Limits limits_;
  const Leadership& leadership_;
  const Admission admission_;

  std::atomic<bool> done_{false};
  std::atomic<bool> pending_released_{false};  // the pending slot given back (hello, or OnDone)
  StreamLease lease_;

  // Touched only by read reactions (on the queue's thread), of which one is outstanding at a time.
  v1::WorkerMessage in_;
  WorkerChannel channel_;  // Handle on read reactions; ReportEnded from anywhere

  Mutex mu_;
  // front() is in flight while writing_.
  std::deque<v1::CoordinatorMessage> out_queue_ CKPT_GUARDED_BY(mu_);
  // The serialized size of out_queue_, bounded by limits.max_session_queue_bytes plus the size
  // of the welcome while it waits (welcome_allowance_bytes_: 0 before it is queued and once it
  // is written).
  int64_t queued_bytes_ CKPT_GUARDED_BY(mu_) = 0;
  int64_t welcome_allowance_bytes_ CKPT_GUARDED_BY(mu_) = 0;
  bool writing_ CKPT_GUARDED_BY(mu_) = false;
  bool finish_requested_ CKPT_GUARDED_BY(mu_) = false;
  bool finish_called_ CKPT_GUARDED_BY(mu_) = false;
  bool cancelled_ CKPT_GUARDED_BY(mu_) = false;  // TryCancel called (once is enough)
  Status finish_status_ CKPT_GUARDED_BY(mu_);

  std::shared_ptr<WorkerSession> self_;  // released in OnDone
};

}  // namespace ckpt
