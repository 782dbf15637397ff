#include "sqlite/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace ckpt::sqlite {

Result<Db> Db::Open(const std::string& path, int flags, const std::string& vfs) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);  // a handle is returned even on failure (unless out of memory)
    return Status::Unavailable("cannot open " + path + ": " + message);
  }
  sqlite3_extended_result_codes(raw, 1);
  return Db(raw, path);
}

Db::Db(Db&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Db& Db::operator=(Db&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Db::~Db() { Close(); }

void Db::Close() {
  // close_v2 rather than close: if a statement were still alive the handle becomes a zombie that is
  // freed with the last statement, instead of leaking silently.
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string message = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Classify(rc, sql + ": " + message + " (sqlite code " + std::to_string(rc) + ")");
}

namespace {

// Runs `sql`, expects a row, hands the statement to `read`.
template <typename T, typename Read>
Result<T> QueryOne(Db& db, const std::string& sql, Read read) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return db.Error(rc, sql);
  rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW) {
    Status status =
        rc == SQLITE_DONE ? Status::Internal(sql + ": returned no row") : db.Error(rc, sql);
    sqlite3_finalize(stmt);
    return status;
  }
  T value = read(stmt);
  sqlite3_finalize(stmt);
  return value;
}

}  // namespace

Result<int64_t> Db::QueryInt(const std::string& sql) {
  return QueryOne<int64_t>(*this, sql, [](sqlite3_stmt* s) { return sqlite3_column_int64(s, 0); });
}

Result<std::string> Db::QueryText(const std::string& sql) {
  return QueryOne<std::string>(*this, sql, [](sqlite3_stmt* s) {
    const unsigned char* text = sqlite3_column_text(s, 0);
    return text ? std::string(reinterpret_cast<const char*>(text),
                              static_cast<size_t>(sqlite3_column_bytes(s, 0)))
                : std::string();
  });
}

bool Db::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

int Db::LastErrorCode() const { return sqlite3_extended_errcode(db_); }

Status Db::Error(int rc, std::string_view context) const {
  std::string message(context);
  message += ": ";
  // errmsg describes the most recent failing call on this connection; the extended code tells
  // apart what the message does not (SQLITE_IOERR_FSYNC vs _WRITE are both "disk I/O error").
  message += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  message += " (sqlite code " + std::to_string(rc) + ")";
  return Classify(rc, std::move(message));
}

Status Classify(int rc, std::string message) {
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
    return Status::AlreadyExists(std::move(message));
  }
  switch (PrimaryCode(rc)) {
    // The environment refuses the write now and may take it later: the store is failing, not
    // the op (StoreHealth holds the triggers and probes).
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL: return Status::Unavailable(std::move(message));
    // The file is damaged: nothing read from it can be trusted, nothing more is written.
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return Status::DataLoss(std::move(message));
    default: return Status::Internal(std::move(message));
  }
}

Result<Stmt> Stmt::Prepare(Db& db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return db.Error(rc, "preparing \"" + sql + "\"");
  return Stmt(stmt);
}

Stmt::Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Stmt::~Stmt() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void Stmt::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Stmt::Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }

void Stmt::Bind(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

int Stmt::Step() { return sqlite3_step(stmt_); }

int Stmt::Run() {
  int rc;
  do {
    rc = sqlite3_step(stmt_);
  } while (rc == SQLITE_ROW);
  sqlite3_reset(stmt_);
  return rc;
}

int64_t Stmt::ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }

bool Stmt::ColumnIsInt(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_INTEGER; }

double Stmt::ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }

bool Stmt::ColumnIsNumber(int col) const {
  const int type = sqlite3_column_type(stmt_, col);
  return type == SQLITE_INTEGER || type == SQLITE_FLOAT;
}

std::string Stmt::ColumnText(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (!text) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

}  // namespace ckpt::sqlite
