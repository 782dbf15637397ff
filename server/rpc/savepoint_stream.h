#pragma once
// SavepointStream: one TriggerSavepoint call. It observes the savepoint of every pipeline it asked
// and streams the combined progress; the last message is final, then the stream ends OK. A call
// for one pipeline whose savepoint is refused at limits.max_savepoints_per_pipeline ends
// RESOURCE_EXHAUSTED instead.
//
// Threading: OnSavepointUpdate runs on each pipeline's strand (several at once for a job-wide
// savepoint); gRPC reactions on gRPC's threads; End from the daemon's controlling thread. All
// state is guarded by mu_. Nothing blocks: progress is coalesced, at most one write outstanding.
// Lifetime: owns itself (self_) until OnDone; runners hold it as an observer until its final
// update, or until the call is gone (cancelled, the caller went away): then `on_done` tells them
// to let go, so that a cancelled call frees what it held at once instead of at its timeout.
// Calls after OnDone are no-ops.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include "ckpt/v1/admin.grpc.pb.h"
#include "common/mutex.h"
#include "common/status.h"
#include "runtime/savepoint_observer.h"

namespace ckpt {

class SavepointStream final : public grpc::ServerWriteReactor<v1::SavepointProgress>,
                              public SavepointObserver,
                              public std::enable_shared_from_this<SavepointStream> {
 public:
  // `pipeline_ids`: every pipeline whose savepoint this stream waits for.
  // `on_done` runs once, on a gRPC thread, when the call is over (final message written, failed,
  // or cancelled); it must not block.
  static std::shared_ptr<SavepointStream> Create(const std::string& job_id,
                                                 const std::vector<std::string>& pipeline_ids,
                                                 std::function<void(SavepointStream*)> on_done);
  grpc::ServerWriteReactor<v1::SavepointProgress>* reactor() { return this; }

  void OnSavepointUpdate(const SavepointUpdate& update) override;
  // Ends the call now with `status` (daemon shutdown), unless its final message is already out.
  void End(const Status& status);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  SavepointStream(const std::string& job_id, const std::vector<std::string>& pipeline_ids,
                  std::function<void(SavepointStream*)> on_done);
  void BuildLocked(v1::SavepointProgress* out) const CKPT_REQUIRES(mu_);
  void MaybeWriteLocked() CKPT_REQUIRES(mu_);
  bool AllFinalLocked() const CKPT_REQUIRES(mu_);
  // The one place the call is finished: at most once, whoever asks first (the final message
  // written, a failed write, End, a cancel).
  void FinishOnceLocked(const grpc::Status& status) CKPT_REQUIRES(mu_);

  const std::string job_id_;
  const std::function<void(SavepointStream*)> on_done_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  Mutex mu_;
  std::map<std::string, SavepointUpdate> by_pipeline_ CKPT_GUARDED_BY(mu_);
  v1::SavepointProgress in_flight_ CKPT_GUARDED_BY(mu_);  // valid until OnWriteDone
  bool writing_ CKPT_GUARDED_BY(mu_) = false;
  bool dirty_ CKPT_GUARDED_BY(mu_) = true;  // state not yet written
  bool final_written_ CKPT_GUARDED_BY(mu_) = false;
  bool finished_ CKPT_GUARDED_BY(mu_) = false;  // Finish called
  bool done_ CKPT_GUARDED_BY(mu_) = false;
  std::shared_ptr<SavepointStream> self_;  // released in OnDone
};

}  // namespace ckpt
