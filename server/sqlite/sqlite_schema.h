#pragma once
// The SQLite store's schema: what makes a file ours (application_id, schema version, tables), how
// a new file gets the schema, how an older one is migrated, and the store id the database shares
// with data_dir/STORE_ID (store/data_dir.h).

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "sqlite/sqlite_db.h"

namespace ckpt::sqlite {

// Written in the file header so that Open can tell our database from anyone else's.
constexpr int32_t kApplicationId = 0x636b7074;  // "ckpt"
// PRAGMA user_version. A file with a newer version is refused, never downgraded.
constexpr int64_t kSchemaVersion = 10;

// What a file holds, found before anything is written to it.
enum class FileIdentity { kEmpty, kOurs };

// Reads only: a file we refuse is left exactly as it was. DATA_LOSS for a file that is not a
// SQLite database, is damaged, or is one but not ours (other tables, another application_id, a
// newer schema, a table missing).
Result<FileIdentity> Inspect(Db& db);
// Gives an empty file the current schema (and inspects it again under the write lock).
Status CreateSchema(Db& db);
// Brings an older file of ours up to kSchemaVersion, one step at a time, each in its own
// transaction (a crash between steps leaves a file a later start migrates further).
Status Migrate(Db& db);
// Ties the database and data_dir/STORE_ID together: both name the same id, or the one that has
// none yet is given the other's (or a new one). `file_id`: what STORE_ID holds, if it exists.
// DATA_LOSS when they name different stores.
Status BindStoreId(Db& db, const std::string& data_dir, const std::optional<std::string>& file_id);

}  // namespace ckpt::sqlite
