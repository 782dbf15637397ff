#pragma once
// ForwardingStore: a MetadataStore that hands every call to another one. Test stores that hold
// back or watch one kind of call derive from it and override only that.
// Threading: as the inner store's (any thread).

#include <memory>

#include "store/metadata_store.h"

namespace ckpt::testing {

class ForwardingStore : public MetadataStore {
 public:
  explicit ForwardingStore(std::unique_ptr<MetadataStore> inner) : inner_(std::move(inner)) {}

  Result<std::vector<StoredPipeline>> LoadPipelines() override { return inner_->LoadPipelines(); }
  void PutPipeline(const PipelineRecord& record, Done done) override {
    inner_->PutPipeline(record, std::move(done));
  }
  void PutProgress(const PipelineKey& key, const PipelineProgress& progress, Done done) override {
    inner_->PutProgress(key, progress, std::move(done));
  }
  void ReserveIds(const PipelineKey& key, int64_t counter, Done done) override {
    inner_->ReserveIds(key, counter, std::move(done));
  }
  void CommitCheckpoint(CheckpointCommit commit, Done done) override {
    inner_->CommitCheckpoint(std::move(commit), std::move(done));
  }
  void Probe(Done done) override { inner_->Probe(std::move(done)); }
  void DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                         Done done) override {
    inner_->DeleteCheckpoints(key, ids, std::move(done));
  }
  void DeletePipeline(const PipelineKey& key, Done done) override {
    inner_->DeletePipeline(key, std::move(done));
  }
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override {
    return inner_->LoadIdCounter(key);
  }
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id = 0) override {
    return inner_->ListCompleted(key, limit, before_id);
  }
  void Flush() override { inner_->Flush(); }
  Result<std::vector<StoredGroup>> LoadGroups() override { return inner_->LoadGroups(); }
  void PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) override {
    inner_->PutGroup(spec, from_config, std::move(done));
  }
  void DeleteGroup(const std::string& name, Done done) override {
    inner_->DeleteGroup(name, std::move(done));
  }
  void ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) override {
    inner_->ReserveGroupIds(name, new_counter, std::move(done));
  }
  void CommitGroupRound(const GroupRoundCommit& commit, Done done) override {
    inner_->CommitGroupRound(commit, std::move(done));
  }

 protected:
  MetadataStore& inner() { return *inner_; }

 private:
  const std::unique_ptr<MetadataStore> inner_;
};

}  // namespace ckpt::testing
