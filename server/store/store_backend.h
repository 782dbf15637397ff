#pragma once
// StoreBackend: what a storage engine supplies to GroupCommitStore (group_commit_store.h), which
// owns everything else a MetadataStore does: the queue, batching and pacing, the writer thread,
// completion callbacks in call order, Flush, and fail-stop when an outcome is unknown. A backend
// only applies a batch of writes durably and reads. The SQLite backend (sqlite/) is one; a test's
// in-memory one (tests/support) is another.
//
// Threading: ApplyBatch is called by GroupCommitStore's one writer thread only, one batch at a
// time. The reads may be called from any thread, concurrently with ApplyBatch and with each other:
// the backend synchronizes them, and a read must not wait for a batch in progress.

#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "store/write_op.h"

namespace ckpt {

// How a batch ended.
struct BatchResult {
  enum class Outcome {
    // Durable. `results` has one status per op, in order: an op that failed on its own (a
    // duplicate id, a missing record) was undone alone, and the others are durable.
    kCommitted,
    // Nothing of the batch is durable, and the backend knows it (a refused BEGIN, a full disk):
    // every op fails with `status`. The store goes on; a later batch may succeed. UNAVAILABLE
    // marks a failing store (StoreHealth), as the MetadataStore contract says.
    kNotWritten,
    // The store must stop: whether the batch is durable is unknown (a failed fsync), or the
    // stored data is damaged (`status` is DATA_LOSS). No op of the batch is answered.
    kStop,
  };

  static BatchResult Committed(std::vector<Status> results) {
    return {Outcome::kCommitted, std::move(results), Status::Ok()};
  }
  static BatchResult NotWritten(Status why) { return {Outcome::kNotWritten, {}, std::move(why)}; }
  static BatchResult Stop(Status why) { return {Outcome::kStop, {}, std::move(why)}; }

  Outcome outcome;
  std::vector<Status> results;  // kCommitted: one per op
  Status status;                // kNotWritten and kStop: why
};

class StoreBackend {
 public:
  virtual ~StoreBackend() = default;

  // What the store is, for messages ("/var/lib/ckptd/ckptd.db").
  virtual const std::string& name() const = 0;

  // Applies `ops` in order as one durable unit (see BatchResult). Writer thread only.
  virtual BatchResult ApplyBatch(const std::vector<WriteOp>& ops) = 0;

  // The reads of MetadataStore, with its meaning. DATA_LOSS from a read stops the store.
  virtual Result<std::vector<StoredPipeline>> LoadPipelines() = 0;
  virtual Result<int64_t> LoadIdCounter(const PipelineKey& key) = 0;
  virtual Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                                 int64_t before_id) = 0;
  virtual Result<std::vector<StoredGroup>> LoadGroups() = 0;
  // What the last LoadPipelines and LoadGroups could not read (MetadataStore's meaning).
  virtual std::vector<UnreadableRecord> UnreadableRecords() { return {}; }
};

}  // namespace ckpt
