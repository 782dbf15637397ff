#pragma once
// SqliteBackend: the StoreBackend of the embedded store. It applies a batch as one
// BEGIN IMMEDIATE ... COMMIT (WAL, synchronous=FULL: COMMIT returns only once the log is fsynced),
// each write in a SAVEPOINT of its own so that one bad write (a duplicate checkpoint id) fails
// alone; and it reads through a second, read-only connection, which WAL lets see the last commit
// while the writer is mid-batch, so a read never waits behind a group commit's fsync.
//
// Threading: ApplyBatch is the writer thread's (StoreBackend), and so are the writer connection
// and its cached statements. The reads may come from any thread; they share the read connection,
// guarded by read_mu_.
//
// Outcomes (BatchResult):
// - An op that fails inside the batch (constraint, bad input) is rolled back to its savepoint and
//   gets its own error; the others commit.
// - If the transaction cannot start, or SQLite rolled it back by itself, or COMMIT fails cleanly
//   (busy/locked: the transaction is still open, so it is rolled back and nothing was written; a
//   full disk: the log's commit frame was never written), kNotWritten with the SQLite message.
// - If COMMIT fails any other way (an I/O error while writing or fsyncing the log), whether the
//   batch is durable is unknown: it may reappear after a crash. kStop: neither outcome is
//   reported.
// - Corruption (SQLITE_CORRUPT, SQLITE_NOTADB) met anywhere: kStop with DATA_LOSS.
// Errors are classified by sqlite::Classify: UNAVAILABLE means the environment refused the write
// (disk full, read-only, I/O error): the store is failing, not the op.

#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "sqlite/sqlite_db.h"
#include "store/store_backend.h"

namespace ckpt {

class SqliteBackend final : public StoreBackend {
 public:
  // Takes two connections to one database whose schema is current (sqlite/sqlite_schema.h): the
  // writer's (read-write) and the readers' (read-only), and prepares the statements of each.
  static Result<std::unique_ptr<SqliteBackend>> Create(sqlite::Db writer, sqlite::Db reader);
  ~SqliteBackend() override;
  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  const std::string& name() const override { return path_; }
  BatchResult ApplyBatch(const std::vector<WriteOp>& ops) override;
  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id) override;
  Result<std::vector<StoredGroup>> LoadGroups() override;
  std::vector<UnreadableRecord> UnreadableRecords() override;

 private:
  struct WriterConn;  // writer connection + cached statements (writer thread only)
  struct ReaderConn;  // read-only connection + cached statements (under read_mu_)

  SqliteBackend(std::unique_ptr<WriterConn> writer, std::unique_ptr<ReaderConn> reader);
  // Fills in each pipeline's history and newest checkpoint (LoadPipelines); a pipeline whose
  // history rows do not read (or hold an id above its counter) moves to `unreadable`.
  Status LoadHistories(std::vector<StoredPipeline>* pipelines,
                       std::vector<UnreadableRecord>* unreadable) CKPT_REQUIRES(read_mu_);

  const std::string path_;
  const std::unique_ptr<WriterConn> writer_;  // writer thread only
  Mutex read_mu_;
  const std::unique_ptr<ReaderConn> reader_ CKPT_PT_GUARDED_BY(read_mu_);
  // What the last LoadPipelines and LoadGroups could not read.
  std::vector<UnreadableRecord> unreadable_pipelines_ CKPT_GUARDED_BY(read_mu_);
  std::vector<UnreadableRecord> unreadable_groups_ CKPT_GUARDED_BY(read_mu_);
};

}  // namespace ckpt
