// Verified restore's store read (docs/PROTOCOL.md, "Verified restore"): the checkpoint a fallback
// moves the restore point to is read off the strand, and its answer goes back to it.
#include <boost/asio/steady_timer.hpp>

#include "runtime/blocking_work.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

void PipelineRunner::ReadRestoreCandidateOffStrand(int64_t failed_id, int64_t checkpoint_id) {
  auto read = [self = shared_from_this(), failed_id, checkpoint_id] {
    MetadataStore& store = self->context_->store;
    // The unrestorable mark was handed to the store before this read: once it is durable, a
    // restart cannot offer the failed checkpoint again.
    store.Flush();
    auto listed = store.ListCompleted(self->key(), 1, checkpoint_id + 1);
    self->PostStoreCompletion(
        [failed_id, checkpoint_id, listed = std::move(listed)](PipelineRunner& r) mutable {
          if (r.deleted_) return;
          if (!listed.ok()) {
            return r.RetryRestoreCandidate(failed_id, checkpoint_id, listed.status().ToString());
          }
          std::optional<CompletedCheckpoint> found;
          if (!listed->empty() && listed->front().checkpoint_id == checkpoint_id) {
            found = std::move(listed->front());
          }
          r.Run(r.coordinator_.OnRestoreCandidate(failed_id, checkpoint_id, std::move(found)));
        });
  };
  if (!context_->store_reads) {
    read();  // tests and benchmarks without a host only (RunnerContext::store_reads)
  } else if (!context_->store_reads->Post(read)) {
    RetryRestoreCandidate(failed_id, checkpoint_id, "the daemon's store reads are all busy");
  }
}

void PipelineRunner::RetryRestoreCandidate(int64_t failed_id, int64_t checkpoint_id,
                                           const std::string& why) {
  if (!coordinator_.AwaitsRestoreCandidate(failed_id)) return;
  LogLine(LogLevel::kWarn, "reading checkpoint " + std::to_string(checkpoint_id) +
                               " for the fallback failed (" + why + "); trying again in 1 s");
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, std::chrono::seconds(1));
  timer->async_wait([self = shared_from_this(), timer, failed_id,
                     checkpoint_id](const boost::system::error_code& ec) {
    if (ec || self->deleted_ || !self->coordinator_.AwaitsRestoreCandidate(failed_id)) return;
    self->ReadRestoreCandidateOffStrand(failed_id, checkpoint_id);
  });
}

}  // namespace ckpt
