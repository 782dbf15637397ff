#pragma once
// Attempt: one try of a pipeline's stream to the daemon, as PipelineSession sees it, whatever
// carries it: a Connect stream of its own (sdk/connect_attempt.h) or a channel of a Session call
// shared with the process's other pipelines (sdk/session_mux.h).

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ckpt/v1/worker.pb.h"

namespace ckpt::sdk::internal {

// Receives what a stream reads and how it ended.
// Threading: called on a queue's thread, from reactions: must not block (post and return).
class AttemptListener {
 public:
  virtual ~AttemptListener() = default;
  virtual void OnAttemptMessage(uint64_t attempt_id, v1::CoordinatorMessage message) = 0;
  // The last call for this attempt; no message follows it. `leader`: the stream's `ckpt-leader`
  // trailer (a standby refused it; "" when the standby knows no leader), nullopt without one.
  virtual void OnAttemptDone(uint64_t attempt_id, grpc::Status status,
                             std::optional<std::string> leader) = 0;
};

// Threading: Send and Cancel are safe from any thread.
class Attempt {
 public:
  virtual ~Attempt() = default;
  // Queues a message. False if the stream is ending (or its queue is full): the message is
  // dropped.
  virtual bool Send(v1::WorkerMessage message) = 0;
  // Ends the stream (CANCELLED): the listener's OnAttemptDone follows.
  virtual void Cancel() = 0;
  // Whether a Session call carries it (a daemon without Session answers UNIMPLEMENTED).
  virtual bool over_session() const = 0;
};

}  // namespace ckpt::sdk::internal
