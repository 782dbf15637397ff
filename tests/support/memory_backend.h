#pragma once
// MemoryBackend: a StoreBackend that keeps everything in maps, for tests. It proves the seam of
// store_backend.h (GroupCommitStore over it behaves as the SQLite store does: the same contract
// tests pass on both), and lets tests drive the group-commit writer by hand: hold a batch in
// progress, end the next batch with a chosen outcome, fail reads.
//
// Threading: ApplyBatch on the writer thread, everything else from any thread; all state is
// guarded by mu_. A batch is applied under mu_, so a read sees all of it or none.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store/store_backend.h"

namespace ckpt {

class MemoryBackend final : public StoreBackend {
 public:
  MemoryBackend() = default;

  const std::string& name() const override { return name_; }
  BatchResult ApplyBatch(const std::vector<WriteOp>& ops) override;
  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id) override;
  Result<std::vector<StoredGroup>> LoadGroups() override;

  // --- the test's controls; any thread ---
  // Batches from now on wait, before anything is applied, until ReleaseBatches.
  void HoldBatches();
  void ReleaseBatches();
  // Waits (up to `timeout`) until a batch is held; false if none came.
  bool WaitUntilABatchIsHeld(std::chrono::milliseconds timeout);
  // The next batch to come in (not one already held) is not applied and ends with `outcome` and
  // `status` instead.
  void EndNextBatchWith(BatchResult::Outcome outcome, Status status);
  // The next batch to come in answers `count` results, however many ops it had (a broken
  // backend).
  void AnswerNextBatchWith(size_t count);
  // Every read from now on fails with `status` (OK: reads work again).
  void FailReads(Status status);
  // The size of every batch applied or ended so far, in order.
  std::vector<size_t> batch_sizes() const;

 private:
  Status Apply(const WriteOp& op);  // under mu_
  // Under mu_: whether `c` could be committed now (CheckCommit), and committing it.
  Status CheckCommit(const CheckpointCommit& c) const;
  void ApplyCommit(const CheckpointCommit& c);

  const std::string name_ = "memory";
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;                              // guarded by mu_
  bool holding_ = false;                           // guarded by mu_: a batch waits in ApplyBatch
  std::optional<BatchResult> next_outcome_;        // guarded by mu_
  std::optional<size_t> next_answer_count_;        // guarded by mu_
  Status read_failure_;                            // guarded by mu_
  std::vector<size_t> batch_sizes_;                // guarded by mu_
  std::map<PipelineKey, PipelineRecord> records_;  // guarded by mu_
  std::map<PipelineKey, int64_t> counters_;        // guarded by mu_
  std::map<PipelineKey, std::map<int64_t, CompletedCheckpoint>> history_;  // guarded by mu_
  int64_t probe_ms_ = 0;                                                   // guarded by mu_
  std::map<std::string, StoredGroup> groups_;                              // guarded by mu_
};

}  // namespace ckpt
