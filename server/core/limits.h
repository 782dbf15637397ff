#pragma once
// The config's `limits` (docs/SECURITY.md "Limits"): what one client, or all of them together,
// may make the daemon hold. Each limit is named in the error that
// enforces it (RESOURCE_EXHAUSTED, or INVALID_ARGUMENT for sizes of one value), as
// "limits.<key> (<value>)".

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/spec_validation.h"
#include "core/types.h"

namespace ckpt {

struct Limits {
  int64_t max_pipelines = 1000000;
  // At most kMaxTasksPerPipeline and kMaxIdBytes: a limit may tighten the built-in bounds, which
  // the store and the protocol are sized for, not lift them.
  int64_t max_tasks_per_pipeline = kMaxTasksPerPipeline;
  int64_t max_id_length = kMaxIdBytes;    // bytes
  int64_t max_streams = 500000;           // worker streams in all
  int64_t max_streams_per_peer = 200000;  // worker streams from one IP address
  int64_t max_message_bytes = 4 << 20;    // one incoming gRPC message
  // Unsent messages queued for one worker stream; beyond it the stream is ended
  // (RESOURCE_EXHAUSTED) and its tasks released: a worker that stops reading costs this much.
  int64_t max_session_queue_bytes = 4 << 20;
  // Savepoints a pipeline's workers may ask for per minute (operators are not limited).
  int64_t savepoint_requests_per_minute = 6;
  // Savepoints one pipeline's history may hold: beyond it a new savepoint is refused until one
  // is deleted (DeleteCheckpoint), so that no client can fill the disk with them.
  int64_t max_savepoints_per_pipeline = 100;
  // What one client, or all together, may make the daemon hold at the edge (docs/SECURITY.md
  // "Limits"): AdminService calls in flight per client address (their replies
  // wait in memory for a caller that may never read them), connections on `listen` in all and
  // per client address (each holds a descriptor and buffers), streams per client address that
  // have not sent `hello` yet, and how long a connection may carry no call, and a TLS handshake
  // may take.
  int64_t max_admin_calls_per_peer = 64;
  int64_t max_connections = 20000;
  int64_t max_connections_per_peer = 2000;
  int64_t max_pending_streams_per_peer = 1000;
  int64_t connection_idle_timeout_ms = 300000;
  int64_t handshake_timeout_ms = 10000;

  bool operator==(const Limits&) const = default;
};

// The limits whose refusals ckptd_limit_refusals_total counts, by its `limit` label.
enum class CountedLimit {
  kMaxPipelines,
  kMaxStreams,
  kMaxStreamsPerPeer,
  kMaxSessionQueueBytes,
  kSavepointRequestsPerMinute,
  kMaxSavepointsPerPipeline,
  kMaxAdminCallsPerPeer,
  kMaxConnections,
  kMaxConnectionsPerPeer,
  kMaxPendingStreamsPerPeer,
  // Not a config key: operator work that blocks waits in bounded queues (runtime/blocking_work.h).
  kOperatorQueue,
  kCount,
};
inline constexpr size_t kCountedLimitCount = static_cast<size_t>(CountedLimit::kCount);
const char* CountedLimitLabel(CountedLimit limit);

// "limits.<key> (<value>)", for messages.
std::string NameLimit(const char* key, int64_t value);

}  // namespace ckpt

namespace ckpt {

// A new spec (from the API or the config file) within `limits`: task count and id lengths.
// INVALID_ARGUMENT naming the limit. ValidateSpec's rules are checked apart.
Status CheckSpecLimits(const PipelineSpec& spec, const Limits& limits);
// An id (`what` names it) within limits.max_id_length.
Status CheckIdLength(const std::string& id, const char* what, const Limits& limits);

}  // namespace ckpt
