#pragma once
// WorkerService.Connect: one WorkerSession per stream, on the stream queues (rpc/stream_queues.h);
// WorkerService.Session: one SessionCall per call, a channel per pipeline on it
// (rpc/session_call.h). Before a call reads anything it is admitted: its caller identified by the
// access policy (a worker principal), and within limits.max_streams, limits.max_streams_per_peer
// and limits.max_pending_streams_per_peer (streams that have not said hello yet: each costs memory
// and a timer, and a client that opens them in a loop without a hello must be cut off early,
// not at max_streams_per_peer); a refused stream ends at once, RESOURCE_EXHAUSTED naming the
// limit. A Session call holds a pending slot until its first hello; its channels, not the call,
// hold the stream slots (taken at each channel's hello).
// Threading: Accept runs on the stream queues' threads; the service holds constants, atomics and
// StreamSlots (thread-safe).

#include <atomic>
#include <cstdint>

#include "ckpt/v1/worker.grpc.pb.h"
#include "rpc/session_call.h"
#include "rpc/stream_queues.h"
#include "rpc/worker_session.h"

namespace ckpt {

class WorkerServiceImpl final : public v1::WorkerService::AsyncService {
 public:
  explicit WorkerServiceImpl(SessionDeps deps)
      : slots_(deps.limits.max_streams, deps.limits.max_streams_per_peer),
        pending_(INT64_MAX, deps.limits.max_pending_streams_per_peer),
        deps_(std::move(deps)),
        channel_deps_(deps_.channel()) {
    constructed_.store(true, std::memory_order_release);
  }

  // A Connect call the queues accepted: its session, which owns the call from here.
  void Accept(std::unique_ptr<grpc::ServerContext> context,
              std::unique_ptr<StreamQueues::Stream> stream, std::shared_ptr<void> ticket);
  // A Session call the queues accepted: its SessionCall, which owns the call from here.
  void AcceptSession(std::unique_ptr<grpc::ServerContext> context,
                     std::unique_ptr<StreamQueues::SessionStream> stream,
                     std::shared_ptr<void> ticket);

 private:
  // `takes_stream_slot`: a Connect stream holds one of limits.max_streams itself; a Session call
  // does not (its channels do).
  Admission Admit(grpc::ServerContext& context, const char* method, bool takes_stream_slot);

  StreamSlots slots_;
  StreamSlots pending_;  // streams that have not said hello yet, per peer
  const SessionDeps deps_;
  const ChannelDeps channel_deps_;  // deps_'s, for every channel (they hold a reference)
  // Set (release) at the end of construction, read (acquire) first in Accept: the service is
  // made on the controlling thread and reaches the queues' threads through gRPC's completion
  // queues, which ThreadSanitizer cannot see (as WorkerSession::constructed_).
  std::atomic<bool> constructed_{false};
  std::atomic<SessionId> next_session_id_{1};
};

}  // namespace ckpt
