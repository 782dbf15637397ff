#include "store/sqlite_store.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "common/exit_codes.h"
#include "core/spec_validation.h"
#include "store/data_dir.h"
#include "store/sqlite_db.h"

namespace ckpt {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sqlite::Db;
using sqlite::ResetGuard;
using sqlite::Stmt;

// Version 1; version 2 adds `meta` (kSchemaV2). A new store is created at the current version; an
// older file is migrated step by step (Migrate); an older ckptd refuses a newer file instead of
// misreading it.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE pipelines (
  job_id               TEXT    NOT NULL,
  pipeline_id          TEXT    NOT NULL,
  task_ids             TEXT    NOT NULL,  -- JSON array of strings
  interval_ms          INTEGER NOT NULL,
  timeout_ms           INTEGER NOT NULL,
  min_pause_ms         INTEGER NOT NULL,
  tolerable_failures   INTEGER NOT NULL,
  retained             INTEGER NOT NULL,
  generation           INTEGER NOT NULL,
  sticky_state         INTEGER NOT NULL,  -- 0 active, 1 paused, 2 failed, 3 stopped
  completed_count      INTEGER NOT NULL,
  failed_count         INTEGER NOT NULL,
  expired_count        INTEGER NOT NULL,
  consecutive_failures INTEGER NOT NULL,
  last_completed_id    INTEGER NOT NULL,
  last_completed_kind  INTEGER NOT NULL,  -- as checkpoints.kind
  last_completed_at_ms INTEGER NOT NULL,
  from_config          INTEGER NOT NULL,
  PRIMARY KEY (job_id, pipeline_id)
);
-- Apart from pipelines because a counter outlives its pipeline: ids are never reused, not even by
-- DeletePipeline followed by CreatePipeline of the same name.
CREATE TABLE id_counters (
  job_id      TEXT    NOT NULL,
  pipeline_id TEXT    NOT NULL,
  counter     INTEGER NOT NULL,
  PRIMARY KEY (job_id, pipeline_id)
);
CREATE TABLE checkpoints (
  job_id          TEXT    NOT NULL,
  pipeline_id     TEXT    NOT NULL,
  checkpoint_id   INTEGER NOT NULL,
  kind            INTEGER NOT NULL,  -- 0 checkpoint, 1 savepoint, 2 savepoint and stop
  triggered_at_ms INTEGER NOT NULL,
  finished_at_ms  INTEGER NOT NULL,
  location        TEXT    NOT NULL,
  task_states     TEXT    NOT NULL,  -- JSON object: task_id -> {uri, size_bytes, checksum}
  PRIMARY KEY (job_id, pipeline_id, checkpoint_id)
);
)sql";

// The store's own facts: its id (as in data_dir/STORE_ID), and the probe StoreHealth writes.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT NOT NULL PRIMARY KEY,
  value TEXT NOT NULL
);
)sql";

constexpr const char* kTables[] = {"pipelines", "id_counters", "checkpoints"};

// Stored integers are spelled out rather than static_cast, so reordering an enum cannot silently
// change the meaning of rows already on disk.
int64_t KindToInt(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint: return 0;
    case CheckpointKind::kSavepoint: return 1;
    case CheckpointKind::kSavepointAndStop: return 2;
  }
  return 0;
}

std::optional<CheckpointKind> KindFromInt(int64_t value) {
  switch (value) {
    case 0: return CheckpointKind::kCheckpoint;
    case 1: return CheckpointKind::kSavepoint;
    case 2: return CheckpointKind::kSavepointAndStop;
    default: return std::nullopt;
  }
}

int64_t StickyToInt(StickyState sticky) {
  switch (sticky) {
    case StickyState::kActive: return 0;
    case StickyState::kPaused: return 1;
    case StickyState::kFailed: return 2;
    case StickyState::kStopped: return 3;
  }
  return 0;
}

std::optional<StickyState> StickyFromInt(int64_t value) {
  switch (value) {
    case 0: return StickyState::kActive;
    case 1: return StickyState::kPaused;
    case 2: return StickyState::kFailed;
    case 3: return StickyState::kStopped;
    default: return std::nullopt;
  }
}

// JSON rather than a joined string: any id round-trips, and an empty list is distinct from [""].
// dump() throws on invalid UTF-8; that must fail the one write, never the daemon.
Result<std::string> TaskIdsToJson(const std::vector<std::string>& task_ids) {
  try {
    return json(task_ids).dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("task_ids cannot be stored: ") + e.what());
  }
}

Result<std::string> TaskStatesToJson(const std::map<std::string, TaskState>& states) {
  try {
    json object = json::object();
    for (const auto& [task_id, state] : states) {
      object[task_id] = {
          {"uri", state.uri}, {"size_bytes", state.size_bytes}, {"checksum", state.checksum}};
    }
    return object.dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("task states cannot be stored: ") + e.what());
  }
}

std::optional<std::vector<std::string>> TaskIdsFromJson(const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_array()) return std::nullopt;
  std::vector<std::string> ids;
  ids.reserve(value.size());
  for (const auto& id : value) {
    if (!id.is_string()) return std::nullopt;
    ids.push_back(id.get<std::string>());
  }
  return ids;
}

std::optional<std::map<std::string, TaskState>> TaskStatesFromJson(const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return std::nullopt;
  std::map<std::string, TaskState> states;
  for (const auto& [task_id, state] : value.items()) {
    if (!state.is_object()) return std::nullopt;
    auto uri = state.find("uri");
    auto size = state.find("size_bytes");
    auto checksum = state.find("checksum");
    if (uri == state.end() || !uri->is_string() || size == state.end() ||
        !size->is_number_integer() || checksum == state.end() || !checksum->is_string()) {
      return std::nullopt;
    }
    states[task_id] =
        TaskState{uri->get<std::string>(), size->get<int64_t>(), checksum->get<std::string>()};
  }
  return states;
}

// What Open found in the file before writing anything to it.
enum class FileIdentity { kEmpty, kOurs };

// Reads only: a file we refuse must be left exactly as it was.
Result<FileIdentity> Inspect(Db& db) {
  const std::string& path = db.path();
  auto app_id = db.QueryInt("PRAGMA application_id");
  if (!app_id.ok()) {
    const int code = db.LastErrorCode();
    if (code == SQLITE_NOTADB) {
      return Status::DataLoss(
          path +
          " is not a SQLite database; refusing to use or overwrite it (move it away or "
          "point data_dir elsewhere)");
    }
    if (sqlite::PrimaryCode(code) == SQLITE_CORRUPT) {
      return Status::DataLoss(path + " is a damaged SQLite database (" +
                              app_id.status().message() + "); refusing to use it");
    }
    return Status::Unavailable("cannot read " + path + ": " + app_id.status().message());
  }
  auto user_version = db.QueryInt("PRAGMA user_version");
  if (!user_version.ok()) {
    return Status::Unavailable("cannot read " + path + ": " + user_version.status().message());
  }
  // Every schema object (table, index, view, trigger) except SQLite's own.
  std::vector<std::string> objects;
  {
    auto stmt = Stmt::Prepare(
        db,
        "SELECT type || ' ' || name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY type != 'table', name");
    if (!stmt.ok())
      return Status::Unavailable("cannot read " + path + ": " + stmt.status().message());
    ResetGuard guard(*stmt);
    int rc;
    while ((rc = stmt->Step()) == SQLITE_ROW) objects.push_back(stmt->ColumnText(0));
    if (rc != SQLITE_DONE) return db.Error(rc, "reading the schema of " + path);
  }

  if (*app_id == 0 && *user_version == 0 && objects.empty()) return FileIdentity::kEmpty;
  if (*app_id != SqliteStore::kApplicationId) {
    // Tables first: "table users, table orders and 4 more" says whose file it might be.
    std::string what = objects.empty() ? std::string("no tables") : std::string();
    for (size_t i = 0; i < objects.size() && i < 3; ++i) what += (i ? ", " : "") + objects[i];
    if (objects.size() > 3) what += " and " + std::to_string(objects.size() - 3) + " more";
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08x", static_cast<uint32_t>(*app_id));
    return Status::DataLoss(
        path + " is a SQLite database but not a ckptd one (application_id " + hex + ", " + what +
        "); refusing to use or change it (move it away or point data_dir elsewhere)");
  }
  if (*user_version > SqliteStore::kSchemaVersion) {
    return Status::DataLoss(
        path + " has schema version " + std::to_string(*user_version) +
        ", written by a newer ckptd; this one understands up to version " +
        std::to_string(SqliteStore::kSchemaVersion) + " and will not downgrade it");
  }
  if (*user_version < 1) {
    return Status::DataLoss(path + " has ckptd's application_id but schema version " +
                            std::to_string(*user_version) + "; refusing to guess what it holds");
  }
  for (const char* table : kTables) {
    if (std::find(objects.begin(), objects.end(), std::string("table ") + table) == objects.end()) {
      return Status::DataLoss(path + " is a ckptd database without its '" + table +
                              "' table; refusing to use it");
    }
  }
  return FileIdentity::kOurs;
}

Status CreateSchema(Db& db) {
  const std::string& path = db.path();
  // IMMEDIATE takes the write lock first, so a concurrent opener cannot create it twice; inspect
  // again under the lock.
  if (Status s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) {
    return Status::Unavailable("cannot create the schema in " + path + ": " + s.message());
  }
  auto identity = Inspect(db);
  Status status;
  if (!identity.ok()) {
    status = identity.status();
  } else if (*identity == FileIdentity::kEmpty) {
    status =
        db.Exec(std::string(kSchemaV1) + kSchemaV2 +
                "PRAGMA application_id = " + std::to_string(SqliteStore::kApplicationId) +
                ";\nPRAGMA user_version = " + std::to_string(SqliteStore::kSchemaVersion) + ";");
    if (status.ok()) status = db.Exec("COMMIT");
  }
  if (!status.ok()) {
    if (db.InTransaction()) (void)db.Exec("ROLLBACK");
    return Status(status.code(), "cannot create the schema in " + path + ": " + status.message());
  }
  if (db.InTransaction()) return db.Exec("COMMIT");  // someone else created it meanwhile
  return Status::Ok();
}

// Brings an older file of ours up to kSchemaVersion, one step at a time, each in its own
// transaction (a crash between steps leaves a file a later start migrates further).
Status Migrate(Db& db) {
  auto version = db.QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version < 2) {
    Status s = db.Exec(std::string("BEGIN IMMEDIATE;") + kSchemaV2 +
                       "PRAGMA user_version = 2; COMMIT;");
    if (!s.ok()) {
      if (db.InTransaction()) (void)db.Exec("ROLLBACK");
      return Status(s.code(), "migrating " + db.path() + " to schema version 2: " + s.message());
    }
    spdlog::info("store {}: migrated to schema version 2", db.path());
  }
  return Status::Ok();
}

// The store id the database holds (meta.store_id); "" when it holds none yet.
Result<std::string> StoredStoreId(Db& db) {
  return db.QueryText("SELECT COALESCE((SELECT value FROM meta WHERE key = 'store_id'), '')");
}

// Ties the database and data_dir/STORE_ID together (store/data_dir.h): both name the same id, or
// the one that has none yet is given the other's (or a new one).
Status BindStoreId(Db& db, const std::string& data_dir,
                   const std::optional<std::string>& file_id) {
  auto db_id = StoredStoreId(db);
  if (!db_id.ok()) return db_id.status();
  if (!db_id->empty() && file_id && *db_id != *file_id) {
    return Status::DataLoss(db.path() + " belongs to store " + *db_id + ", but " + data_dir +
                            "/STORE_ID names store " + *file_id +
                            "; refusing to mix two stores (was the database copied in from "
                            "elsewhere?)");
  }
  std::string id = !db_id->empty() ? *db_id : file_id ? *file_id : NewStoreId();
  if (db_id->empty()) {
    Status s = db.Exec("INSERT INTO meta (key, value) VALUES ('store_id', '" + id + "')");
    if (!s.ok()) return Status(s.code(), "recording the store id in " + db.path() + ": " + s.message());
  }
  // Only once the database exists and holds the id: a crash before this leaves a database
  // without STORE_ID, which the next start completes.
  if (!file_id) return WriteStoreId(data_dir, id);
  return Status::Ok();
}

// The pipelines columns, in the order BindRecord binds (?1..?18) and ReadRecord reads (0..17).
// clang-format off
constexpr const char* kRecordColumns[] = {
    "job_id", "pipeline_id", "task_ids", "interval_ms", "timeout_ms", "min_pause_ms",
    "tolerable_failures", "retained", "generation", "sticky_state", "completed_count",
    "failed_count", "expired_count", "consecutive_failures", "last_completed_id",
    "last_completed_kind", "last_completed_at_ms", "from_config"};
// clang-format on
constexpr int kRecordColumnCount = sizeof(kRecordColumns) / sizeof(kRecordColumns[0]);

// "<prefix>job_id, <prefix>pipeline_id, ..." over kRecordColumns.
std::string JoinColumns(const std::string& prefix) {
  std::string out;
  for (int i = 0; i < kRecordColumnCount; ++i) {
    if (i) out += ", ";
    out += prefix + kRecordColumns[i];
  }
  return out;
}

// The progress columns (kRecordColumns 8..17) as ?first..?first+9.
void BindProgress(Stmt& stmt, const PipelineProgress& p, int first) {
  stmt.Bind(first, p.generation);
  stmt.Bind(first + 1, StickyToInt(p.sticky));
  stmt.Bind(first + 2, p.counters.completed_count);
  stmt.Bind(first + 3, p.counters.failed_count);
  stmt.Bind(first + 4, p.counters.expired_count);
  stmt.Bind(first + 5, p.counters.consecutive_failures);
  stmt.Bind(first + 6, p.last_completed_id);
  stmt.Bind(first + 7, KindToInt(p.last_completed_kind));
  stmt.Bind(first + 8, p.last_completed_at_ms);
  stmt.Bind(first + 9, int64_t{p.from_config ? 1 : 0});
}

// Binds ?1..?18 in kRecordColumns order.
void BindRecord(Stmt& stmt, const PipelineRecord& r, const std::string& task_ids_json) {
  stmt.Bind(1, r.spec.key.job_id);
  stmt.Bind(2, r.spec.key.pipeline_id);
  stmt.Bind(3, task_ids_json);
  stmt.Bind(4, r.spec.interval_ms);
  stmt.Bind(5, r.spec.timeout_ms);
  stmt.Bind(6, r.spec.min_pause_ms);
  stmt.Bind(7, int64_t{r.spec.tolerable_failures});
  stmt.Bind(8, int64_t{r.spec.retained});
  BindProgress(stmt, r.progress(), 9);
}

// Reads columns 0..17 in kRecordColumns order.
Result<PipelineRecord> ReadRecord(const Stmt& stmt, const std::string& path) {
  PipelineRecord r;
  r.spec.key.job_id = stmt.ColumnText(0);
  r.spec.key.pipeline_id = stmt.ColumnText(1);
  const std::string where = "pipeline " + r.spec.key.ToString() + " in " + path;
  auto task_ids = TaskIdsFromJson(stmt.ColumnText(2));
  if (!task_ids) return Status::Internal("unreadable task_ids of " + where);
  r.spec.task_ids = std::move(*task_ids);
  r.spec.interval_ms = stmt.ColumnInt(3);
  r.spec.timeout_ms = stmt.ColumnInt(4);
  r.spec.min_pause_ms = stmt.ColumnInt(5);
  r.spec.tolerable_failures = static_cast<int32_t>(stmt.ColumnInt(6));
  r.spec.retained = static_cast<int32_t>(stmt.ColumnInt(7));
  r.generation = stmt.ColumnInt(8);
  auto sticky = StickyFromInt(stmt.ColumnInt(9));
  if (!sticky) return Status::Internal("unknown sticky_state of " + where);
  r.sticky = *sticky;
  r.counters.completed_count = stmt.ColumnInt(10);
  r.counters.failed_count = stmt.ColumnInt(11);
  r.counters.expired_count = stmt.ColumnInt(12);
  r.counters.consecutive_failures = stmt.ColumnInt(13);
  r.last_completed_id = stmt.ColumnInt(14);
  auto kind = KindFromInt(stmt.ColumnInt(15));
  if (!kind) return Status::Internal("unknown last_completed_kind of " + where);
  r.last_completed_kind = *kind;
  r.last_completed_at_ms = stmt.ColumnInt(16);
  r.from_config = stmt.ColumnInt(17) != 0;
  return r;
}

// Prepares `sql` into `stmt`, keeping the first error.
void PrepareInto(Db& db, Stmt& stmt, const std::string& sql, Status& status) {
  if (!status.ok()) return;
  auto prepared = Stmt::Prepare(db, sql);
  if (!prepared.ok()) {
    status = prepared.status();
    return;
  }
  stmt = std::move(*prepared);
}

}  // namespace

// The writer connection and its cached statements: the writer thread's alone once Open returns.
// `db` is declared first so it is destroyed last, after the statements prepared on it.
struct SqliteStore::WriterConn {
  Db db;
  Stmt begin, commit, rollback, savepoint, release, rollback_to;
  Stmt upsert_pipeline, update_progress, raise_counter, insert_checkpoint, trim_checkpoints;
  Stmt delete_pipeline, delete_checkpoints, probe;

  Status Prepare() {
    Status s;
    PrepareInto(db, begin, "BEGIN IMMEDIATE", s);
    PrepareInto(db, commit, "COMMIT", s);
    PrepareInto(db, rollback, "ROLLBACK", s);
    PrepareInto(db, savepoint, "SAVEPOINT op", s);
    PrepareInto(db, release, "RELEASE op", s);
    PrepareInto(db, rollback_to, "ROLLBACK TO op", s);
    std::string params;
    std::string assignments;
    for (int i = 0; i < kRecordColumnCount; ++i) {
      params += (i ? ", ?" : "?") + std::to_string(i + 1);
      if (i < 2) continue;  // the key columns are what conflicts
      if (!assignments.empty()) assignments += ", ";
      assignments += std::string(kRecordColumns[i]) + " = excluded." + kRecordColumns[i];
    }
    PrepareInto(db, upsert_pipeline,
                "INSERT INTO pipelines (" + JoinColumns("") + ") VALUES (" + params +
                    ") ON CONFLICT (job_id, pipeline_id) DO UPDATE SET " + assignments,
                s);
    std::string progress_assignments;
    for (int i = 8; i < kRecordColumnCount; ++i) {
      if (i > 8) progress_assignments += ", ";
      progress_assignments += std::string(kRecordColumns[i]) + " = ?" + std::to_string(i - 5);
    }
    PrepareInto(db, update_progress,
                "UPDATE pipelines SET " + progress_assignments +
                    " WHERE job_id = ?1 AND pipeline_id = ?2",
                s);
    PrepareInto(db, probe,
                "INSERT INTO meta (key, value) VALUES ('probe', ?1) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                s);
    PrepareInto(db, raise_counter,
                "INSERT INTO id_counters (job_id, pipeline_id, counter) VALUES (?1, ?2, ?3) "
                "ON CONFLICT (job_id, pipeline_id) DO UPDATE SET "
                "counter = MAX(counter, excluded.counter)",
                s);
    PrepareInto(db, insert_checkpoint,
                "INSERT INTO checkpoints (job_id, pipeline_id, checkpoint_id, kind, "
                "triggered_at_ms, finished_at_ms, location, task_states) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                s);
    // Deletes the plain checkpoints older than the ?3+1-th newest one; none if there are fewer
    // (the subquery is then NULL). Savepoints (kind != 0) are never trimmed.
    PrepareInto(db, trim_checkpoints,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "AND checkpoint_id < (SELECT checkpoint_id FROM checkpoints "
                "WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "ORDER BY checkpoint_id DESC LIMIT 1 OFFSET ?3)",
                s);
    PrepareInto(db, delete_pipeline, "DELETE FROM pipelines WHERE job_id = ?1 AND pipeline_id = ?2",
                s);
    PrepareInto(db, delete_checkpoints,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2", s);
    return s;
  }

  Status PutPipeline(const PipelineRecord& record) {
    const std::string key = record.spec.key.ToString();
    auto task_ids = TaskIdsToJson(record.spec.task_ids);
    if (!task_ids.ok()) {
      return Status::InvalidArgument("pipeline " + key + ": " + task_ids.status().message());
    }
    ResetGuard guard(upsert_pipeline);
    BindRecord(upsert_pipeline, record, *task_ids);
    if (int rc = upsert_pipeline.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing pipeline " + key);
    }
    return Status::Ok();
  }

  Status RaiseCounter(const PipelineKey& key, int64_t counter) {
    ResetGuard guard(raise_counter);
    raise_counter.Bind(1, key.job_id);
    raise_counter.Bind(2, key.pipeline_id);
    raise_counter.Bind(3, counter);
    if (int rc = raise_counter.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "raising the id counter of " + key.ToString());
    }
    return Status::Ok();
  }

  Status ReserveIds(const PipelineKey& key, int64_t new_counter) {
    if (new_counter < 0) {
      return Status::InvalidArgument("id counter of " + key.ToString() + " cannot be " +
                                     std::to_string(new_counter));
    }
    return RaiseCounter(key, new_counter);
  }

  // Writes the progress of an existing record; `changed` says whether there was one.
  Status PutProgress(const PipelineKey& key, const PipelineProgress& progress, bool* changed) {
    ResetGuard guard(update_progress);
    update_progress.Bind(1, key.job_id);
    update_progress.Bind(2, key.pipeline_id);
    BindProgress(update_progress, progress, 3);  // after the key, ?1 and ?2
    if (int rc = update_progress.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing the progress of pipeline " + key.ToString());
    }
    *changed = sqlite3_changes(db.get()) > 0;
    return Status::Ok();
  }

  Status CommitCheckpoint(const CheckpointCommit& commit) {
    const PipelineKey& key = commit.key;
    const CompletedCheckpoint& cp = commit.checkpoint;
    const std::string what =
        "checkpoint " + std::to_string(cp.checkpoint_id) + " of " + key.ToString();
    if (cp.checkpoint_id <= 0) return Status::InvalidArgument(what + ": ids start at 1");
    auto states = TaskStatesToJson(cp.task_states);
    if (!states.ok()) return Status::InvalidArgument(what + ": " + states.status().message());
    bool exists = false;
    if (Status s = PutProgress(key, commit.progress_after, &exists); !s.ok()) return s;
    // A history row without its pipeline would be an orphan no one lists or deletes.
    if (!exists) return Status::NotFound(what + ": the pipeline has no record (deleted?)");
    {
      ResetGuard guard(insert_checkpoint);
      insert_checkpoint.Bind(1, key.job_id);
      insert_checkpoint.Bind(2, key.pipeline_id);
      insert_checkpoint.Bind(3, cp.checkpoint_id);
      insert_checkpoint.Bind(4, KindToInt(cp.kind));
      insert_checkpoint.Bind(5, cp.triggered_at_ms);
      insert_checkpoint.Bind(6, cp.finished_at_ms);
      insert_checkpoint.Bind(7, cp.location);
      insert_checkpoint.Bind(8, *states);
      if (int rc = insert_checkpoint.Step(); rc != SQLITE_DONE) {
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
          // Overwriting would rewrite history a worker may already have been told about.
          return Status::AlreadyExists(what + " is already stored; not overwriting it");
        }
        return db.Error(rc, "storing " + what);
      }
    }
    // Normally a no-op (the id came from a durably reserved block). If a caller ever committed an
    // id it had not reserved, this still keeps the id from being handed out again after a restart.
    if (Status s = RaiseCounter(key, cp.checkpoint_id); !s.ok()) return s;
    ResetGuard guard(trim_checkpoints);
    trim_checkpoints.Bind(1, key.job_id);
    trim_checkpoints.Bind(2, key.pipeline_id);
    // At least the checkpoint just stored survives, whatever `retained` says.
    trim_checkpoints.Bind(3, int64_t{std::max(commit.retained, 1) - 1});
    if (int rc = trim_checkpoints.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "trimming the history of " + key.ToString());
    }
    return Status::Ok();
  }

  Status Probe(int64_t now_ms) {
    ResetGuard guard(probe);
    probe.Bind(1, std::to_string(now_ms));
    if (int rc = probe.Step(); rc != SQLITE_DONE) return db.Error(rc, "probe write");
    return Status::Ok();
  }

  Status DeletePipeline(const PipelineKey& key) {
    for (Stmt* stmt : {&delete_checkpoints, &delete_pipeline}) {
      ResetGuard guard(*stmt);
      stmt->Bind(1, key.job_id);
      stmt->Bind(2, key.pipeline_id);
      if (int rc = stmt->Step(); rc != SQLITE_DONE) {
        return db.Error(rc, "deleting pipeline " + key.ToString());
      }
    }
    return Status::Ok();
  }
};

// The read-only connection: used under read_mu_ by whichever thread reads.
struct SqliteStore::ReaderConn {
  Db db;
  Stmt load_pipelines, list_completed, read_counter;

  Status Prepare() {
    Status s;
    PrepareInto(db, load_pipelines,
                "SELECT " + JoinColumns("p.") +
                    ", COALESCE(c.counter, 0) FROM pipelines p LEFT JOIN id_counters c "
                    "ON c.job_id = p.job_id AND c.pipeline_id = p.pipeline_id "
                    "ORDER BY p.job_id, p.pipeline_id",
                s);
    PrepareInto(db, list_completed,
                "SELECT checkpoint_id, kind, triggered_at_ms, finished_at_ms, location, "
                "task_states FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2 "
                "AND checkpoint_id < ?4 ORDER BY checkpoint_id DESC LIMIT ?3",
                s);
    PrepareInto(db, read_counter,
                "SELECT counter FROM id_counters WHERE job_id = ?1 AND pipeline_id = ?2", s);
    return s;
  }
};

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

  auto writer = std::make_unique<WriterConn>();
  {
    auto db = Db::Open(path,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                           SQLITE_OPEN_NOFOLLOW,
                       options.vfs);
    if (!db.ok()) return db.status();
    writer->db = std::move(*db);
  }
  sqlite3_busy_timeout(writer->db.get(), options.busy_timeout_ms);

  // Look first: nothing below may write to a file we are going to refuse.
  auto identity = Inspect(writer->db);
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
  auto mode = writer->db.QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) {
    return Status(mode.status().code(),
                  "cannot switch " + path + " to WAL: " + mode.status().message());
  }
  if (*mode != "wal") {
    return Status::FailedPrecondition(path + " stays in journal_mode '" + *mode +
                                      "', WAL is required (is data_dir on a local file system?)");
  }
  if (Status s = writer->db.Exec("PRAGMA synchronous = FULL"); !s.ok()) {
    return Status(s.code(), path + ": " + s.message());
  }
  if (*identity == FileIdentity::kEmpty) {
    if (Status s = CreateSchema(writer->db); !s.ok()) return s;
  } else if (Status s = Migrate(writer->db); !s.ok()) {
    return s;
  }
  if (Status s = BindStoreId(writer->db, data_dir, *store_id); !s.ok()) return s;
  if (Status s = writer->Prepare(); !s.ok()) {
    return Status(s.code(), path + ": " + s.message());
  }

  auto reader = std::make_unique<ReaderConn>();
  {
    auto db = Db::Open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                       options.vfs);
    if (!db.ok()) return db.status();
    reader->db = std::move(*db);
  }
  sqlite3_busy_timeout(reader->db.get(), options.busy_timeout_ms);
  if (Status s = reader->Prepare(); !s.ok()) {
    return Status(s.code(), path + ": " + s.message());
  }

  return std::unique_ptr<SqliteStore>(
      new SqliteStore(path, std::move(options), std::move(writer), std::move(reader)));
}

SqliteStore::SqliteStore(std::string path, SqliteStoreOptions options,
                         std::unique_ptr<WriterConn> writer, std::unique_ptr<ReaderConn> reader)
    : path_(std::move(path)),
      options_(std::move(options)),
      writer_(std::move(writer)),
      reader_(std::move(reader)) {
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  if (writer_thread_.joinable()) writer_thread_.join();
  // writer_ and reader_ close their connections as members are destroyed; no thread is left.
}

void SqliteStore::Enqueue(Apply apply, Done done) {
  {
    std::lock_guard lock(mu_);
    // Accepted while stopping too: a callback run during the final drain may enqueue a follow-up
    // write, and the writer keeps going until the queue is empty.
    if (!writer_exited_) {
      queue_.push_back(Op{std::move(apply), std::move(done)});
      ++enqueued_;
      // Only while the writer waits idle: pacing or running a batch, it looks at the queue under
      // mu_ before it waits again, and a wake-up per write would cost what pacing saves.
      if (writer_idle_) work_cv_.notify_one();
      return;
    }
  }
  spdlog::error("store {}: write after the store was closed; failing it", path_);
  if (done) done(Status::Unavailable("store " + path_ + " is closed"));
}

void SqliteStore::PutPipeline(const PipelineRecord& record, Done done) {
  Enqueue([record](WriterConn& w) { return w.PutPipeline(record); }, std::move(done));
}

void SqliteStore::ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) {
  Enqueue([key, new_counter](WriterConn& w) { return w.ReserveIds(key, new_counter); },
          std::move(done));
}

void SqliteStore::PutProgress(const PipelineKey& key, const PipelineProgress& progress,
                              Done done) {
  Enqueue(
      [key, progress](WriterConn& w) {
        bool exists = false;
        return w.PutProgress(key, progress, &exists);  // none: deleted meanwhile, nothing to do
      },
      std::move(done));
}

void SqliteStore::CommitCheckpoint(const CheckpointCommit& commit, Done done) {
  Enqueue([commit](WriterConn& w) { return w.CommitCheckpoint(commit); }, std::move(done));
}

void SqliteStore::Probe(Done done) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  Enqueue([now_ms](WriterConn& w) { return w.Probe(now_ms); }, std::move(done));
}

void SqliteStore::DeletePipeline(const PipelineKey& key, Done done) {
  Enqueue([key](WriterConn& w) { return w.DeletePipeline(key); }, std::move(done));
}

void SqliteStore::Flush() {
  if (std::this_thread::get_id() == writer_thread_.get_id()) {
    // From a `done` callback: the writer would wait for itself forever.
    spdlog::error("store {}: Flush called from a store callback; not waiting", path_);
    return;
  }
  std::unique_lock lock(mu_);
  const uint64_t target = enqueued_;
  flushed_cv_.wait(lock, [&] { return finished_ >= target || writer_exited_; });
}

void SqliteStore::WriterLoop() {
  pthread_setname_np(pthread_self(), "ckpt-store");
  std::vector<Op> batch;
  std::optional<std::chrono::steady_clock::time_point> last_begin;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      writer_idle_ = true;
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      writer_idle_ = false;
      if (queue_.empty()) {  // stopping, and everything is applied
        writer_exited_ = true;
        break;
      }
      if (last_begin && options_.min_batch_spacing.count() > 0) {
        // Pacing (SqliteStoreOptions::min_batch_spacing); shutdown does not wait for it.
        work_cv_.wait_until(lock, *last_begin + options_.min_batch_spacing,
                            [&] { return stopping_; });
      }
      batch.swap(queue_);
    }
    last_begin = std::chrono::steady_clock::now();
    const size_t count = batch.size();
    RunBatch(batch);
    batch.clear();  // drop the callbacks' captures before Flush can return
    {
      std::lock_guard lock(mu_);
      finished_ += count;
    }
    flushed_cv_.notify_all();
  }
  flushed_cv_.notify_all();
}

void SqliteStore::RunBatch(std::vector<Op>& batch) {
  std::vector<Status> results(batch.size());
  const std::string count = std::to_string(batch.size());
  auto fail_all = [&](const Status& status) {
    for (Status& r : results) r = status;
    Finish(batch, results);
  };
  if (broken_) return fail_all(broken_status_);

  WriterConn& w = *writer_;
  const auto start = std::chrono::steady_clock::now();
  if (int rc = w.begin.Run(); rc != SQLITE_DONE) {
    Status s = w.db.Error(rc, "BEGIN on " + path_);
    if (s.code() == StatusCode::kDataLoss) return Stop(s);
    spdlog::error("store: {} writes failed, nothing written: {}", count, s.ToString());
    return fail_all(Status(s.code(), "nothing written: " + s.message()));
  }

  Status lost;  // set when the transaction as a whole is lost
  for (size_t i = 0; i < batch.size(); ++i) {
    if (int rc = w.savepoint.Run(); rc != SQLITE_DONE) {
      lost = w.db.Error(rc, "SAVEPOINT");
      break;
    }
    Status s;
    try {
      s = batch[i].apply(w);
    } catch (const std::exception& e) {
      s = Status::Internal(std::string("unexpected exception in a store write: ") + e.what());
    }
    if (s.ok()) {
      if (int rc = w.release.Run(); rc != SQLITE_DONE) {
        lost = w.db.Error(rc, "RELEASE");
        break;
      }
      continue;
    }
    if (s.code() == StatusCode::kDataLoss) {
      // A damaged file: commit nothing more to it, report nothing, stop (exit 65).
      if (w.db.InTransaction()) (void)w.rollback.Run();
      return Stop(s);
    }
    if (!w.db.InTransaction()) {
      // SQLite rolled the whole transaction back by itself (I/O error, disk full, out of memory):
      // the ops applied before this one are gone as well.
      lost = s;
      break;
    }
    int rc = w.rollback_to.Run();
    if (rc == SQLITE_DONE) rc = w.release.Run();
    if (rc != SQLITE_DONE) {
      lost = w.db.Error(rc, "ROLLBACK TO");
      break;
    }
    spdlog::error("store: write rolled back, the others of its batch proceed: {}", s.ToString());
    results[i] = std::move(s);
  }
  if (lost.code() == StatusCode::kDataLoss) {
    if (w.db.InTransaction()) (void)w.rollback.Run();
    return Stop(lost);
  }
  if (!lost.ok()) {
    // Nothing is committed: this batch never reaches COMMIT. If even ROLLBACK fails the connection
    // stays inside the transaction and every later BEGIN fails, which is still a truthful failure.
    if (w.db.InTransaction()) (void)w.rollback.Run();
    Status s(lost.code(),
             "transaction of " + count + " writes rolled back, nothing written: " + lost.message());
    spdlog::error("store: {}", s.ToString());
    return fail_all(s);
  }

  if (int rc = w.commit.Run(); rc != SQLITE_DONE) {
    Status s = w.db.Error(rc, "COMMIT of " + count + " writes to " + path_);
    const int primary = sqlite::PrimaryCode(rc);
    if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && w.db.InTransaction()) {
      // The transaction is still open and nothing reached the log: a clean failure.
      (void)w.rollback.Run();
      spdlog::error("store: {} writes failed, nothing written: {}", count, s.ToString());
      return fail_all(s);
    }
    if (primary == SQLITE_FULL) {
      // The disk refused a write of the log. SQLite appends a transaction's frames in order and
      // marks the last one as the commit; a refused (or short) write stops it before that mark is
      // complete, and a frame cut short fails its checksum at recovery. So nothing of this batch
      // can ever reappear: a clean failure, and the store goes on once space returns. (A failed
      // fsync is different: the frames may be on disk, and that stays fail-stop below.)
      if (w.db.InTransaction()) (void)w.rollback.Run();
      Status full(s.code(), "disk full, nothing written: " + s.message());
      spdlog::error("store: {} writes failed: {}", count, full.ToString());
      return fail_all(full);
    }
    if (s.code() == StatusCode::kDataLoss) {
      if (w.db.InTransaction()) (void)w.rollback.Run();
      return Stop(s);
    }
    // Frames may or may not be in the WAL: after a crash this batch could reappear. Reporting it
    // failed could make workers discard state that is in fact the latest durable checkpoint;
    // reporting it done could promise what is lost. So neither is reported (DESIGN.md).
    if (w.db.InTransaction()) (void)w.rollback.Run();
    spdlog::critical("store: {}; whether these {} writes are durable is unknown, reporting neither",
                     s.ToString(), count);
    return Stop(Status::Unavailable("store stopped after a commit with unknown outcome: " +
                                    s.message()));
  }

  const int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  batches_committed_.fetch_add(1, std::memory_order_relaxed);
  if (on_commit_latency) on_commit_latency(micros);
  Finish(batch, results);
}

void SqliteStore::Stop(const Status& why) {
  // The ops of the batch that met this are counted neither committed nor failed: they never get
  // an answer, and nothing more is written.
  broken_ = true;
  broken_status_ = why;
  Fatal(why);
}

void SqliteStore::Fatal(const Status& why) {
  if (fatal_reported_.exchange(true)) return;
  if (options_.on_fatal) return options_.on_fatal(why);
  const bool damaged = why.code() == StatusCode::kDataLoss;
  spdlog::critical("store {}: {}", path_, why.ToString());
  spdlog::critical(damaged ? "stopping: the database is damaged; restore it from a backup or "
                             "move data_dir away (exit code 65, not restarted)"
                           : "stopping (fail-stop); the restart reads what is durable");
  spdlog::default_logger()->flush();
  // At once, without destructors: no other thread may tell a worker anything more.
  std::_Exit(damaged ? kExitDataLoss : kExitUnknownOutcome);
}

template <typename T>
Result<T> SqliteStore::CheckRead(Result<T> result) {
  if (!result.ok() && result.status().code() == StatusCode::kDataLoss) Fatal(result.status());
  return result;
}

void SqliteStore::Finish(std::vector<Op>& batch, const std::vector<Status>& results) {
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

Result<std::vector<StoredPipeline>> SqliteStore::LoadPipelines() {
  // Not CheckRead: this runs at start, whose caller refuses to start on the error (exit 65).
  std::lock_guard lock(read_mu_);
  Stmt& stmt = reader_->load_pipelines;
  ResetGuard guard(stmt);
  std::vector<StoredPipeline> pipelines;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    auto record = ReadRecord(stmt, path_);
    if (!record.ok()) return Status::DataLoss(record.status().message());
    StoredPipeline stored{std::move(*record), stmt.ColumnInt(kRecordColumnCount)};
    // Held to the rules of API input: a counter near INT64_MAX or a pipeline without tasks is
    // damaged data, refused here rather than overflowing or hanging later.
    if (Status s = ValidateStored(stored); !s.ok()) {
      return Status::DataLoss("pipeline " + stored.record.spec.key.ToString() + " in " + path_ +
                              " is not valid: " + s.message() +
                              "; refusing to start on it (restore the database from a backup, or "
                              "correct or delete that row with sqlite3)");
    }
    pipelines.push_back(std::move(stored));
  }
  // A damaged file is DATA_LOSS, which stops the start with exit 65.
  if (rc != SQLITE_DONE) return reader_->db.Error(rc, "loading pipelines from " + path_);
  return pipelines;
}

Result<std::vector<CompletedCheckpoint>> SqliteStore::ListCompleted(const PipelineKey& key,
                                                                    int limit,
                                                                    int64_t before_id) {
  return CheckRead(ListCompletedUnchecked(key, limit, before_id));
}

Result<std::vector<CompletedCheckpoint>> SqliteStore::ListCompletedUnchecked(const PipelineKey& key,
                                                                          int limit,
                                                                          int64_t before_id) {
  std::lock_guard lock(read_mu_);
  Stmt& stmt = reader_->list_completed;
  ResetGuard guard(stmt);
  stmt.Bind(1, key.job_id);
  stmt.Bind(2, key.pipeline_id);
  stmt.Bind(3, int64_t{limit > 0 ? limit : -1});  // a negative LIMIT means none in SQLite
  stmt.Bind(4, before_id > 0 ? before_id : std::numeric_limits<int64_t>::max());
  std::vector<CompletedCheckpoint> checkpoints;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    CompletedCheckpoint cp;
    cp.checkpoint_id = stmt.ColumnInt(0);
    const std::string where =
        "checkpoint " + std::to_string(cp.checkpoint_id) + " of " + key.ToString() + " in " + path_;
    auto kind = KindFromInt(stmt.ColumnInt(1));
    if (!kind) return Status::Internal("unknown kind of " + where);
    cp.kind = *kind;
    cp.triggered_at_ms = stmt.ColumnInt(2);
    cp.finished_at_ms = stmt.ColumnInt(3);
    cp.location = stmt.ColumnText(4);
    auto states = TaskStatesFromJson(stmt.ColumnText(5));
    if (!states) return Status::Internal("unreadable task states of " + where);
    cp.task_states = std::move(*states);
    checkpoints.push_back(std::move(cp));
  }
  if (rc != SQLITE_DONE) {
    return reader_->db.Error(rc, "listing checkpoints of " + key.ToString() + " in " + path_);
  }
  return checkpoints;
}

Result<int64_t> SqliteStore::LoadIdCounter(const PipelineKey& key) {
  return CheckRead(LoadIdCounterUnchecked(key));
}

Result<int64_t> SqliteStore::LoadIdCounterUnchecked(const PipelineKey& key) {
  std::lock_guard lock(read_mu_);
  Stmt& stmt = reader_->read_counter;
  ResetGuard guard(stmt);
  stmt.Bind(1, key.job_id);
  stmt.Bind(2, key.pipeline_id);
  int rc = stmt.Step();
  if (rc == SQLITE_ROW) return stmt.ColumnInt(0);
  if (rc == SQLITE_DONE) return int64_t{0};
  return reader_->db.Error(rc, "reading the id counter of " + key.ToString() + " in " + path_);
}

}  // namespace ckpt
