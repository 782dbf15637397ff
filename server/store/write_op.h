#pragma once
// The writes a MetadataStore takes, as values: what GroupCommitStore queues and hands to its
// backend in batches (store_backend.h). One struct per MetadataStore write; their meaning is the
// one metadata_store.h gives the method of the same name.

#include <cstdint>
#include <variant>
#include <vector>

#include "core/types.h"

namespace ckpt {

struct PutPipelineOp {
  PipelineRecord record;
};

// Writes nothing (and succeeds) when the pipeline has no record.
struct PutProgressOp {
  PipelineKey key;
  PipelineProgress progress;
};

struct ReserveIdsOp {
  PipelineKey key;
  int64_t new_counter = 0;
};

// NOT_FOUND when the pipeline has no record; ALREADY_EXISTS when the id is stored already.
struct CommitCheckpointOp {
  CheckpointCommit commit;
};

// A write of the store's own probe value: whether the store takes writes at all.
struct ProbeOp {
  int64_t now_ms = 0;
};

struct DeletePipelineOp {
  PipelineKey key;
};

// Ids not in the history are skipped; NOT_FOUND when the pipeline has no record.
struct DeleteCheckpointsOp {
  PipelineKey key;
  std::vector<int64_t> checkpoint_ids;
};

using WriteOp = std::variant<PutPipelineOp, PutProgressOp, ReserveIdsOp, CommitCheckpointOp,
                             ProbeOp, DeletePipelineOp, DeleteCheckpointsOp>;

}  // namespace ckpt
