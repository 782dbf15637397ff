#include "store/fault_injecting_store.h"

#include <utility>

namespace ckpt {

FaultInjectingStore::FaultInjectingStore(std::unique_ptr<MetadataStore> inner)
    : inner_(std::move(inner)) {}

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

void FaultInjectingStore::FailInOrder(const PipelineKey& key, Status status, Done done) {
  inner_->ReserveIds(key, 0, [status = std::move(status), done = std::move(done)](Status) {
    if (done) done(status);
  });
}

Result<std::vector<StoredPipeline>> FaultInjectingStore::LoadPipelines() {
  return inner_->LoadPipelines();
}

void FaultInjectingStore::PutPipeline(const PipelineRecord& record, Done done) {
  inner_->PutPipeline(record, std::move(done));
}

void FaultInjectingStore::ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) {
  if (auto failure = Take(reserves_, key)) {
    return FailInOrder(key, std::move(*failure), std::move(done));
  }
  inner_->ReserveIds(key, new_counter, std::move(done));
}

void FaultInjectingStore::CommitCheckpoint(const PipelineRecord& record_after,
                                           const CompletedCheckpoint& checkpoint, Done done) {
  if (auto failure = Take(commits_, record_after.spec.key)) {
    return FailInOrder(record_after.spec.key, std::move(*failure), std::move(done));
  }
  inner_->CommitCheckpoint(record_after, checkpoint, std::move(done));
}

void FaultInjectingStore::DeletePipeline(const PipelineKey& key, Done done) {
  inner_->DeletePipeline(key, std::move(done));
}

Result<std::vector<CompletedCheckpoint>> FaultInjectingStore::ListCompleted(const PipelineKey& key,
                                                                            int limit) {
  return inner_->ListCompleted(key, limit);
}

void FaultInjectingStore::Flush() { inner_->Flush(); }

}  // namespace ckpt
