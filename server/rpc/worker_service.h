#pragma once
// WorkerService.Connect: one WorkerSession reactor per stream.
// Threading: Connect runs on gRPC threads; the service itself holds only constants and an atomic.

#include <atomic>

#include "ckpt/v1/worker.grpc.pb.h"
#include "rpc/worker_session.h"

namespace ckpt {

class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  explicit WorkerServiceImpl(SessionDeps deps) : deps_(deps) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override {
    return WorkerSession::Create(next_session_id_++, deps_, context);
  }

 private:
  const SessionDeps deps_;
  std::atomic<SessionId> next_session_id_{1};
};

}  // namespace ckpt
