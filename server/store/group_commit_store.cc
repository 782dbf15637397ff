#include "store/group_commit_store.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>
#include <utility>

#include "common/exit_codes.h"
#include "common/thread_priority.h"

namespace ckpt {

GroupCommitStore::GroupCommitStore(std::unique_ptr<StoreBackend> backend,
                                   GroupCommitOptions options)
    : backend_(std::move(backend)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : steady_clock_) {
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

GroupCommitStore::~GroupCommitStore() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.NotifyOne();
  if (writer_thread_.joinable()) writer_thread_.join();
  // backend_ closes as the members are destroyed; no thread is left.
}

void GroupCommitStore::Enqueue(WriteOp op, Done done) {
  {
    MutexLock lock(mu_);
    // Accepted while stopping too: a callback run during the final drain may enqueue a follow-up
    // write, and the writer keeps going until the queue is empty.
    if (!writer_exited_) {
      queue_.push_back(Pending{std::move(op), std::move(done)});
      ++enqueued_;
      // Only while the writer waits idle: pacing or running a batch, it looks at the queue under
      // mu_ before it waits again, and a wake-up per write would cost what pacing saves.
      if (writer_idle_) work_cv_.NotifyOne();
      return;
    }
  }
  spdlog::error("store {}: write after the store was closed; failing it", path());
  if (done) done(Status::Unavailable("store " + path() + " is closed"));
}

void GroupCommitStore::PutPipeline(const PipelineRecord& record, Done done) {
  Enqueue(PutPipelineOp{record}, std::move(done));
}

void GroupCommitStore::PutProgress(const PipelineKey& key, const PipelineProgress& progress,
                                   Done done) {
  Enqueue(PutProgressOp{key, progress}, std::move(done));
}

void GroupCommitStore::ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) {
  Enqueue(ReserveIdsOp{key, new_counter}, std::move(done));
}

void GroupCommitStore::CommitCheckpoint(CheckpointCommit commit, Done done) {
  Enqueue(CommitCheckpointOp{std::move(commit)}, std::move(done));
}

void GroupCommitStore::Probe(Done done) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  Enqueue(ProbeOp{now_ms}, std::move(done));
}

void GroupCommitStore::DeleteUnreadablePipeline(const PipelineKey& key, Done done) {
  Enqueue(DeletePipelineOp{key, /*unreadable=*/true}, std::move(done));
}

std::vector<UnreadableRecord> GroupCommitStore::UnreadableRecords() {
  return backend_->UnreadableRecords();
}

void GroupCommitStore::DeletePipeline(const PipelineKey& key, Done done) {
  Enqueue(DeletePipelineOp{key}, std::move(done));
}

void GroupCommitStore::DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                                         Done done) {
  Enqueue(DeleteCheckpointsOp{key, ids}, std::move(done));
}

void GroupCommitStore::Flush() {
  if (std::this_thread::get_id() == writer_thread_.get_id()) {
    // From a `done` callback: the writer would wait for itself forever.
    spdlog::error("store {}: Flush called from a store callback; not waiting", path());
    return;
  }
  MutexLock lock(mu_);
  const uint64_t target = enqueued_;
  flushed_cv_.Wait(lock,
                   [&]() CKPT_REQUIRES(mu_) { return finished_ >= target || writer_exited_; });
}

void GroupCommitStore::WriterLoop() {
  pthread_setname_np(pthread_self(), options_.thread_name.substr(0, 15).c_str());
  if (options_.writer_nice != 0) {
    if (Status s = LowerCallingThreadNice(options_.writer_nice); !s.ok()) {
      spdlog::warn(
          "store {}: the writer thread keeps its priority ({}); under a full CPU its commits "
          "wait longer. Allow it with CAP_SYS_NICE or systemd's LimitNICE={} (the packaged "
          "unit sets it), or set store.writer_nice: 0",
          path(), s.message(), options_.writer_nice);
    }
  }
  std::vector<Pending> batch;
  std::optional<PacingClock::TimePoint> last_begin;
  for (;;) {
    {
      MutexLock lock(mu_);
      writer_idle_ = true;
      work_cv_.Wait(lock, [&]() CKPT_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      writer_idle_ = false;
      if (queue_.empty()) {  // stopping, and everything is applied
        writer_exited_ = true;
        break;
      }
      if (last_begin && options_.min_batch_spacing.count() > 0) {
        // Pacing (GroupCommitOptions::min_batch_spacing); shutdown does not wait for it.
        clock_.WaitUntil(lock.native(), work_cv_.native(), *last_begin + options_.min_batch_spacing,
                         [&]() CKPT_REQUIRES(mu_) { return stopping_; });
      }
      batch.swap(queue_);
    }
    last_begin = clock_.Now();
    const size_t count = batch.size();
    RunBatch(batch);
    batch.clear();  // drop the callbacks' captures before Flush can return
    {
      MutexLock lock(mu_);
      finished_ += count;
    }
    flushed_cv_.NotifyAll();
  }
  flushed_cv_.NotifyAll();
}

void GroupCommitStore::RunBatch(std::vector<Pending>& batch) {
  if (broken_) return Finish(batch, std::vector<Status>(batch.size(), broken_status_));
  std::vector<WriteOp> ops;
  ops.reserve(batch.size());
  for (Pending& pending : batch) ops.push_back(std::move(pending.op));

  const auto start = std::chrono::steady_clock::now();
  BatchResult result = [&] {
    try {
      return backend_->ApplyBatch(ops);
    } catch (const std::exception& e) {
      // A backend that throws has left its state unknown: nothing of the batch can be promised.
      return BatchResult::Stop(
          Status::Unavailable(std::string("unexpected exception in a store write: ") + e.what()));
    }
  }();
  if (result.outcome == BatchResult::Outcome::kCommitted && result.results.size() != batch.size()) {
    result = BatchResult::Stop(
        Status::Internal("the store backend answered " + std::to_string(result.results.size()) +
                         " of " + std::to_string(batch.size()) + " writes of a committed batch"));
  }
  switch (result.outcome) {
    case BatchResult::Outcome::kCommitted: {
      const int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      batches_committed_.fetch_add(1, std::memory_order_relaxed);
      if (on_commit_latency) on_commit_latency(micros);
      return Finish(batch, result.results);
    }
    case BatchResult::Outcome::kNotWritten:
      return Finish(batch, std::vector<Status>(batch.size(), result.status));
    case BatchResult::Outcome::kStop:
      // The ops of this batch are counted neither committed nor failed: they never get an
      // answer, and nothing more is written.
      broken_ = true;
      broken_status_ = result.status;
      return Fatal(result.status);
  }
}

void GroupCommitStore::Fatal(const Status& why) {
  if (fatal_reported_.exchange(true)) return;
  if (options_.on_fatal) return options_.on_fatal(why);
  const bool damaged = why.code() == StatusCode::kDataLoss;
  spdlog::critical("store {}: {}", path(), why.ToString());
  spdlog::critical(damaged ? "stopping: the stored data is damaged; restore it from a backup or "
                             "move data_dir away (exit code 65, not restarted)"
                           : "stopping (fail-stop); the restart reads what is durable");
  spdlog::default_logger()->flush();
  // At once, without destructors: no other thread may tell a worker anything more.
  std::_Exit(damaged ? kExitDataLoss : kExitUnknownOutcome);
}

template <typename T>
Result<T> GroupCommitStore::CheckRead(Result<T> result) {
  if (!result.ok() && result.status().code() == StatusCode::kDataLoss) Fatal(result.status());
  return result;
}

void GroupCommitStore::Finish(std::vector<Pending>& batch, const std::vector<Status>& results) {
  uint64_t ok = 0;
  for (const Status& r : results) ok += r.ok() ? 1 : 0;
  // Counted before the callbacks, so that whoever a callback wakes sees the counts.
  ops_committed_.fetch_add(ok, std::memory_order_relaxed);
  ops_failed_.fetch_add(results.size() - ok, std::memory_order_relaxed);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].done) continue;
    // A throwing callback must not take the writer thread (and with it every pipeline) down.
    try {
      batch[i].done(results[i]);
    } catch (const std::exception& e) {
      spdlog::error("store: a write's completion callback threw: {}", e.what());
    } catch (...) {
      spdlog::error("store: a write's completion callback threw");
    }
  }
}

Result<std::vector<StoredPipeline>> GroupCommitStore::LoadPipelines() {
  // Not CheckRead: this runs at start, whose caller refuses to start on the error (exit 65).
  return backend_->LoadPipelines();
}

Result<std::vector<CompletedCheckpoint>> GroupCommitStore::ListCompleted(const PipelineKey& key,
                                                                         int limit,
                                                                         int64_t before_id) {
  return CheckRead(backend_->ListCompleted(key, limit, before_id));
}

Result<int64_t> GroupCommitStore::LoadIdCounter(const PipelineKey& key) {
  return CheckRead(backend_->LoadIdCounter(key));
}

Result<std::vector<StoredGroup>> GroupCommitStore::LoadGroups() {
  return CheckRead(backend_->LoadGroups());
}

void GroupCommitStore::PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) {
  Enqueue(PutGroupOp{spec, from_config}, std::move(done));
}

void GroupCommitStore::DeleteGroup(const std::string& name, Done done) {
  Enqueue(DeleteGroupOp{name}, std::move(done));
}

void GroupCommitStore::ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) {
  Enqueue(ReserveGroupIdsOp{name, new_counter}, std::move(done));
}

void GroupCommitStore::CommitGroupRound(const GroupRoundCommit& commit, Done done) {
  Enqueue(CommitGroupRoundOp{commit}, std::move(done));
}

}  // namespace ckpt
