#pragma once
// SqliteStore: the embedded MetadataStore, one SQLite file `<data_dir>/ckptd.db` in WAL mode with
// synchronous=FULL. It is a GroupCommitStore (store/group_commit_store.h: queue, batching, pacing,
// the writer thread, fail-stop) over a SqliteBackend (sqlite/sqlite_backend.h: transactions,
// rows, reads); this file opens the data directory and the database and puts the two together.
// Threading and failure policy: those of GroupCommitStore and SqliteBackend.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "sqlite/sqlite_schema.h"
#include "store/group_commit_store.h"

namespace ckpt {

struct SqliteStoreOptions {
  // SQLite VFS name; empty = the platform default. Tests register a VFS that injects I/O errors.
  std::string vfs;
  // How long a statement waits for a lock held by another connection (another process opening the
  // same file, or our own read connection during a WAL checkpoint).
  int busy_timeout_ms = 5000;
  // GroupCommitOptions::on_fatal: by default, log and exit (65 for damaged data, else 75).
  std::function<void(const Status&)> on_fatal;
  // GroupCommitOptions::min_batch_spacing.
  std::chrono::microseconds min_batch_spacing{std::chrono::milliseconds(2)};
  // GroupCommitOptions::writer_nice (store.writer_nice).
  int writer_nice = 0;
};

class SqliteStore final : public GroupCommitStore {
 public:
  static constexpr int32_t kApplicationId = sqlite::kApplicationId;
  static constexpr int64_t kSchemaVersion = sqlite::kSchemaVersion;
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

 private:
  SqliteStore(std::unique_ptr<StoreBackend> backend, GroupCommitOptions options)
      : GroupCommitStore(std::move(backend), std::move(options)) {}
};

}  // namespace ckpt
