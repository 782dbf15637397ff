#pragma once
// BenchAdminBackend: the AdminBackend the web view needs, over a benchmark's own runners and
// store, so that a benchmark can load the web view's pages beside its pipelines. What the pages
// never call (creating, restoring, deleting pipelines) is refused.
//
// Threading: the runners are fixed before the first call and only read afterwards. ListCompleted
// calls the store on the caller's thread, a strand: only for stores that answer at once without
// blocking (MemoryStore), unlike the daemon's backend, which reads on its blocking pool.

#include <map>
#include <memory>
#include <vector>

#include "api/admin_backend.h"

namespace ckpt::bench {

class BenchAdminBackend final : public AdminBackend {
 public:
  BenchAdminBackend(std::vector<std::shared_ptr<PipelineRunner>> runners, MetadataStore& store,
                    DaemonMetrics& metrics)
      : runners_(std::move(runners)), store_(store), metrics_(metrics) {
    for (const auto& r : runners_) by_key_[r->key()] = r;
  }

  std::shared_ptr<PipelineRunner> FindPipeline(const PipelineKey& key) const override {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }
  std::vector<std::shared_ptr<PipelineRunner>> AllPipelines() const override { return runners_; }
  PipelineDefaults pipeline_defaults() const override { return {}; }
  void CreatePipeline(const PipelineSpec&, std::optional<CheckpointRef>, CreateDone done) override {
    done(Status::FailedPrecondition("not in a benchmark"));
  }
  void RestorePipeline(std::shared_ptr<PipelineRunner>, CheckpointRef,
                       PipelineRunner::StatusDone done) override {
    done(Status::FailedPrecondition("not in a benchmark"), PipelineStatus{});
  }
  void DeletePipeline(std::shared_ptr<PipelineRunner>, std::function<void(Status)> done) override {
    done(Status::FailedPrecondition("not in a benchmark"));
  }
  void ListCompleted(const PipelineKey& key, int limit, int64_t before_id, ListDone done) override {
    done(store_.ListCompleted(key, limit, before_id));
  }
  AlignmentGroups& groups() override { return groups_; }
  DaemonMetrics& metrics() override { return metrics_; }
  Facts facts() const override { return Facts{}; }

 private:
  const std::vector<std::shared_ptr<PipelineRunner>> runners_;
  std::map<PipelineKey, std::shared_ptr<PipelineRunner>> by_key_;
  MetadataStore& store_;
  DaemonMetrics& metrics_;
  AlignmentGroups groups_{store_};
};

}  // namespace ckpt::bench
