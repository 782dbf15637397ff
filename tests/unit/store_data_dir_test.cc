// The store's data_dir as an attacker or a failing disk leaves it: a database gone, emptied or
// swapped, files replaced by symbolic links, damaged pages, values no API would accept. Each is
// refused with a clear error (DATA_LOSS: exit 65) and nothing is overwritten.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>

#include "sqlite/sqlite_store.h"
#include "store/data_dir.h"
#include "store/data_dir_lock.h"
#include "store_test_util.h"
#include "support/scoped_temp_dir.h"

namespace ckpt {
namespace {

namespace fs = std::filesystem;

PipelineRecord Record(const std::string& pipeline) {
  PipelineRecord r;
  r.spec.key = {"j", pipeline};
  r.spec.task_ids = {"0", "1"};
  return r;
}

CheckpointCommit Commit(const PipelineRecord& r, int64_t id) {
  CheckpointCommit c{r.spec.key, r.spec.retained, r.progress(), {}, {}};
  c.checkpoint.checkpoint_id = id;
  c.checkpoint.task_states["0"] = {"file:///0", 1, ""};
  c.progress_after.last_completed_id = id;
  return c;
}

void Sql(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class StoreDataDirTest : public ::testing::Test {
 protected:
  // A store with one pipeline and one checkpoint, closed again.
  void MakeStore() {
    auto store = SqliteStore::Open(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const PipelineRecord r = Record("p");
    ASSERT_TRUE(Await([&](auto done) { (*store)->PutPipeline(r, done); }).ok());
    ASSERT_TRUE(Await([&](auto done) { (*store)->ReserveIds(r.spec.key, 100, done); }).ok());
    ASSERT_TRUE(Await([&](auto done) { (*store)->CommitCheckpoint(Commit(r, 1), done); }).ok());
  }

  Status OpenStatus(SqliteStoreOptions options = {}) {
    auto store = SqliteStore::Open(dir_.string(), std::move(options));
    return store.ok() ? Status::Ok() : store.status();
  }

  fs::path db() const { return dir_ / "ckptd.db"; }

  ckpt::testing::ScopedTempDir temp_{"ckptd-datadir-test"};
  const fs::path root_ = temp_.path();
  const fs::path dir_ = root_ / "data";
};

TEST_F(StoreDataDirTest, AFreshStoreWritesItsIdAndFilesAreForItsOwnerAndGroup) {
  MakeStore();
  auto id = ReadStoreId(dir_.string());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(id->has_value());
  EXPECT_EQ((*id)->size(), 32u);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u) << std::oct << (st.st_mode & 0777);
  for (const char* name : {"ckptd.db", "STORE_ID"}) {
    ASSERT_EQ(::stat((dir_ / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0640u) << name << ": " << std::oct << (st.st_mode & 0777);
  }
  EXPECT_TRUE(OpenStatus().ok()) << "it opens again as itself";
}

TEST_F(StoreDataDirTest, AMissingOrEmptyDatabaseOfAKnownStoreIsRefusedNotRecreated) {
  MakeStore();
  fs::remove(db());
  fs::remove(dir_ / "ckptd.db-wal");
  fs::remove(dir_ / "ckptd.db-shm");
  Status missing = OpenStatus();
  EXPECT_EQ(missing.code(), StatusCode::kDataLoss) << missing.ToString();
  EXPECT_NE(missing.message().find("is missing"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("STORE_ID"), std::string::npos) << missing.message();
  EXPECT_FALSE(fs::exists(db())) << "nothing may be created in its place";

  { std::ofstream empty(db()); }
  Status empty = OpenStatus();
  EXPECT_EQ(empty.code(), StatusCode::kDataLoss) << empty.ToString();
  EXPECT_NE(empty.message().find("is empty"), std::string::npos) << empty.message();
  EXPECT_EQ(fs::file_size(db()), 0u);
}

TEST_F(StoreDataDirTest, ADatabaseOfAnotherStoreIsRefused) {
  MakeStore();
  const fs::path first = root_ / "first.db";
  fs::copy_file(db(), first);
  fs::remove_all(dir_);
  MakeStore();  // a second store, with its own id
  fs::copy_file(first, db(), fs::copy_options::overwrite_existing);
  fs::remove(dir_ / "ckptd.db-wal");
  fs::remove(dir_ / "ckptd.db-shm");
  Status mixed = OpenStatus();
  EXPECT_EQ(mixed.code(), StatusCode::kDataLoss) << mixed.ToString();
  EXPECT_NE(mixed.message().find("belongs to store"), std::string::npos) << mixed.message();
}

TEST_F(StoreDataDirTest, AStoreOfTheFirstReleaseIsMigratedAndGivenAnId) {
  MakeStore();
  // What the first release left: schema version 1 without `meta` and what 3 to 10 added,
  // no STORE_ID.
  Sql(db(),
      "ALTER TABLE pipelines DROP COLUMN unrestorable_ids; "
      "ALTER TABLE pipelines DROP COLUMN restore_from_failed; "
      "ALTER TABLE pipelines DROP COLUMN max_overhead; ALTER TABLE pipelines DROP COLUMN "
      "max_interval_ms; "
      "ALTER TABLE pipelines DROP COLUMN commit_timeout_ms; ALTER TABLE pipelines DROP COLUMN "
      "last_committed_id; ALTER TABLE pipelines DROP COLUMN last_committed_at_ms; ALTER TABLE "
      "checkpoints DROP COLUMN commit_status; ALTER TABLE checkpoints DROP COLUMN "
      "committed_at_ms; "
      "ALTER TABLE pipelines DROP COLUMN restore_from; ALTER TABLE pipelines DROP COLUMN "
      "released_ids; ALTER TABLE pipelines DROP COLUMN position_interval; ALTER TABLE "
      "checkpoints DROP COLUMN position; ALTER TABLE pipelines DROP COLUMN alignment_group; "
      "ALTER TABLE checkpoints DROP COLUMN alignment_group; DROP TABLE alignment_groups; "
      "DROP TABLE meta; DROP TABLE id_high_water; PRAGMA user_version = 1;");
  fs::remove(dir_ / "STORE_ID");
  auto store = SqliteStore::Open(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto loaded = (*store)->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->size(), 1u);
  auto id = ReadStoreId(dir_.string());
  ASSERT_TRUE(id.ok() && id->has_value());
  store->reset();
  Sql(db(), "SELECT 1");  // still a valid database
}

TEST_F(StoreDataDirTest, SymbolicLinksAreNeverFollowed) {
  MakeStore();
  const fs::path victim = root_ / "victim";
  { std::ofstream(victim) << "precious\n"; }

  fs::remove(dir_ / "LOCK");
  fs::create_symlink(victim, dir_ / "LOCK");
  auto lock = DataDirLock::Acquire(dir_.string());
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("symbolic link"), std::string::npos)
      << lock.status().message();
  EXPECT_EQ(ReadFile(victim), "precious\n") << "the lock must not truncate the link's target";
  fs::remove(dir_ / "LOCK");

  const fs::path real = root_ / "real.db";
  fs::rename(db(), real);
  fs::create_symlink(real, db());
  Status linked = OpenStatus();
  EXPECT_FALSE(linked.ok());
  EXPECT_NE(linked.message().find("symbolic link"), std::string::npos) << linked.message();
  fs::remove(db());
  fs::rename(real, db());

  fs::create_symlink(victim, dir_ / "ckptd.db-wal");
  Status wal = OpenStatus();
  EXPECT_FALSE(wal.ok());
  EXPECT_NE(wal.message().find("ckptd.db-wal"), std::string::npos) << wal.message();
  EXPECT_EQ(ReadFile(victim), "precious\n");
}

// Values that do not hold to the rules of API input quarantine their pipeline alone (it is
// reported, nothing runs for it); they never overflow, hang or stop the load.
TEST_F(StoreDataDirTest, StoredValuesAreHeldToTheRulesOfApiInput) {
  MakeStore();
  auto quarantined_for = [&](const std::string& why) {
    auto store = SqliteStore::Open(dir_.string());
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return;
    auto loaded = (*store)->LoadPipelines();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_TRUE(loaded->empty()) << why;
    auto unreadable = (*store)->UnreadableRecords();
    ASSERT_EQ(unreadable.size(), 1u) << why;
    EXPECT_EQ(unreadable[0].pipeline.ToString(), "j/p");
    EXPECT_NE(unreadable[0].reason.find(why), std::string::npos) << unreadable[0].reason;
  };
  Sql(db(), "UPDATE id_counters SET counter = 9223372036854775800");
  quarantined_for("id counter");  // it would overflow the next reservation
  Sql(db(), "UPDATE id_counters SET counter = 'garbage'");
  quarantined_for("not an integer");
  Sql(db(), "UPDATE id_counters SET counter = 100; UPDATE pipelines SET task_ids = '[]'");
  quarantined_for("task_ids is empty");  // it would hold every shutdown
  Sql(db(),
      "UPDATE pipelines SET task_ids = '[\"0\"]', job_id = 'j/x'; "
      "UPDATE id_counters SET job_id = 'j/x'; UPDATE checkpoints SET job_id = 'j/x'");
  auto store = SqliteStore::Open(dir_.string());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->LoadPipelines().ok());
  auto unreadable = (*store)->UnreadableRecords();
  ASSERT_EQ(unreadable.size(), 1u) << "an id with / would name a path outside its directory";
  EXPECT_NE(unreadable[0].reason.find("contains / or"), std::string::npos) << unreadable[0].reason;
}

TEST_F(StoreDataDirTest, CorruptionMetWhileRunningStopsTheStoreWithDataLoss) {
  MakeStore();
  std::promise<Status> fatal;
  SqliteStoreOptions options;
  options.on_fatal = [&](const Status& s) { fatal.set_value(s); };
  auto store = SqliteStore::Open(dir_.string(), std::move(options));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->LoadPipelines().ok());
  // Then overwrite the checkpoints table's root page (the load read it on the other connection;
  // the writer has not): the first commit meets the damage.
  int64_t root_page = 0;
  int64_t page_size = 0;
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(raw, "SELECT rootpage FROM sqlite_schema WHERE name = 'checkpoints'", -1,
                       &stmt, nullptr);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    root_page = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_prepare_v2(raw, "PRAGMA page_size", -1, &stmt, nullptr);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    page_size = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
  }
  {
    std::fstream file(db(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((root_page - 1) * page_size);
    const std::string garbage(static_cast<size_t>(page_size), '\x5a');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }

  bool answered = false;
  (*store)->CommitCheckpoint(Commit(Record("p"), 2), [&](Status) { answered = true; });
  auto future = fatal.get_future();
  ASSERT_EQ(future.wait_for(kStoreTestDeadline), std::future_status::ready)
      << "the store must stop";
  const Status why = future.get();
  EXPECT_EQ(why.code(), StatusCode::kDataLoss) << why.ToString();
  (*store)->Flush();
  EXPECT_FALSE(answered) << "nothing is reported either way from a damaged file";
  Status after = Await([&](auto done) { (*store)->Probe(done); });
  EXPECT_FALSE(after.ok()) << "nothing more is written to it";
}

}  // namespace
}  // namespace ckpt
