// Verified restore's store read (docs/PROTOCOL.md, "Verified restore"): the checkpoint a fallback
// moves the restore point to is read off the strand, and its answer goes back to it.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>

#include "runtime/blocking_work.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

namespace {

// Whether a failed read may succeed later (the store is down or busy); any other error (a row
// that does not read) will not go away by itself.
bool WorthRetrying(const Status& error) {
  switch (error.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kAborted: return true;
    default: return false;
  }
}

}  // namespace

void PipelineRunner::ReadRestoreCandidateOffStrand(int64_t failed_id, int64_t checkpoint_id,
                                                   int attempt) {
  auto read = [self = shared_from_this(), failed_id, checkpoint_id, attempt] {
    MetadataStore& store = self->context_->store;
    // The unrestorable mark was handed to the store before this read (the coordinator persists
    // before it asks): once it is durable, a restart cannot offer the failed checkpoint again.
    store.Flush();
    auto listed = store.ListCompleted(self->key(), 1, checkpoint_id + 1);
    self->PostStoreCompletion(
        [failed_id, checkpoint_id, attempt, listed = std::move(listed)](PipelineRunner& r) mutable {
          if (r.deleted_) return;
          std::optional<CompletedCheckpoint> found;
          if (!listed.ok()) {
            if (WorthRetrying(listed.status())) {
              return r.RetryRestoreCandidate(failed_id, checkpoint_id, attempt,
                                             listed.status().ToString());
            }
            r.LogLine(LogLevel::kWarn, "checkpoint " + std::to_string(checkpoint_id) +
                                           " cannot be read for the fallback (" +
                                           listed.status().ToString() + "); passed over");
          } else if (!listed->empty() && listed->front().checkpoint_id == checkpoint_id) {
            found = std::move(listed->front());
          }
          r.Run(r.coordinator_.OnRestoreCandidate(failed_id, checkpoint_id, std::move(found)));
        });
  };
  if (!context_->store_reads) {
    read();  // tests and benchmarks without a host only (RunnerContext::store_reads)
  } else if (!context_->store_reads->Post(read)) {
    RetryRestoreCandidate(failed_id, checkpoint_id, attempt,
                          "the daemon's store reads are all busy");
  }
}

void PipelineRunner::RetryRestoreCandidate(int64_t failed_id, int64_t checkpoint_id, int attempt,
                                           const std::string& why) {
  if (!coordinator_.AwaitsRestoreCandidate(failed_id)) return;
  // 1 s, doubling up to 30 s: a store down for long costs a line every 30 s, not every second.
  const auto delay = std::chrono::seconds(std::min(30, 1 << std::min(attempt, 5)));
  LogLine(LogLevel::kWarn, "reading checkpoint " + std::to_string(checkpoint_id) +
                               " for the fallback failed (" + why + "); trying again in " +
                               std::to_string(delay.count()) + " s");
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, delay);
  timer->async_wait([self = shared_from_this(), timer, failed_id, checkpoint_id,
                     attempt](const boost::system::error_code& ec) {
    if (ec || self->deleted_ || !self->coordinator_.AwaitsRestoreCandidate(failed_id)) return;
    self->ReadRestoreCandidateOffStrand(failed_id, checkpoint_id, attempt + 1);
  });
}

}  // namespace ckpt
