#pragma once
// CheckpointHistory: the ids a pipeline's store still holds (docs/PROTOCOL.md, "Restore and
// release"), as its coordinator keeps them: every savepoint, the `retained` newest plain
// checkpoints (at least one), and older plain ones a pin or a commit's `keep` spared. It decides
// what a commit pushes out (the window), which ids are on their way out (a delete in flight), and
// what the last releasing write released (sent again to a session registering after a restart).
// The coordinator decides the rest: what pins hold, which id is the restore point, when to write.
//
// One of the coordinator's parts (docs/DESIGN.md, "The coordinator's parts").
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.
//
// Memory: one per pipeline for its whole life. The entries are packed (8 bytes an id), a commit
// trims in place (no allocation once the window's room is there), and the ids being deleted live
// on the heap only while a delete is in flight.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/packed_history_entry.h"
#include "core/types.h"

namespace ckpt {

class CheckpointHistory {
 public:
  // From the store: the history oldest first, the highest window start any commit had
  // (StoredPipeline::retained_from) and what the last releasing write released.
  CheckpointHistory(const std::vector<HistoryEntry>& stored, int64_t horizon,
                    std::vector<int64_t> last_released);

  const std::vector<PackedHistoryEntry>& entries() const { return entries_; }
  // The entry of `checkpoint_id`, or null.
  const PackedHistoryEntry* Find(int64_t checkpoint_id) const;
  size_t savepoints() const;
  // Every id held, oldest first.
  std::vector<int64_t> Ids() const;

  // The oldest plain id within the window of max(`retained`, 1) once plain checkpoint `extra` (a
  // commit in flight; 0: none, or a savepoint) joined the history; 0 when the window is not full.
  int64_t WindowStart(int32_t retained, int64_t extra = 0) const;
  // Plain ids below this stay only while something holds them: WindowStart(retained, extra), or
  // a later start a commit once had (a larger `retained` does not bring back what was trimmed).
  int64_t Horizon(int32_t retained, int64_t extra = 0) const;
  // The plain ids a commit of plain checkpoint `extra` (0: a savepoint) keeping `keep` (sorted)
  // pushes out.
  std::vector<int64_t> ReleasedBy(int32_t retained, int64_t extra,
                                  const std::vector<int64_t>& keep) const;

  // A commit became durable: `checkpoint_id` joins (ids are committed in increasing order), and
  // the plain ids outside the window that `keep` (sorted) does not name leave, as the store's
  // commit trimmed them. Returns those; when there are any they are the last released.
  std::vector<int64_t> Adopt(int64_t checkpoint_id, CheckpointKind kind, int32_t retained,
                             const std::vector<int64_t>& keep);

  // Plain ids below Horizon with no delete in flight: the candidates to delete once unpinned.
  std::vector<int64_t> OutsideWindow(int32_t retained) const;
  // A delete of `ids` is in flight: they stay held until OnDeleted.
  void MarkDeleting(const std::vector<int64_t>& ids);
  bool BeingDeleted(int64_t checkpoint_id) const;
  // The delete is durable: the ids leave. Returns those that were held (the caller records them
  // with NoteReleased unless the pipeline itself is gone).
  std::vector<int64_t> OnDeleted(const std::vector<int64_t>& ids);
  void OnDeleteFailed(const std::vector<int64_t>& ids);

  // `released` is what the next write records as released.
  void NoteReleased(const std::vector<int64_t>& released);
  // What the last releasing write released (PipelineProgress::released_ids).
  const std::vector<int64_t>& last_released() const { return last_released_; }
  // After a restart, until the next release, a session registering gets last_released() again:
  // the daemon may have stopped before it reached the workers.
  void OnStart(bool restarted) { resend_release_ = restarted && !last_released_.empty(); }
  bool resend_release() const { return resend_release_; }

 private:
  // Oldest first, sorted. Its capacity is the window and one more (the commit landing before the
  // trim).
  std::vector<PackedHistoryEntry> entries_;
  std::vector<int64_t> last_released_;
  int64_t horizon_ = 0;
  // Ids a delete is in flight for (null while none is).
  std::unique_ptr<std::vector<int64_t>> deleting_;
  bool resend_release_ = false;
};

}  // namespace ckpt
