#include "sqlite/sqlite_schema.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#include "store/data_dir.h"

namespace ckpt::sqlite {

namespace {

// Version 1; version 2 adds `meta` (kSchemaV2); version 3 the operator-set restore point
// (kSchemaV3); version 4 the last release (kSchemaV4); version 5 positions (kSchemaV5); version 6
// alignment groups (kSchemaV6); version 7 the ids' high-water mark (kSchemaV7); version 8 the
// commit phase (kSchemaV8); version 9 the adaptive interval (kSchemaV9); version 10 the
// unrestorable marks (kSchemaV10). A new store
// is created at the current version; an older file is migrated step by step (Migrate); an older
// ckptd refuses a newer file instead of misreading it.
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
  task_states     TEXT    NOT NULL,  -- JSON object: task_id -> {uri, size_bytes, checksum, and the task's figures} (store/task_json.h)
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

// A pipeline's restore point when an operator chose one (RestorePipeline, restore_from): JSON
// {job_id, pipeline_id, checkpoint_id}; '' when it is the newest completed checkpoint.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE pipelines ADD COLUMN restore_from TEXT NOT NULL DEFAULT '';
)sql";

// The ids the last releasing write released, as a JSON array: sent again after a restart.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE pipelines ADD COLUMN released_ids TEXT NOT NULL DEFAULT '[]';
)sql";

// Positions (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): a pipeline's
// position_interval, and the position each checkpoint was taken at (0: none).
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE pipelines ADD COLUMN position_interval INTEGER NOT NULL DEFAULT 0;
ALTER TABLE checkpoints ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
)sql";

// Alignment groups (docs/ALIGNMENT.md): the groups with their progress, a pipeline's group, and
// the group a checkpoint was a round of.
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE alignment_groups (
  name                 TEXT    NOT NULL PRIMARY KEY,
  interval_ms          INTEGER NOT NULL,
  timeout_ms           INTEGER NOT NULL,
  min_pause_ms         INTEGER NOT NULL,
  position_interval    INTEGER NOT NULL,
  from_config          INTEGER NOT NULL,
  id_counter           INTEGER NOT NULL,
  last_round_id        INTEGER NOT NULL,
  last_position        INTEGER NOT NULL,
  last_completed_at_ms INTEGER NOT NULL
);
ALTER TABLE pipelines ADD COLUMN alignment_group TEXT NOT NULL DEFAULT '';
ALTER TABLE checkpoints ADD COLUMN alignment_group TEXT NOT NULL DEFAULT '';
)sql";

// The store-wide high-water mark of ids (docs/DESIGN.md "Availability in depth"): the highest id
// counter any pipeline or group ever held, raised with every counter. A pipeline whose own counter
// cannot be read is given it when it is deleted, so that one created again under its name starts
// above every id the store ever gave. An older file starts from what it holds.
constexpr const char* kSchemaV7 = R"sql(
CREATE TABLE id_high_water (
  id    INTEGER NOT NULL PRIMARY KEY CHECK (id = 0),
  value INTEGER NOT NULL
);
INSERT INTO id_high_water (id, value) VALUES (0, MAX(
  COALESCE((SELECT MAX(counter) FROM id_counters WHERE typeof(counter) = 'integer'), 0),
  COALESCE((SELECT MAX(id_counter) FROM alignment_groups WHERE typeof(id_counter) = 'integer'), 0),
  COALESCE((SELECT MAX(checkpoint_id) FROM checkpoints WHERE typeof(checkpoint_id) = 'integer'), 0)));
)sql";

// The commit phase (docs/PROTOCOL.md, "Commit phase"): a pipeline's and a group's
// commit_timeout_ms, a pipeline's
// COMMITTED mark (the newest committed checkpoint and when), and each checkpoint's commit status
// (0 none, 1 committing, 2 committed; the mark's write sets 2) and time.
constexpr const char* kSchemaV8 = R"sql(
ALTER TABLE pipelines ADD COLUMN commit_timeout_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipelines ADD COLUMN last_committed_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipelines ADD COLUMN last_committed_at_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE checkpoints ADD COLUMN commit_status INTEGER NOT NULL DEFAULT 0;
ALTER TABLE checkpoints ADD COLUMN committed_at_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alignment_groups ADD COLUMN commit_timeout_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// The adaptive interval (docs/PROTOCOL.md, "Adaptive interval"): a pipeline's and a group's
// max_overhead (a fraction, 0: off) and max_interval_ms (0: no cap).
constexpr const char* kSchemaV9 = R"sql(
ALTER TABLE pipelines ADD COLUMN max_overhead REAL NOT NULL DEFAULT 0;
ALTER TABLE pipelines ADD COLUMN max_interval_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alignment_groups ADD COLUMN max_overhead REAL NOT NULL DEFAULT 0;
ALTER TABLE alignment_groups ADD COLUMN max_interval_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// Verified restore (docs/PROTOCOL.md, "Verified restore"): the checkpoints a task failed to
// restore (a JSON array of ids), and whether restore_from failed, riding with the progress.
constexpr const char* kSchemaV10 = R"sql(
ALTER TABLE pipelines ADD COLUMN unrestorable_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE pipelines ADD COLUMN restore_from_failed INTEGER NOT NULL DEFAULT 0;
)sql";

// What takes version N-1 to N, from 2 on: kUpgrades[N - 2].
constexpr const char* kUpgrades[] = {kSchemaV2, kSchemaV3, kSchemaV4, kSchemaV5, kSchemaV6,
                                     kSchemaV7, kSchemaV8, kSchemaV9, kSchemaV10};
static_assert(std::size(kUpgrades) == kSchemaVersion - 1,
              "one upgrade per version after the first");

constexpr const char* kTables[] = {"pipelines", "id_counters", "checkpoints"};

// The store id the database holds (meta.store_id); "" when it holds none yet.
Result<std::string> StoredStoreId(Db& db) {
  return db.QueryText("SELECT COALESCE((SELECT value FROM meta WHERE key = 'store_id'), '')");
}

}  // namespace

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
      return Status::DataLoss(path + " is a damaged SQLite database (" + app_id.status().message() +
                              "); refusing to use it");
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
  if (*app_id != kApplicationId) {
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
  if (*user_version > kSchemaVersion) {
    return Status::DataLoss(path + " has schema version " + std::to_string(*user_version) +
                            ", written by a newer ckptd; this one understands up to version " +
                            std::to_string(kSchemaVersion) + " and will not downgrade it");
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
    std::string schema = kSchemaV1;
    for (const char* upgrade : kUpgrades) schema += upgrade;
    status = db.Exec(schema + "PRAGMA application_id = " + std::to_string(kApplicationId) +
                     ";\nPRAGMA user_version = " + std::to_string(kSchemaVersion) + ";");
    if (status.ok()) status = db.Exec("COMMIT");
  }
  if (!status.ok()) {
    if (db.InTransaction()) (void)db.Exec("ROLLBACK");
    return Status(status.code(), "cannot create the schema in " + path + ": " + status.message());
  }
  if (db.InTransaction()) return db.Exec("COMMIT");  // someone else created it meanwhile
  return Status::Ok();
}

Status Migrate(Db& db) {
  auto version = db.QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  // Each step in its own transaction: a crash between two leaves a file of the earlier version.
  for (int64_t to = std::max<int64_t>(*version + 1, 2); to <= kSchemaVersion; ++to) {
    const std::string step = std::string("BEGIN IMMEDIATE;") + kUpgrades[to - 2] +
                             "PRAGMA user_version = " + std::to_string(to) + "; COMMIT;";
    if (Status s = db.Exec(step); !s.ok()) {
      if (db.InTransaction()) (void)db.Exec("ROLLBACK");
      return Status(s.code(), "migrating " + db.path() + " to schema version " +
                                  std::to_string(to) + ": " + s.message());
    }
    spdlog::info("store {}: migrated to schema version {}", db.path(), to);
  }
  return Status::Ok();
}

Status BindStoreId(Db& db, const std::string& data_dir, const std::optional<std::string>& file_id) {
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
    if (!s.ok())
      return Status(s.code(), "recording the store id in " + db.path() + ": " + s.message());
  }
  // Only once the database exists and holds the id: a crash before this leaves a database
  // without STORE_ID, which the next start completes.
  if (!file_id) return WriteStoreId(data_dir, id);
  return Status::Ok();
}

}  // namespace ckpt::sqlite
