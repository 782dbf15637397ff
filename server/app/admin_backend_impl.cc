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

void DaemonAdminBackend::CreatePipeline(const PipelineSpec& spec,
                                        std::optional<CheckpointRef> restore_from,
                                        CreateDone done) {
  // Creating reads the id counter from the store (and the checkpoint to restore from).
  boost::asio::post(host_.blocking_pool(),
                    [this, spec, restore_from, done = std::move(done)]() mutable {
                      std::optional<std::pair<CheckpointRef, CompletedCheckpoint>> source;
                      if (restore_from) {
                        auto pinned = host_.PinRestoreSource(*restore_from, spec.key);
                        if (!pinned.ok()) return done(pinned.status());
                        source = std::move(*pinned);
                      }
                      host_.Create(spec, std::move(done), /*from_config=*/false, std::move(source));
                    });
}

void DaemonAdminBackend::RestorePipeline(std::shared_ptr<PipelineRunner> target, CheckpointRef from,
                                         PipelineRunner::StatusDone done) {
  boost::asio::post(host_.blocking_pool(),
                    [this, target = std::move(target), from, done = std::move(done)]() mutable {
                      host_.Restore(target, std::move(from), std::move(done));
                    });
}

void DaemonAdminBackend::DeletePipeline(std::shared_ptr<PipelineRunner> runner,
                                        std::function<void(Status)> done) {
  host_.Delete(std::move(runner), std::move(done));
}

void DaemonAdminBackend::ListCompleted(const PipelineKey& key, int limit, int64_t before_id,
                                       ListDone done) {
  boost::asio::post(host_.blocking_pool(), [this, key, limit, before_id, done = std::move(done)] {
    done(store_.ListCompleted(key, limit, before_id));
  });
}

}  // namespace ckpt
