#include "rpc/worker_service.h"

#include "rpc/caller_credentials.h"

namespace ckpt {

void WorkerServiceImpl::Accept(std::unique_ptr<grpc::ServerContext> context,
                               std::unique_ptr<StreamQueues::Stream> stream,
                               std::shared_ptr<void> ticket) {
  (void)constructed_.load(std::memory_order_acquire);  // see constructed_
  Admission admission = Admit(*context, "WorkerService.Connect", /*takes_stream_slot=*/true);
  WorkerSession::Create(next_session_id_++, deps_, channel_deps_, std::move(context),
                        std::move(stream), std::move(ticket), std::move(admission));
}

void WorkerServiceImpl::AcceptSession(std::unique_ptr<grpc::ServerContext> context,
                                      std::unique_ptr<StreamQueues::SessionStream> stream,
                                      std::shared_ptr<void> ticket) {
  (void)constructed_.load(std::memory_order_acquire);  // see constructed_
  Admission admission = Admit(*context, "WorkerService.Session", /*takes_stream_slot=*/false);
  SessionCall::Create(deps_, channel_deps_, next_session_id_, std::move(context), std::move(stream),
                      std::move(ticket), std::move(admission));
}

Admission WorkerServiceImpl::Admit(grpc::ServerContext& context, const char* method,
                                   bool takes_stream_slot) {
  Admission admission;
  if (Status s = deps_.gatekeeper.CheckServing(context, method); !s.ok()) {
    admission.refused = s;
    return admission;
  }
  auto caller = deps_.gatekeeper.Admit(context, Access::kWorkerStream, method);
  if (!caller.ok()) {
    admission.refused = caller.status();
    return admission;
  }
  const Limits& limits = deps_.limits;
  std::string peer = PeerAddress(context.peer());
  if (pending_.TryTake(peer) != StreamSlots::Outcome::kTaken) {
    deps_.metrics.CountLimit(CountedLimit::kMaxPendingStreamsPerPeer);
    admission.refused = Status::ResourceExhausted(
        "this peer holds " +
        NameLimit("max_pending_streams_per_peer", limits.max_pending_streams_per_peer) +
        " streams that have not sent hello");
    return admission;
  }
  if (!takes_stream_slot) {
    admission.slots = &slots_;  // for its channels
    admission.pending = &pending_;
    admission.peer = std::move(peer);
    return admission;
  }
  switch (slots_.TryTake(peer)) {
    case StreamSlots::Outcome::kTaken:
      admission.slots = &slots_;
      admission.pending = &pending_;
      admission.peer = std::move(peer);
      return admission;
    case StreamSlots::Outcome::kAllTaken:
      pending_.Remove(peer);
      deps_.metrics.CountLimit(CountedLimit::kMaxStreams);
      admission.refused = Status::ResourceExhausted(
          "the daemon holds " + NameLimit("max_streams", limits.max_streams) + " worker streams");
      return admission;
    case StreamSlots::Outcome::kPeerFull:
      pending_.Remove(peer);
      deps_.metrics.CountLimit(CountedLimit::kMaxStreamsPerPeer);
      admission.refused = Status::ResourceExhausted(
          "this peer holds " + NameLimit("max_streams_per_peer", limits.max_streams_per_peer) +
          " worker streams");
      return admission;
  }
  return admission;
}

}  // namespace ckpt
