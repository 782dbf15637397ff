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

// `unreadable`: the pipeline's record could not be read (MetadataStore::
// DeleteUnreadablePipeline): its id counter is raised to the store's high-water mark too.
struct DeletePipelineOp {
  PipelineKey key;
  bool unreadable = false;
};

// Ids not in the history are skipped; NOT_FOUND when the pipeline has no record.
struct DeleteCheckpointsOp {
  PipelineKey key;
  std::vector<int64_t> checkpoint_ids;
};

// Alignment groups (docs/ALIGNMENT.md). Creates the group, or replaces its spec and from_config
// (its progress stays).
struct PutGroupOp {
  AlignmentGroupSpec spec;
  bool from_config = false;
};

// Removes the group's spec and progress (a group of that name created later starts from zero:
// its ids are raised above every member's anyway).
struct DeleteGroupOp {
  std::string name;
};

// Raises the group's id counter, never lowers it. NOT_FOUND when the group has no record.
struct ReserveGroupIdsOp {
  std::string name;
  int64_t new_counter = 0;
};

// All or nothing: every member's checkpoint as CommitCheckpointOp writes it, and the group's
// progress (its id counter the larger of the two). NOT_FOUND when the group or a member has no
// record, ALREADY_EXISTS when a member holds the id already: then nothing is written.
struct CommitGroupRoundOp {
  GroupRoundCommit commit;
};

using WriteOp = std::variant<PutPipelineOp, PutProgressOp, ReserveIdsOp, CommitCheckpointOp,
                             ProbeOp, DeletePipelineOp, DeleteCheckpointsOp, PutGroupOp,
                             DeleteGroupOp, ReserveGroupIdsOp, CommitGroupRoundOp>;

}  // namespace ckpt
