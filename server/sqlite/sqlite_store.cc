#include "sqlite/sqlite_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <utility>

#include "sqlite/sqlite_backend.h"
#include "store/data_dir.h"

namespace ckpt {

namespace fs = std::filesystem;
using sqlite::Db;
using sqlite::FileIdentity;

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& data_dir) {
  return Open(data_dir, SqliteStoreOptions{});
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& data_dir,
                                                       SqliteStoreOptions options) {
  if (data_dir.empty()) return Status::InvalidArgument("data_dir is empty");
  if (Status s = EnsureDataDir(data_dir); !s.ok()) return s;
  const std::string path = (fs::path(data_dir) / kFileName).string();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    if (Status s = RefuseSymlink(path + suffix); !s.ok()) return s;
  }
  std::error_code ec;
  if (auto st = fs::status(path, ec); !ec && fs::exists(st) && !fs::is_regular_file(st)) {
    return Status::FailedPrecondition(path + " exists but is not a regular file");
  }

  // A data_dir that held a store (STORE_ID) must still have its database: taking a missing or
  // empty one for a new store would start the ids over.
  auto store_id = ReadStoreId(data_dir);
  if (!store_id.ok()) return store_id.status();
  const bool db_exists = fs::exists(path, ec);
  if (*store_id && (!db_exists || fs::file_size(path, ec) == 0)) {
    return Status::DataLoss(
        data_dir + " held store " + **store_id + " (STORE_ID), but its database " + path +
        (db_exists ? " is empty" : " is missing") +
        "; refusing to start a new store over it (checkpoint ids would be reused). Restore the "
        "database from a backup, or remove STORE_ID to start a new store on purpose");
  }
  if (!db_exists) {
    if (Status s = CreateFileIfMissing(path); !s.ok()) return s;  // 0640, not SQLite's 0644
  }

  auto writer = Db::Open(
      path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
      options.vfs);
  if (!writer.ok()) return writer.status();
  sqlite3_busy_timeout(writer->get(), options.busy_timeout_ms);

  // Look first: nothing below may write to a file we are going to refuse.
  auto identity = sqlite::Inspect(*writer);
  if (!identity.ok()) return identity.status();
  if (*identity == FileIdentity::kEmpty && *store_id) {
    return Status::DataLoss(data_dir + " held store " + **store_id + " (STORE_ID), but " + path +
                            " holds no ckptd data; refusing to start a new store over it. "
                            "Restore the database from a backup, or remove STORE_ID to start a "
                            "new store on purpose");
  }

  // WAL: readers do not block the writer nor wait for it, and a commit appends and fsyncs the log
  // instead of rewriting pages. FULL: that fsync happens at every COMMIT (NORMAL would skip it and
  // lose recent commits on power loss, breaking "complete only after durable").
  auto mode = writer->QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) {
    return Status(mode.status().code(),
                  "cannot switch " + path + " to WAL: " + mode.status().message());
  }
  if (*mode != "wal") {
    return Status::FailedPrecondition(path + " stays in journal_mode '" + *mode +
                                      "', WAL is required (is data_dir on a local file system?)");
  }
  if (Status s = writer->Exec("PRAGMA synchronous = FULL"); !s.ok()) {
    return Status(s.code(), path + ": " + s.message());
  }
  // The writer's page cache: each commit walks the indexes of the checkpoints it adds and trims,
  // and with SQLite's default of 2 MiB a store of 10,000 pipelines (100,000 retained checkpoints)
  // misses it on most pages and reads them back from the file, a pread each (at 10,000 commits a
  // second that was a third of the daemon's CPU). Up to 64 MiB, held only as the file grows.
  if (Status s = writer->Exec("PRAGMA cache_size = -65536"); !s.ok()) {
    return Status(s.code(), path + ": " + s.message());
  }
  if (*identity == FileIdentity::kEmpty) {
    if (Status s = sqlite::CreateSchema(*writer); !s.ok()) return s;
  } else if (Status s = sqlite::Migrate(*writer); !s.ok()) {
    return s;
  }
  if (Status s = sqlite::BindStoreId(*writer, data_dir, *store_id); !s.ok()) return s;
  auto reader = Db::Open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                         options.vfs);
  if (!reader.ok()) return reader.status();
  sqlite3_busy_timeout(reader->get(), options.busy_timeout_ms);
  auto backend = SqliteBackend::Create(std::move(*writer), std::move(*reader));
  if (!backend.ok()) return backend.status();

  GroupCommitOptions group;
  group.on_fatal = std::move(options.on_fatal);
  group.min_batch_spacing = options.min_batch_spacing;
  group.writer_nice = options.writer_nice;
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(*backend), std::move(group)));
}

}  // namespace ckpt
