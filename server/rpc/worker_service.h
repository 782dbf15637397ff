#pragma once
// WorkerService.Connect: one WorkerSession reactor per stream. Before a stream reads anything it
// is admitted: its caller identified by the access policy (a worker principal), and within
// limits.max_streams and limits.max_streams_per_peer; a refused stream ends at once.
// Threading: Connect runs on gRPC threads; the service holds constants, atomics and StreamSlots
// (thread-safe).

#include <atomic>

#include "ckpt/v1/worker.grpc.pb.h"
#include "rpc/worker_session.h"

namespace ckpt {

class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  explicit WorkerServiceImpl(SessionDeps deps)
      : slots_(deps.limits.max_streams, deps.limits.max_streams_per_peer), deps_(std::move(deps)) {
    constructed_.store(true, std::memory_order_release);
  }

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  Admission Admit(grpc::CallbackServerContext& context);

  StreamSlots slots_;
  const SessionDeps deps_;
  // Set (release) at the end of construction, read (acquire) first in Connect: the service is
  // made on the controlling thread and handed to gRPC's threads through the server's start, which
  // ThreadSanitizer cannot see (as WorkerSession::constructed_).
  std::atomic<bool> constructed_{false};
  std::atomic<SessionId> next_session_id_{1};
};

}  // namespace ckpt
