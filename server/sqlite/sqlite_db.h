#pragma once
// Small RAII wrappers over the SQLite C API: a connection (Db) and a prepared statement (Stmt).
//
// Threading: neither class locks anything. A Db and every Stmt prepared on it belong to one thread
// at a time; whoever owns them serialises access (SqliteBackend: the writer connection is the
// writer thread's, the read connection is guarded by a mutex). That is why connections are opened
// with SQLITE_OPEN_NOMUTEX: SQLite's own per-connection mutex would only duplicate ours.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ckpt::sqlite {

class Db {
 public:
  // `flags` are SQLITE_OPEN_* flags; `vfs` empty = the default VFS. Extended result codes are on.
  static Result<Db> Open(const std::string& path, int flags, const std::string& vfs);

  Db() = default;
  Db(Db&& other) noexcept;
  Db& operator=(Db&& other) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();  // Statements prepared on it must be finalized (destroyed) first.

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs SQL that returns no rows (may hold several statements). Not for hot paths: it re-parses.
  Status Exec(const std::string& sql);
  // The first column of the first row of `sql`, for PRAGMAs and one-off checks.
  Result<int64_t> QueryInt(const std::string& sql);
  Result<std::string> QueryText(const std::string& sql);

  // True while a transaction is open. SQLite ends a transaction by itself after some errors
  // (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM), which callers must detect.
  bool InTransaction() const;

  // Extended result code of the connection's most recent failure.
  int LastErrorCode() const;

  // Status for the connection's last error: "<context>: <sqlite message> (<code name>)", its
  // code chosen by Classify.
  Status Error(int rc, std::string_view context) const;

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void Close();

  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  // Prepared with SQLITE_PREPARE_PERSISTENT: these are cached for the connection's lifetime.
  static Result<Stmt> Prepare(Db& db, const std::string& sql);

  Stmt() = default;
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Parameter indexes are 1-based, as in SQLite (?1, ?2, ...). Text is copied (SQLITE_TRANSIENT).
  void Bind(int index, int64_t value);
  void Bind(int index, double value);
  void Bind(int index, std::string_view value);

  // One step: SQLITE_ROW, SQLITE_DONE or an error code (inspect with Db::Error).
  int Step();
  // Steps to completion of a statement that returns no rows, then resets it.
  // Returns SQLITE_DONE or the error code.
  int Run();

  int64_t ColumnInt(int col) const;  // 0-based, as in SQLite
  // Whether the value of `col` is stored as an integer (a column SQLite lets hold text too).
  bool ColumnIsInt(int col) const;
  double ColumnDouble(int col) const;
  // Whether `col` holds an integer or a real.
  bool ColumnIsNumber(int col) const;
  std::string ColumnText(int col) const;

  // Resets and clears the bindings. A statement left stepped (not reset) keeps its read transaction
  // open and stops WAL checkpoints from progressing, so every use ends with Reset (see ResetGuard).
  void Reset();

 private:
  explicit Stmt(sqlite3_stmt* stmt) : stmt_(stmt) {}

  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a statement on scope exit, on every path.
class ResetGuard {
 public:
  explicit ResetGuard(Stmt& stmt) : stmt_(stmt) {}
  ~ResetGuard() { stmt_.Reset(); }
  ResetGuard(const ResetGuard&) = delete;
  ResetGuard& operator=(const ResetGuard&) = delete;

 private:
  Stmt& stmt_;
};

// What a SQLite result code means to the daemon: UNAVAILABLE when the environment refuses the write
// now (disk full, read-only, I/O error, busy: the store is failing, not the op), DATA_LOSS when the
// file is damaged (corrupt, not a database), ALREADY_EXISTS for a duplicate key, INTERNAL else.
Status Classify(int rc, std::string message);

// Primary result code (rc & 0xff) without the extended part.
inline int PrimaryCode(int rc) { return rc & 0xff; }

}  // namespace ckpt::sqlite
