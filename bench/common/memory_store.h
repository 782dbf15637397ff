#pragma once
// MemoryStore: a MetadataStore that keeps nothing and completes every write at once, for the
// scheduler benchmark, which measures timers and strands, not disk (the store benchmark measures
// SQLite). Id reservations and checkpoint commits succeed immediately.
//
// Threading: every method may be called from any thread, a strand included: a write only counts
// itself (relaxed atomics) and runs `done` on the caller's thread before returning. The runner's
// callbacks post to its strand rather than running inline, so this never re-enters a strand.

#include <atomic>
#include <cstdint>

#include "store/metadata_store.h"

namespace ckpt::bench {

class MemoryStore final : public MetadataStore {
 public:
  Result<std::vector<StoredPipeline>> LoadPipelines() override {
    return std::vector<StoredPipeline>{};
  }
  void PutPipeline(const PipelineRecord&, Done done) override { Complete(puts_, done); }
  void PutProgress(const PipelineKey&, const PipelineProgress&, Done done) override {
    Complete(puts_, done);
  }
  void ReserveIds(const PipelineKey&, int64_t, Done done) override { Complete(reserves_, done); }
  void CommitCheckpoint(CheckpointCommit, Done done) override { Complete(commits_, done); }
  void Probe(Done done) override { Complete(puts_, done); }
  void DeletePipeline(const PipelineKey&, Done done) override { Complete(deletes_, done); }
  void DeleteCheckpoints(const PipelineKey&, const std::vector<int64_t>&, Done done) override {
    Complete(deletes_, done);
  }
  Result<int64_t> LoadIdCounter(const PipelineKey&) override { return int64_t{0}; }
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey&, int,
                                                         int64_t = 0) override {
    return std::vector<CompletedCheckpoint>{};
  }
  void Flush() override {}
  Result<std::vector<StoredGroup>> LoadGroups() override { return std::vector<StoredGroup>{}; }
  void PutGroup(const AlignmentGroupSpec&, bool, Done done) override { Complete(puts_, done); }
  void DeleteGroup(const std::string&, Done done) override { Complete(deletes_, done); }
  void ReserveGroupIds(const std::string&, int64_t, Done done) override {
    Complete(reserves_, done);
  }
  void CommitGroupRound(const GroupRoundCommit&, Done done) override { Complete(commits_, done); }

  uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }

 private:
  static void Complete(std::atomic<uint64_t>& counter, const Done& done) {
    counter.fetch_add(1, std::memory_order_relaxed);
    if (done) done(Status::Ok());
  }

  std::atomic<uint64_t> puts_{0};
  std::atomic<uint64_t> reserves_{0};
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> deletes_{0};
};

}  // namespace ckpt::bench
