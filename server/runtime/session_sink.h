#pragma once
// SessionSink: a worker stream as a pipeline sees it. Implemented by rpc/worker_session.h, which
// turns these domain messages into protos; the runtime never sees a proto or a grpc::Status.
//
// Threading: safe to call from any thread. Calls after the stream ended are no-ops.

#include <string>
#include <variant>

#include "common/status.h"
#include "core/actions.h"
#include "core/pipeline_coordinator.h"

namespace ckpt {

struct WelcomeMessage {
  SessionId session = 0;
  WelcomeInfo info;
  int64_t heartbeat_interval_ms = 0;
  int64_t lease_ttl_ms = 0;
};

using OutboundMessage =
    std::variant<WelcomeMessage, SendTrigger, SendAbort, SendComplete, SendRelease, SendState,
                 SendSavepointRefused, SendAllCommitted>;

class SessionSink {
 public:
  virtual ~SessionSink() = default;
  // Queues a message; the stream writes one at a time, in order.
  virtual void Send(OutboundMessage message) = 0;
  // Ends the stream with `status` once the queued messages are written.
  virtual void End(Status status) = 0;
  // Wall-clock ms of the last message the worker sent (or of the stream's start); 0: unknown.
  virtual int64_t LastMessageAtMs() const { return 0; }
};

// What a worker said in `hello`, in domain terms.
struct HelloInfo {
  std::string worker_id;
  PipelineKey key;
  std::vector<std::string> task_ids;
  bool takeover = false;
  // Who the stream authenticated as ("" without auth): takeovers stay within a principal, and
  // what the worker asks for is logged with it.
  std::string principal;
};

}  // namespace ckpt
