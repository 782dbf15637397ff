#include "sdk/connect_attempt.h"

#include "common/channel_security.h"

namespace ckpt::sdk::internal {

std::shared_ptr<ConnectAttempt> ConnectAttempt::Start(v1::WorkerService::Stub& stub,
                                                      grpc::CompletionQueue& queue, uint64_t id,
                                                      v1::WorkerMessage hello,
                                                      const std::string& token,
                                                      std::shared_ptr<AttemptListener> listener) {
  std::shared_ptr<ConnectAttempt> attempt(new ConnectAttempt(id, std::move(listener)));
  // Per call, not as CallCredentials: gRPC refuses those on a plaintext channel, and the daemon
  // accepts a token over plaintext from loopback.
  cli::AttachBearerToken(token, &attempt->context());
  auto stream = stub.PrepareAsyncConnect(&attempt->context(), &queue);
  attempt->Begin(std::move(stream), attempt, std::move(hello));
  return attempt;
}

}  // namespace ckpt::sdk::internal
