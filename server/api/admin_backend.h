#pragma once
// AdminBackend: what the operator API (AdminServiceImpl) needs of the daemon, and nothing more.
// The composition root (app/) implements it over the pipelines and the store, so that rpc/ never
// sees how the daemon is assembled.
//
// Threading: every method is safe from any thread (gRPC's, a strand's) and returns at once; work
// that blocks (store reads) is done elsewhere and answered through `done`, which runs on another
// thread and must not block.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "ha/leadership.h"
#include "runtime/alignment_groups.h"
#include "runtime/daemon_metrics.h"
#include "runtime/pipeline_runner.h"

namespace ckpt {

class AdminBackend {
 public:
  using CreateDone = std::function<void(Result<std::shared_ptr<PipelineRunner>>)>;
  using ListDone = std::function<void(Result<std::vector<CompletedCheckpoint>>)>;

  // What GetDaemonStatus reports beside the metrics.
  struct Facts {
    int64_t uptime_ms = 0;
    size_t pipelines = 0;
    size_t io_threads = 0;
    std::string data_dir;
    Leadership::View leadership;  // role, leader address, epoch
  };

  virtual ~AdminBackend() = default;

  // Null when there is no such pipeline.
  virtual std::shared_ptr<PipelineRunner> FindPipeline(const PipelineKey& key) const = 0;
  virtual std::vector<std::shared_ptr<PipelineRunner>> AllPipelines() const = 0;
  // The pipelines whose stored records could not be read (runtime/quarantine.h): listed with
  // state UNREADABLE, refused for everything but Get, List and Delete.
  // None by default (a backend over runners alone).
  virtual std::optional<UnreadableRecord> FindUnreadable(const PipelineKey& key) const {
    return std::nullopt;
  }
  virtual std::vector<UnreadableRecord> AllUnreadable() const { return {}; }
  // Removes one (PipelineHost::DeleteUnreadable); `done` once durable.
  virtual void DeleteUnreadable(const PipelineKey& key, std::function<void(Status)> done) {
    done(Status::NotFound("no pipeline " + key.ToString()));
  }
  // The same for alignment groups: a quarantined group refuses every call but its delete, which
  // lets its members load (PipelineHost::DeleteUnreadableGroup).
  virtual std::optional<UnreadableRecord> FindUnreadableGroup(const std::string& name) const {
    return std::nullopt;
  }
  virtual void DeleteUnreadableGroup(const std::string& name, std::function<void(Status)> done) {
    done(Status::NotFound("no alignment group " + name));
  }
  // The defaults a create request's unset fields take.
  virtual PipelineDefaults pipeline_defaults() const = 0;
  // Validates, stores and starts a pipeline; with `restore_from`, its workers restore from that
  // checkpoint of another pipeline until its first completion (NOT_FOUND when it is not there).
  virtual void CreatePipeline(const PipelineSpec& spec, std::optional<CheckpointRef> restore_from,
                              CreateDone done) = 0;
  // RestorePipeline (PipelineHost::Restore).
  virtual void RestorePipeline(std::shared_ptr<PipelineRunner> target, CheckpointRef from,
                               PipelineRunner::StatusDone done) = 0;
  // Stops the pipeline and deletes its record and history; `done` once that is durable.
  virtual void DeletePipeline(std::shared_ptr<PipelineRunner> runner,
                              std::function<void(Status)> done) = 0;
  // The store's completed checkpoints of a pipeline, newest first (MetadataStore::ListCompleted).
  virtual void ListCompleted(const PipelineKey& key, int limit, int64_t before_id,
                             ListDone done) = 0;
  // The alignment groups (PutAlignmentGroup and the rest).
  virtual AlignmentGroups& groups() = 0;
  virtual DaemonMetrics& metrics() = 0;
  virtual Facts facts() const = 0;
};

}  // namespace ckpt
