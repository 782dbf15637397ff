#pragma once
// The operator API's reads of one pipeline that need both its strand (what only memory holds: the
// pending round, recent failures) and the store (completed checkpoints): ListCheckpoints and
// GetCheckpoint answer with them, and so does the web view, so both show the same thing.
//
// Threading: call from any thread. The strand is visited briefly to copy what memory holds; the
// store is read by the backend off every strand; `done` runs on the store's thread or the strand
// and must not block. `out` must stay alive until `done` runs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "api/admin_backend.h"
#include "ckpt/v1/admin.pb.h"
#include "common/status.h"
#include "runtime/pipeline_runner.h"

namespace ckpt {

// Below gRPC's default 4 MiB receive limit, with room for the pending round.
inline constexpr size_t kMaxListReplyBytes = 3 << 20;

// What an embedded message of `bytes` adds to a repeated field: its tag and its length prefix.
size_t RepeatedFieldBytes(size_t bytes);

// Up to `limit` rounds, newest first: the pending one (on the first page, before_id 0), recent
// failures and the store's completed checkpoints, merged by id, those with ids below `before_id`
// (0: from the newest). Stops early rather than pass kMaxListReplyBytes (the newest always comes);
// sets next_page_token when older ones may follow. With `state_bytes`, the entries come without
// their task states (so a wide pipeline's history is not cut short by them) and state_bytes gets
// each entry's total, in order; it must stay alive until `done` runs, as `out`.
void ReadCheckpointHistory(AdminBackend& backend, const std::shared_ptr<PipelineRunner>& runner,
                           int limit, int64_t before_id, v1::ListCheckpointsResponse* out,
                           std::vector<int64_t>* state_bytes, std::function<void(Status)> done);

// One round with its tasks: pending, the newest failed one, or a completed one from the store.
// NOT_FOUND names what was looked at.
void ReadCheckpoint(AdminBackend& backend, const std::shared_ptr<PipelineRunner>& runner,
                    int64_t checkpoint_id, v1::CheckpointInfo* out,
                    std::function<void(Status)> done);

}  // namespace ckpt
