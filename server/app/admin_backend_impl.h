#pragma once
// DaemonAdminBackend: AdminBackend over the daemon's pipelines and store. Creates and store reads
// run on the host's blocking pool, never on the caller's (gRPC) thread.
// Threading: as AdminBackend; holds only references and a function.

#include <functional>

#include "api/admin_backend.h"
#include "runtime/pipeline_host.h"
#include "store/metadata_store.h"

namespace ckpt {

class DaemonAdminBackend final : public AdminBackend {
 public:
  // Everything passed must outlive the backend; `facts` is called from any thread.
  DaemonAdminBackend(PipelineHost& host, MetadataStore& store, DaemonMetrics& metrics,
                     std::function<Facts()> facts)
      : host_(host), store_(store), metrics_(metrics), facts_(std::move(facts)) {}

  std::shared_ptr<PipelineRunner> FindPipeline(const PipelineKey& key) const override;
  std::vector<std::shared_ptr<PipelineRunner>> AllPipelines() const override;
  std::optional<UnreadableRecord> FindUnreadable(const PipelineKey& key) const override {
    return host_.quarantine().Find(key);
  }
  std::vector<UnreadableRecord> AllUnreadable() const override {
    return host_.quarantine().Pipelines();
  }
  void DeleteUnreadable(const PipelineKey& key, std::function<void(Status)> done) override {
    host_.DeleteUnreadable(key, std::move(done));
  }
  std::optional<UnreadableRecord> FindUnreadableGroup(const std::string& name) const override {
    return host_.quarantine().FindGroup(name);
  }
  void DeleteUnreadableGroup(const std::string& name, std::function<void(Status)> done) override {
    host_.DeleteUnreadableGroup(name, std::move(done));
  }
  PipelineDefaults pipeline_defaults() const override;
  void CreatePipeline(const PipelineSpec& spec, std::optional<CheckpointRef> restore_from,
                      CreateDone done) override;
  void RestorePipeline(std::shared_ptr<PipelineRunner> target, CheckpointRef from,
                       PipelineRunner::StatusDone done) override;
  void DeletePipeline(std::shared_ptr<PipelineRunner> runner,
                      std::function<void(Status)> done) override;
  void ListCompleted(const PipelineKey& key, int limit, int64_t before_id, ListDone done) override;
  AlignmentGroups& groups() override { return host_.groups(); }
  DaemonMetrics& metrics() override { return metrics_; }
  Facts facts() const override { return facts_(); }

 private:
  PipelineHost& host_;
  MetadataStore& store_;
  DaemonMetrics& metrics_;
  const std::function<Facts()> facts_;
};

}  // namespace ckpt
