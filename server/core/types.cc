#include "core/types.h"

#include <algorithm>

namespace ckpt {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;

uint64_t Fnv1a(uint64_t h, unsigned char c) { return (h ^ c) * 1099511628211ULL; }

uint64_t Fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = Fnv1a(h, c);
  return h;
}

}  // namespace

uint64_t StableKeyHash(const PipelineKey& key) {
  uint64_t h = Fnv1a(kFnvOffset, key.job_id);
  h = Fnv1a(h, '\0');  // a separator: job "a" + pipeline "bc" is not job "ab" + pipeline "c"
  return Fnv1a(h, key.pipeline_id);
}

const char* PipelineStateName(PipelineState s) {
  switch (s) {
    case PipelineState::kWaitingForTasks: return "WAITING_FOR_TASKS";
    case PipelineState::kRunning: return "RUNNING";
    case PipelineState::kPaused: return "PAUSED";
    case PipelineState::kFailed: return "FAILED";
    case PipelineState::kStopped: return "STOPPED";
    case PipelineState::kUnreadable: return "UNREADABLE";
  }
  return "UNKNOWN";
}

const char* CheckpointKindName(CheckpointKind k) {
  switch (k) {
    case CheckpointKind::kCheckpoint: return "CHECKPOINT";
    case CheckpointKind::kSavepoint: return "SAVEPOINT";
    case CheckpointKind::kSavepointAndStop: return "SAVEPOINT_AND_STOP";
  }
  return "UNKNOWN";
}

const char* CheckpointStatusName(CheckpointStatus s) {
  switch (s) {
    case CheckpointStatus::kPending: return "PENDING";
    case CheckpointStatus::kCompleted: return "COMPLETED";
    case CheckpointStatus::kFailed: return "FAILED";
    case CheckpointStatus::kExpired: return "EXPIRED";
    case CheckpointStatus::kAborted: return "ABORTED";
  }
  return "UNKNOWN";
}

const char* CommitStatusName(CommitStatus s) {
  switch (s) {
    case CommitStatus::kNone: return "NONE";
    case CommitStatus::kCommitting: return "COMMITTING";
    case CommitStatus::kCommitted: return "COMMITTED";
  }
  return "UNKNOWN";
}

void ApplyProgressMarks(const PipelineProgress& progress, CompletedCheckpoint& checkpoint) {
  checkpoint.unrestorable = std::binary_search(
      progress.unrestorable_ids.begin(), progress.unrestorable_ids.end(), checkpoint.checkpoint_id);
  if (checkpoint.commit_status != CommitStatus::kCommitting) return;
  if (checkpoint.checkpoint_id > progress.last_committed_id) return;
  checkpoint.commit_status = CommitStatus::kCommitted;
  if (checkpoint.checkpoint_id == progress.last_committed_id && checkpoint.committed_at_ms == 0) {
    checkpoint.committed_at_ms = progress.last_committed_at_ms;
  }
}

}  // namespace ckpt
