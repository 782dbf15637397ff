#pragma once
// SavepointStream: one TriggerSavepoint call. It observes the savepoint of every pipeline it asked
// and streams the combined progress; the last message is final, then the stream ends OK.
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
#include <mutex>

#include "ckpt/v1/admin.grpc.pb.h"
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
  void BuildLocked(v1::SavepointProgress* out) const;
  void MaybeWriteLocked();
  bool AllFinalLocked() const;

  const std::string job_id_;
  const std::function<void(SavepointStream*)> on_done_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  std::mutex mu_;
  std::map<std::string, SavepointUpdate> by_pipeline_;  // guarded by mu_
  v1::SavepointProgress in_flight_;                     // guarded by mu_; valid until OnWriteDone
  bool writing_ = false;                                // guarded by mu_
  bool dirty_ = true;                                   // guarded by mu_: state not yet written
  bool final_written_ = false;                          // guarded by mu_
  bool finished_ = false;                               // guarded by mu_: Finish called
  bool done_ = false;                                   // guarded by mu_
  std::shared_ptr<SavepointStream> self_;               // released in OnDone
};

}  // namespace ckpt
