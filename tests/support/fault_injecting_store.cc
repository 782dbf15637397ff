#include "support/fault_injecting_store.h"

#include <utility>

namespace ckpt {

FaultInjectingStore::FaultInjectingStore(std::unique_ptr<MetadataStore> inner)
    : inner_(std::move(inner)) {}

FaultInjectingStore::~FaultInjectingStore() {
  inner_->Flush();
  std::vector<std::pair<Done, Status>> held;
  {
    // From now on a completion is called as it comes (the inner store's close may still finish
    // writes), so that every callback runs exactly once.
    std::lock_guard lock(held_->mu);
    held_->closed = true;
    held.swap(held_->completions);
  }
  for (auto& [done, status] : held) done(status);
}

void FaultInjectingStore::HoldCompletionsUntilClosed() {
  std::lock_guard lock(mu_);
  hold_completions_ = true;
}

int FaultInjectingStore::held_completions() const {
  std::lock_guard lock(held_->mu);
  return static_cast<int>(held_->completions.size());
}

MetadataStore::Done FaultInjectingStore::MaybeHeld(Done done) {
  {
    std::lock_guard lock(mu_);
    if (!hold_completions_ || !done) return done;
  }
  return [held = held_, done = std::move(done)](Status status) mutable {
    {
      std::lock_guard lock(held->mu);
      if (!held->closed) {
        held->completions.emplace_back(std::move(done), std::move(status));
        return;
      }
    }
    done(std::move(status));
  };
}

void FaultInjectingStore::FailNextCommits(int count, Status status,
                                          std::optional<PipelineKey> only) {
  std::lock_guard lock(mu_);
  commits_.remaining = count;
  commits_.status = std::move(status);
  commits_.only = std::move(only);
}

void FaultInjectingStore::FailNextReserves(int count, Status status,
                                           std::optional<PipelineKey> only) {
  std::lock_guard lock(mu_);
  reserves_.remaining = count;
  reserves_.status = std::move(status);
  reserves_.only = std::move(only);
}

void FaultInjectingStore::FailAllWrites(Status status) {
  std::lock_guard lock(mu_);
  all_writes_ = status.ok() ? Status::Unavailable("injected: disk full") : std::move(status);
}

void FaultInjectingStore::StopFailingWrites() {
  std::lock_guard lock(mu_);
  all_writes_.reset();
}

std::optional<Status> FaultInjectingStore::AllWritesFail() const {
  std::lock_guard lock(mu_);
  return all_writes_;
}

int FaultInjectingStore::injected_commit_failures() const {
  std::lock_guard lock(mu_);
  return commits_.injected;
}

int FaultInjectingStore::injected_reserve_failures() const {
  std::lock_guard lock(mu_);
  return reserves_.injected;
}

std::optional<Status> FaultInjectingStore::Take(Plan& plan, const PipelineKey& key) {
  std::lock_guard lock(mu_);
  if (plan.remaining <= 0 || (plan.only && *plan.only != key)) return std::nullopt;
  --plan.remaining;
  ++plan.injected;
  // An OK status would report success for a write that did not happen.
  if (plan.status.ok()) return Status::Internal("injected failure");
  return plan.status;
}

void FaultInjectingStore::FailInOrder(Status status, Done done) {
  inner_->Probe([status = std::move(status), done = std::move(done)](Status) {
    if (done) done(status);
  });
}

Result<std::vector<StoredPipeline>> FaultInjectingStore::LoadPipelines() {
  return inner_->LoadPipelines();
}

void FaultInjectingStore::PutPipeline(const PipelineRecord& record, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->PutPipeline(record, std::move(done));
}

void FaultInjectingStore::ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  if (auto failure = Take(reserves_, key)) {
    return FailInOrder(std::move(*failure), std::move(done));
  }
  inner_->ReserveIds(key, new_counter, std::move(done));
}

void FaultInjectingStore::PutProgress(const PipelineKey& key, const PipelineProgress& progress,
                                      Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->PutProgress(key, progress, std::move(done));
}

void FaultInjectingStore::CommitCheckpoint(CheckpointCommit commit, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  if (auto failure = Take(commits_, commit.key)) {
    return FailInOrder(std::move(*failure), std::move(done));
  }
  inner_->CommitCheckpoint(std::move(commit), std::move(done));
}

void FaultInjectingStore::Probe(Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->Probe(std::move(done));
}

void FaultInjectingStore::DeletePipeline(const PipelineKey& key, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->DeletePipeline(key, std::move(done));
}

void FaultInjectingStore::DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                                            Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->DeleteCheckpoints(key, ids, std::move(done));
}

Result<std::vector<CompletedCheckpoint>> FaultInjectingStore::ListCompleted(const PipelineKey& key,
                                                                            int limit,
                                                                            int64_t before_id) {
  return inner_->ListCompleted(key, limit, before_id);
}

void FaultInjectingStore::Flush() { inner_->Flush(); }

void FaultInjectingStore::PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->PutGroup(spec, from_config, std::move(done));
}

void FaultInjectingStore::DeleteGroup(const std::string& name, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->DeleteGroup(name, std::move(done));
}

void FaultInjectingStore::ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  inner_->ReserveGroupIds(name, new_counter, std::move(done));
}

void FaultInjectingStore::CommitGroupRound(const GroupRoundCommit& commit, Done done) {
  done = MaybeHeld(std::move(done));
  if (auto failure = AllWritesFail()) return FailInOrder(std::move(*failure), std::move(done));
  for (const CheckpointCommit& member : commit.members) {
    if (auto failure = Take(commits_, member.key)) {
      return FailInOrder(std::move(*failure), std::move(done));
    }
  }
  inner_->CommitGroupRound(commit, std::move(done));
}

}  // namespace ckpt
