#pragma once
// FaultInjectingStore: a MetadataStore that forwards to another one but can be told to fail the
// next N CommitCheckpoint or ReserveIds calls with a chosen Status. For tests (store failures must
// fail the checkpoint, failed reservations must be retried), never for production.
//
// Threading: any thread may call anything, like MetadataStore. The injection plan is guarded by
// `mu_`; everything else is the inner store's business. An injected failure is still reported the
// way a real one is: on the inner store's writer thread, in call order relative to the other
// writes. To get that, the failed call is replaced by a write that changes nothing anyone reads
// (Probe), whose callback reports the injected Status. Nothing of the failed op itself is written.

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "store/metadata_store.h"

namespace ckpt {

class FaultInjectingStore final : public MetadataStore {
 public:
  explicit FaultInjectingStore(std::unique_ptr<MetadataStore> inner);
  ~FaultInjectingStore() override;

  // The next `count` calls (of any pipeline, or only of `only` if given) fail with `status`
  // (not OK). Replaces an earlier plan for the same kind of call; count 0 cancels it.
  void FailNextCommits(int count, Status status, std::optional<PipelineKey> only = std::nullopt);
  void FailNextReserves(int count, Status status, std::optional<PipelineKey> only = std::nullopt);

  // Every write from now on (any kind, probes included) fails with `status`, as a full disk
  // fails them, until StopFailingWrites.
  void FailAllWrites(Status status);
  void StopFailingWrites();

  // From now on, every write's completion (its callback, with its real result) is held back and
  // only called when this store is destroyed, after the inner store has flushed: a write that was
  // still queued when its owner shut down, completing as the store closes.
  void HoldCompletionsUntilClosed();
  int held_completions() const;

  // How many calls failed by injection so far.
  int injected_commit_failures() const;
  int injected_reserve_failures() const;

  MetadataStore& inner() { return *inner_; }

  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  void PutPipeline(const PipelineRecord& record, Done done) override;
  void PutProgress(const PipelineKey& key, const PipelineProgress& progress, Done done) override;
  void ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) override;
  void CommitCheckpoint(CheckpointCommit commit, Done done) override;
  void Probe(Done done) override;
  void DeletePipeline(const PipelineKey& key, Done done) override;
  void DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                         Done done) override;
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override {
    return inner_->LoadIdCounter(key);
  }
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id = 0) override;
  void Flush() override;
  Result<std::vector<StoredGroup>> LoadGroups() override { return inner_->LoadGroups(); }
  void PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) override;
  void DeleteGroup(const std::string& name, Done done) override;
  void ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) override;
  // Fails as a commit of its first member that FailNextCommits names.
  void CommitGroupRound(const GroupRoundCommit& commit, Done done) override;

 private:
  struct Plan {
    int remaining = 0;
    Status status;
    std::optional<PipelineKey> only;
    int injected = 0;
  };

  // If `plan` says this call fails, consumes one and returns the Status to report.
  std::optional<Status> Take(Plan& plan, const PipelineKey& key);
  // Reports `status` through the inner store's writer thread, in order.
  void FailInOrder(Status status, Done done);
  // `done`, or a callback that holds its result back if HoldCompletionsUntilClosed is on.
  Done MaybeHeld(Done done);

  const std::unique_ptr<MetadataStore> inner_;
  mutable std::mutex mu_;
  // The failure of every write, if FailAllWrites is on.
  std::optional<Status> AllWritesFail() const;

  Plan commits_;                      // guarded by mu_
  Plan reserves_;                     // guarded by mu_
  std::optional<Status> all_writes_;  // guarded by mu_
  bool hold_completions_ = false;     // guarded by mu_
  // Shared with the held callbacks, which run on the inner store's writer thread.
  struct Held {
    std::mutex mu;
    std::vector<std::pair<Done, Status>> completions;  // guarded by mu
    bool closed = false;  // guarded by mu: the store is closing; completions are no longer held
  };
  const std::shared_ptr<Held> held_ = std::make_shared<Held>();
};

}  // namespace ckpt
