#pragma once
// GroupCommitStore: a MetadataStore over any StoreBackend (store_backend.h). It owns what every
// backend would otherwise write again: the write queue, group commit (everything queued while a
// batch is applied goes into the next one), pacing, the writer thread, completion callbacks in
// call order, Flush, and the failure policy around a batch's outcome.
//
// Threading contract:
// - Any thread may call any method (as MetadataStore says). Writes only enqueue: the queue is
//   guarded by `mu_`, and ONE writer thread (owned by this object, started by the constructor,
//   joined by the destructor) takes everything queued, hands it to the backend as one batch, and
//   then runs the `done` callbacks in call order on the writer thread, outside `mu_` (so a
//   callback may enqueue the next write without deadlocking).
// - Reads go straight to the backend, which answers them beside a batch in progress.
// - Flush must not be called from a `done` callback (the writer thread would wait for itself).
//
// Failure policy (docs/DESIGN.md "Failure and restart"):
// - kCommitted: each op gets its own status.
// - kNotWritten: every op of the batch gets the backend's error; the store goes on.
// - kStop (an unknown outcome, or damaged data): the batch is answered neither way; `on_fatal`
//   runs (default: log and exit at once, 65 for DATA_LOSS, else 75: fail-stop; systemd restarts
//   the daemon, which reloads what actually is durable), and every later write fails with that
//   status without reaching the backend. DATA_LOSS met by a read stops the store the same way.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "store/metadata_store.h"
#include "store/pacing_clock.h"
#include "store/store_backend.h"
#include "store/write_op.h"

namespace ckpt {

struct GroupCommitOptions {
  // Called once, when a batch's outcome is unknown or the data is found damaged (see the failure
  // policy above), on the writer thread or on a reader's. The default logs at critical level and
  // exits the process at once (65 for DATA_LOSS, else 75). If it returns, the store stays up for
  // reads but fails every later write.
  std::function<void(const Status&)> on_fatal;
  // Pacing: a batch begins no sooner than this after the previous one began. Under a steady
  // stream of small writes (thousands of pipelines checkpointing at staggered times) the writer
  // would otherwise commit, and fsync, every few writes, paying a transaction's fixed cost each
  // time; pacing gathers them, at the price of at most this much latency. A writer idle for
  // longer starts at once, and shutdown does not wait. 0: no pacing.
  std::chrono::microseconds min_batch_spacing{std::chrono::milliseconds(2)};
  // The clock pacing is measured by; null: the steady clock. Must outlive the store.
  PacingClock* clock = nullptr;
  // The writer thread's name (at most 15 characters).
  std::string thread_name = "ckpt-store";
  // The nice value the writer thread lowers itself to (LowerCallingThreadNice: never raised);
  // 0 leaves the one it inherits. Every durable completion of every pipeline passes this one
  // thread, which works in short bursts between commits: on a machine whose cores are all busy
  // it waits for a core after each wake-up, and while it waits every commit queues behind it.
  // A lower value lets it run first. Not allowed (no CAP_SYS_NICE, an RLIMIT_NICE short of it):
  // one warning, and it runs as it is. The `done` callbacks run on it, at this priority: they
  // must stay short and start no threads.
  int writer_nice = 0;
};

class GroupCommitStore : public MetadataStore {
 public:
  GroupCommitStore(std::unique_ptr<StoreBackend> backend, GroupCommitOptions options);
  // Applies everything queued (and runs its callbacks), stops and joins the writer thread, then
  // closes the backend.
  ~GroupCommitStore() override;
  GroupCommitStore(const GroupCommitStore&) = delete;
  GroupCommitStore& operator=(const GroupCommitStore&) = delete;

  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  void PutPipeline(const PipelineRecord& record, Done done) override;
  void PutProgress(const PipelineKey& key, const PipelineProgress& progress, Done done) override;
  void ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) override;
  void CommitCheckpoint(CheckpointCommit commit, Done done) override;
  void Probe(Done done) override;
  void DeletePipeline(const PipelineKey& key, Done done) override;
  void DeleteUnreadablePipeline(const PipelineKey& key, Done done) override;
  std::vector<UnreadableRecord> UnreadableRecords() override;
  void DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                         Done done) override;
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id = 0) override;
  void Flush() override;
  Result<std::vector<StoredGroup>> LoadGroups() override;
  void PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) override;
  void DeleteGroup(const std::string& name, Done done) override;
  void ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) override;
  void CommitGroupRound(const GroupRoundCommit& commit, Done done) override;

  // The backend's name, for messages.
  const std::string& path() const { return backend_->name(); }

  // Metrics and tests. Batches the backend committed; ops that got OK; ops that got an error.
  uint64_t batches_committed() const { return batches_committed_.load(std::memory_order_relaxed); }
  uint64_t ops_committed() const { return ops_committed_.load(std::memory_order_relaxed); }
  uint64_t ops_failed() const { return ops_failed_.load(std::memory_order_relaxed); }

  // Optional. Called on the writer thread once per committed batch with the time the backend
  // took to apply it (fsync included), in microseconds. Set it before the first write: the writer
  // thread reads it without a lock (the queue mutex orders the assignment before that read).
  std::function<void(int64_t micros)> on_commit_latency;

 private:
  struct Pending {
    WriteOp op;
    Done done;
  };

  void Enqueue(WriteOp op, Done done) CKPT_EXCLUDES(mu_);
  void WriterLoop();
  void RunBatch(std::vector<Pending>& batch);
  // Any thread, once: on_fatal, or log and exit (see the failure policy).
  void Fatal(const Status& why);
  // A read's result; DATA_LOSS also stops the store (Fatal).
  template <typename T>
  Result<T> CheckRead(Result<T> result);
  // Runs the callbacks in call order and counts the outcomes.
  void Finish(std::vector<Pending>& batch, const std::vector<Status>& results);

  const std::unique_ptr<StoreBackend> backend_;
  const GroupCommitOptions options_;
  SteadyPacingClock steady_clock_;
  PacingClock& clock_;

  bool broken_ = false;   // writer thread only: the store stopped (kStop)
  Status broken_status_;  // writer thread only

  Mutex mu_;
  CondVar work_cv_;     // writer waits for work or stop
  CondVar flushed_cv_;  // Flush waits for finished_
  std::vector<Pending> queue_ CKPT_GUARDED_BY(mu_);
  uint64_t enqueued_ CKPT_GUARDED_BY(mu_) = 0;  // ops ever queued
  uint64_t finished_ CKPT_GUARDED_BY(mu_) = 0;  // ops whose done ran (or never will)
  bool stopping_ CKPT_GUARDED_BY(mu_) = false;
  bool writer_idle_ CKPT_GUARDED_BY(mu_) = false;  // the writer waits for work (not pacing)
  bool writer_exited_ CKPT_GUARDED_BY(mu_) = false;

  std::atomic<bool> fatal_reported_{false};
  std::atomic<uint64_t> batches_committed_{0};
  std::atomic<uint64_t> ops_committed_{0};
  std::atomic<uint64_t> ops_failed_{0};

  std::thread writer_thread_;  // last: started after everything above exists
};

}  // namespace ckpt
