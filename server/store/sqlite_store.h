#pragma once
// SqliteStore: the embedded MetadataStore backend, one SQLite file `<data_dir>/ckptd.db` in WAL
// mode with synchronous=FULL (a COMMIT returns only after the WAL is fsynced).
//
// Threading contract:
// - Any thread may call any method (as MetadataStore says). Writes only enqueue: the queue is
//   guarded by `mu_`, and ONE writer thread (owned by this object, started by Open, joined by the
//   destructor) owns the writer connection and its cached statements. It takes everything queued,
//   applies it in call order inside one BEGIN IMMEDIATE ... COMMIT (group commit: one fsync for
//   everything that arrived meanwhile), each op in its own SAVEPOINT so that one bad op (a
//   duplicate checkpoint id) fails alone, and then runs the `done` callbacks in call order on the
//   writer thread, outside `mu_` (so a callback may enqueue the next write without deadlocking).
// - Reads (LoadPipelines, ListCompleted, LoadIdCounter) use a second, read-only connection guarded
//   by `read_mu_`. WAL lets it read the last committed state while the writer is mid-batch, so a
//   read never waits behind a group commit's fsync.
// - Flush must not be called from a `done` callback (the writer thread would wait for itself).
//
// Failure policy (DESIGN.md, "Failure and restart"):
// - An op that fails inside the batch (constraint, bad input) is rolled back to its savepoint and
//   gets its own error; the others commit.
// - If the transaction cannot start, or SQLite rolled it back by itself, or COMMIT fails cleanly
//   (busy/locked: the transaction is still open, so we roll it back and know nothing was written),
//   every op of the batch gets an error carrying the SQLite message.
// - If COMMIT fails any other way (an I/O error while writing or fsyncing the WAL), whether the
//   batch is durable is unknown: it may reappear after a crash. Such a batch is reported neither
//   way: its `done`s are never called, `on_fatal` runs (default: log and exit 75 at once, i.e.
//   fail-stop; systemd restarts the daemon, which reloads what actually is durable), and every
//   later write fails with UNAVAILABLE without touching the file.
// - Corruption (SQLITE_CORRUPT, SQLITE_NOTADB) met by any write or read stops the same way, with
//   a DATA_LOSS status (default: exit 65, which the unit does not restart on).
// - Errors are classified by sqlite::Classify: UNAVAILABLE means the environment refused the
//   write (disk full, read-only, I/O error): the store is failing, not the op.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/metadata_store.h"

namespace ckpt {

struct SqliteStoreOptions {
  // SQLite VFS name; empty = the platform default. Tests register a VFS that injects I/O errors.
  std::string vfs;
  // How long a statement waits for a lock held by another connection (another process opening the
  // same file, or our own read connection during a WAL checkpoint).
  int busy_timeout_ms = 5000;
  // Called once, when a COMMIT's outcome is unknown or the file is found damaged (see the failure
  // policy above), on the writer thread or on a reader's. The default logs at critical level and
  // exits the process at once (65 for DATA_LOSS, else 75). If it returns, the store stays up for
  // reads but fails every later write.
  std::function<void(const Status&)> on_fatal;
  // Group commit pacing: a batch begins no sooner than this after the previous one began. Under a
  // steady stream of small writes (thousands of pipelines checkpointing at staggered times) the
  // writer would otherwise commit, and fsync, every few writes, paying a transaction's fixed cost
  // each time; pacing gathers them, at the price of at most this much latency. A writer idle
  // for longer starts at once. 0: no pacing (a batch begins as soon as the previous one ends).
  std::chrono::microseconds min_batch_spacing{std::chrono::milliseconds(2)};
};

class SqliteStore final : public MetadataStore {
 public:
  // Written in the file header so that Open can tell our database from anyone else's.
  static constexpr int32_t kApplicationId = 0x636b7074;  // "ckpt"
  // PRAGMA user_version. A file with a newer version is refused, never downgraded.
  static constexpr int64_t kSchemaVersion = 2;
  static constexpr const char* kFileName = "ckptd.db";

  // Creates data_dir if missing (0750) and opens (or creates, 0640) <data_dir>/ckptd.db, then
  // starts the writer thread. Refused with DATA_LOSS, the file left untouched: a file that is not
  // a SQLite database, or is one but not ours (other tables, another application_id, a newer
  // schema), and a data_dir whose STORE_ID says it held a store whose database is missing, empty
  // or another one (store/data_dir.h). FAILED_PRECONDITION: a store file is a symbolic link.
  // An older schema is migrated.
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& data_dir);
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& data_dir,
                                                   SqliteStoreOptions options);

  // Applies everything queued (and runs its callbacks), stops and joins the writer thread, closes.
  ~SqliteStore() override;

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  void PutPipeline(const PipelineRecord& record, Done done) override;
  void PutProgress(const PipelineKey& key, const PipelineProgress& progress, Done done) override;
  void ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) override;
  void CommitCheckpoint(const CheckpointCommit& commit, Done done) override;
  void Probe(Done done) override;
  void DeletePipeline(const PipelineKey& key, Done done) override;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id = 0) override;
  void Flush() override;

  // Blocking read of a pipeline's id counter, 0 if it never had one. It also answers for deleted
  // pipelines (whose counter lives on), which LoadPipelines cannot: a pipeline re-created under an
  // old name must continue above this value. Not (yet) part of MetadataStore.
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override;

  // The database file, for messages.
  const std::string& path() const { return path_; }

  // Metrics and tests. Batches whose COMMIT succeeded; ops that got OK; ops that got an error.
  uint64_t batches_committed() const { return batches_committed_.load(std::memory_order_relaxed); }
  uint64_t ops_committed() const { return ops_committed_.load(std::memory_order_relaxed); }
  uint64_t ops_failed() const { return ops_failed_.load(std::memory_order_relaxed); }

  // Optional. Called on the writer thread once per committed batch with the time from BEGIN to the
  // end of COMMIT (fsync included), in microseconds. Set it before the first write: the writer
  // thread reads it without a lock (the queue mutex orders the assignment before that read).
  std::function<void(int64_t micros)> on_commit_latency;

 private:
  struct WriterConn;  // writer connection + cached statements (writer thread only)
  struct ReaderConn;  // read-only connection + cached statements (under read_mu_)

  // Applies one op inside the open transaction (writer thread); returns its own Status.
  using Apply = std::function<Status(WriterConn&)>;
  struct Op {
    Apply apply;
    Done done;
  };

  SqliteStore(std::string path, SqliteStoreOptions options, std::unique_ptr<WriterConn> writer,
              std::unique_ptr<ReaderConn> reader);

  void Enqueue(Apply apply, Done done);
  void WriterLoop();
  void RunBatch(std::vector<Op>& batch);
  // Writer thread: no more writes (broken_), then Fatal.
  void Stop(const Status& why);
  // Any thread, once: on_fatal, or log and exit (see the failure policy).
  void Fatal(const Status& why);
  // A read's result; DATA_LOSS also stops the store (Fatal).
  template <typename T>
  Result<T> CheckRead(Result<T> result);
  Result<std::vector<CompletedCheckpoint>> ListCompletedUnchecked(const PipelineKey& key,
                                                                  int limit, int64_t before_id);
  Result<int64_t> LoadIdCounterUnchecked(const PipelineKey& key);
  // Runs the callbacks in call order and counts the outcomes.
  void Finish(std::vector<Op>& batch, const std::vector<Status>& results);

  const std::string path_;
  const SqliteStoreOptions options_;

  std::unique_ptr<WriterConn> writer_;  // writer thread only (after Open)
  bool broken_ = false;                 // writer thread only: a commit's outcome was unknown
  Status broken_status_;                // writer thread only

  std::mutex read_mu_;
  std::unique_ptr<ReaderConn> reader_;  // guarded by read_mu_

  std::mutex mu_;
  std::condition_variable work_cv_;     // writer waits for work or stop
  std::condition_variable flushed_cv_;  // Flush waits for finished_
  std::vector<Op> queue_;               // guarded by mu_
  uint64_t enqueued_ = 0;               // guarded by mu_: ops ever queued
  uint64_t finished_ = 0;               // guarded by mu_: ops whose done ran (or never will)
  bool stopping_ = false;               // guarded by mu_
  bool writer_idle_ = false;            // guarded by mu_: the writer waits for work (not pacing)
  bool writer_exited_ = false;          // guarded by mu_

  std::atomic<bool> fatal_reported_{false};
  std::atomic<uint64_t> batches_committed_{0};
  std::atomic<uint64_t> ops_committed_{0};
  std::atomic<uint64_t> ops_failed_{0};

  std::thread writer_thread_;  // last: started after everything above exists
};

}  // namespace ckpt
