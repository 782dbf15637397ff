#include "app/admin_backend_impl.h"

#include <boost/asio/post.hpp>

namespace ckpt {

std::shared_ptr<PipelineRunner> DaemonAdminBackend::FindPipeline(const PipelineKey& key) const {
  return host_.registry().Find(key);
}

std::vector<std::shared_ptr<PipelineRunner>> DaemonAdminBackend::AllPipelines() const {
  return host_.registry().All();
}

PipelineDefaults DaemonAdminBackend::pipeline_defaults() const { return host_.defaults(); }

namespace {

// A queue of blocking work was full: counted, and said with its bound.
Status Busy(const char* what, const BlockingWork& work, DaemonMetrics& metrics) {
  metrics.CountLimit(CountedLimit::kOperatorQueue);
  return Status::ResourceExhausted(std::string("the daemon's ") + what + " queue is full (" +
                                   std::to_string(work.max_waiting()) +
                                   " waiting); try again shortly");
}

}  // namespace

void DaemonAdminBackend::CreatePipeline(const PipelineSpec& spec,
                                        std::optional<CheckpointRef> restore_from,
                                        CreateDone done) {
  // Creating reads the id counter from the store (and the checkpoint to restore from). The pin
  // of a restore source is taken on the source's strand without waiting there: what follows
  // it goes back to the write work.
  auto shared_done = std::make_shared<CreateDone>(std::move(done));
  const bool queued = host_.writes().Post([this, spec, restore_from, shared_done] {
    if (!restore_from) return host_.Create(spec, std::move(*shared_done), false);
    host_.PinRestoreSourceAsync(
        *restore_from, spec.key,
        [this, spec, shared_done](Result<std::pair<CheckpointRef, CompletedCheckpoint>> pinned) {
          if (!pinned.ok()) return (*shared_done)(pinned.status());
          auto source =
              std::make_shared<std::pair<CheckpointRef, CompletedCheckpoint>>(std::move(*pinned));
          if (!host_.writes().Post([this, spec, shared_done, source] {
                host_.Create(spec, std::move(*shared_done), false, std::move(*source));
              })) {
            host_.UnpinRestoreSource(source->first, spec.key);
            (*shared_done)(Busy("create", host_.writes(), metrics_));
          }
        });
  });
  if (!queued) (*shared_done)(Busy("create", host_.writes(), metrics_));
}

void DaemonAdminBackend::RestorePipeline(std::shared_ptr<PipelineRunner> target, CheckpointRef from,
                                         PipelineRunner::StatusDone done) {
  auto shared_done = std::make_shared<PipelineRunner::StatusDone>(std::move(done));
  const bool queued = host_.writes().Post([this, target = std::move(target), from, shared_done] {
    host_.Restore(target, from, std::move(*shared_done));
  });
  if (!queued) (*shared_done)(Busy("restore", host_.writes(), metrics_), {});
}

void DaemonAdminBackend::DeletePipeline(std::shared_ptr<PipelineRunner> runner,
                                        std::function<void(Status)> done) {
  host_.Delete(std::move(runner), std::move(done));
}

void DaemonAdminBackend::ListCompleted(const PipelineKey& key, int limit, int64_t before_id,
                                       ListDone done) {
  auto shared_done = std::make_shared<ListDone>(std::move(done));
  const bool queued = host_.reads().Post([this, key, limit, before_id, shared_done] {
    (*shared_done)(store_.ListCompleted(key, limit, before_id));
  });
  if (!queued) (*shared_done)(Busy("read", host_.reads(), metrics_));
}

}  // namespace ckpt
