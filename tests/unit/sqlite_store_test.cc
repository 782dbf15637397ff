// The SQLite backend through GroupCommitStore, against a real file in a temporary directory: what
// it keeps across a reopen, batching from many threads, reads beside a busy writer, and every way
// the file or the disk can fail (a garbage or foreign file, a newer schema, an unknown commit
// outcome, a full disk). The rules every backend shares are metadata_store_contract.h's.
#include "sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "core/spec_validation.h"
#include "store_test_util.h"
#include "support/scoped_temp_dir.h"

namespace ckpt {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr auto kDeadline = kStoreTestDeadline;

// ---------------------------------------------------------------------------------------------
// A VFS that wraps the default one and can make xSync fail, to reach the "COMMIT outcome unknown"
// path without a broken disk, or refuse writes to the log as a full disk does.

std::atomic<bool> g_fail_sync{false};
std::atomic<int> g_failed_syncs{0};
std::atomic<bool> g_wal_disk_full{false};
std::atomic<int> g_refused_wal_writes{0};

struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real;  // points just past this struct, in the same allocation
  bool is_wal;
};

sqlite3_vfs* RealVfs(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }
sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }

int FClose(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int FRead(sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
  return Real(f)->pMethods->xRead(Real(f), b, n, o);
}
int FWrite(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
  if (reinterpret_cast<FaultFile*>(f)->is_wal && g_wal_disk_full.load()) {
    g_refused_wal_writes.fetch_add(1);
    return SQLITE_FULL;  // what the unix VFS returns for ENOSPC
  }
  return Real(f)->pMethods->xWrite(Real(f), b, n, o);
}
int FTruncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int FSync(sqlite3_file* f, int flags) {
  if (g_fail_sync.load()) {
    g_failed_syncs.fetch_add(1);
    return SQLITE_IOERR_FSYNC;
  }
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FFileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int FLock(sqlite3_file* f, int l) { return Real(f)->pMethods->xLock(Real(f), l); }
int FUnlock(sqlite3_file* f, int l) { return Real(f)->pMethods->xUnlock(Real(f), l); }
int FCheckReserved(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FFileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int FSectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int FDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int FShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** p) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, p);
}
int FShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void FShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int FShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int FFetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
  return Real(f)->pMethods->xFetch(Real(f), o, n, p);
}
int FUnfetch(sqlite3_file* f, sqlite3_int64 o, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), o, p);
}

// clang-format off
const sqlite3_io_methods kFaultIo = {
    3, FClose, FRead, FWrite, FTruncate, FSync, FFileSize, FLock, FUnlock, FCheckReserved,
    FFileControl, FSectorSize, FDeviceCharacteristics, FShmMap, FShmLock, FShmBarrier, FShmUnmap,
    FFetch, FUnfetch};
// clang-format on

int FOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  auto* f = reinterpret_cast<FaultFile*>(file);
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  f->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
  int rc = RealVfs(vfs)->xOpen(RealVfs(vfs), name, f->real, flags, out_flags);
  f->base.pMethods = f->real->pMethods ? &kFaultIo : nullptr;
  return rc;
}
int FDelete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return RealVfs(vfs)->xDelete(RealVfs(vfs), name, sync_dir);
}
int FAccess(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return RealVfs(vfs)->xAccess(RealVfs(vfs), name, flags, out);
}
int FFullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  return RealVfs(vfs)->xFullPathname(RealVfs(vfs), name, n, out);
}

const char* FaultVfsName() {
  static const char* name = [] {
    static sqlite3_vfs vfs;
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    vfs = *real;  // the remaining methods ignore their vfs argument in the unix VFS
    vfs.iVersion = 2;
    vfs.szOsFile = static_cast<int>(sizeof(FaultFile)) + real->szOsFile;
    vfs.zName = "ckpt-fault-test";
    vfs.pAppData = real;
    vfs.xOpen = FOpen;
    vfs.xDelete = FDelete;
    vfs.xAccess = FAccess;
    vfs.xFullPathname = FFullPathname;
    sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
    return vfs.zName;
  }();
  return name;
}

// ---------------------------------------------------------------------------------------------

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteStore> OpenStore(SqliteStoreOptions options = {}) {
    auto store = SqliteStore::Open(dir_.string(), std::move(options));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return nullptr;
    return std::move(*store);
  }

  fs::path db_path() const { return dir_ / "ckptd.db"; }

  ckpt::testing::ScopedTempDir temp_{"ckptd-sqlite-test"};
  const fs::path dir_ = temp_.path();
};

TEST_F(SqliteStoreTest, UnstorableTextFailsTheWriteNotTheStore) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  PipelineRecord r = MakeRecord("j", "p");
  r.spec.task_ids.push_back("bad\xff\xfe");  // not UTF-8: JSON cannot hold it
  Status put = Await([&](auto done) { store->PutPipeline(r, done); });
  EXPECT_EQ(put.code(), StatusCode::kInvalidArgument) << put.ToString();
  r = MakeRecord("j", "p");
  CompletedCheckpoint cp = MakeCheckpoint(1);
  cp.task_states["0"].uri = "file:///\xc3";
  Status commit = Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, cp), done); });
  EXPECT_EQ(commit.code(), StatusCode::kInvalidArgument) << commit.ToString();
  // Nothing of either was written, and the store goes on.
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty());
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), done);
              }).ok());
}

TEST_F(SqliteStoreTest, GroupCommitBatchesWritesFromManyThreads) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  std::mutex latency_mu;
  std::vector<int64_t> latencies;
  store->on_commit_latency = [&](int64_t micros) {
    std::lock_guard lock(latency_mu);
    latencies.push_back(micros);
  };

  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 250;  // every 5th a checkpoint commit, the rest reservations
  std::mutex mu;
  std::vector<std::vector<int>> seen(kThreads);  // per caller: op numbers, in callback order
  std::set<std::thread::id> callback_threads;
  int failures = 0;
  const uint64_t batches_before = store->batches_committed();
  const uint64_t ops_before = store->ops_committed();

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      PipelineRecord r = MakeRecord("job", "p" + std::to_string(t), /*retained=*/5);
      store->PutPipeline(r, nullptr);  // before its commits: writes apply in call order
      for (int i = 0; i < kOpsPerThread; ++i) {
        auto done = [&, t, i](Status s) {
          std::lock_guard lock(mu);
          if (!s.ok()) ++failures;
          seen[t].push_back(i);
          callback_threads.insert(std::this_thread::get_id());
        };
        if (i % 5 == 4) {
          r.counters.completed_count += 1;
          store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(i + 1)), done);
        } else {
          store->ReserveIds(r.spec.key, i + 1, done);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  store->Flush();

  const uint64_t batches = store->batches_committed() - batches_before;
  const uint64_t ops = store->ops_committed() - ops_before;
  std::cout << "[ group commit ] " << kThreads * kOpsPerThread << " ops from " << kThreads
            << " threads in " << batches << " batches" << std::endl;
  RecordProperty("batches", static_cast<int>(batches));
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(ops, static_cast<uint64_t>(kThreads * (kOpsPerThread + 1)));  // + the records
  EXPECT_LT(batches, ops);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<size_t>(kOpsPerThread));
    for (int i = 0; i < kOpsPerThread; ++i) ASSERT_EQ(seen[t][i], i) << "caller " << t;
  }
  EXPECT_EQ(callback_threads.size(), 1u) << "every callback runs on the one writer thread";
  EXPECT_EQ(callback_threads.count(std::this_thread::get_id()), 0u);
  {
    std::lock_guard lock(latency_mu);
    EXPECT_EQ(latencies.size(), batches);
    for (int64_t micros : latencies) EXPECT_GE(micros, 0);
  }

  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), static_cast<size_t>(kThreads));
  for (const auto& p : *loaded) {
    EXPECT_EQ(p.id_counter, kOpsPerThread);
    EXPECT_EQ(p.record.counters.completed_count, kOpsPerThread / 5);
    auto listed = store->ListCompleted(p.record.spec.key, 0);
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{250, 245, 240, 235, 230}));
  }
}

TEST_F(SqliteStoreTest, ReopenAfterCloseKeepsEverything) {
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/2);
  r.generation = 3;
  r.sticky = StickyState::kPaused;
  std::vector<CompletedCheckpoint> expected;
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    // No Flush and no waiting: the destructor applies everything queued before closing.
    store->PutPipeline(r, nullptr);
    store->ReserveIds(r.spec.key, 1000, nullptr);
    for (int64_t id = 1; id <= 4; ++id) {
      auto cp =
          MakeCheckpoint(id, id == 1 ? CheckpointKind::kSavepoint : CheckpointKind::kCheckpoint);
      r.counters.completed_count = id;
      r.last_completed_id = id;
      store->CommitCheckpoint(CommitOf(r, cp), nullptr);
      if (id != 2) expected.insert(expected.begin(), cp);
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "ckptd.db-wal")) << "a clean close checkpoints the WAL";
  auto store = OpenStore();
  ASSERT_TRUE(store);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record, r);
  EXPECT_EQ((*loaded)[0].id_counter, 1000);
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, expected);
}

TEST_F(SqliteStoreTest, AHistoryIdOutOfRangeQuarantinesItsPipelineAtLoad) {
  PipelineRecord r = MakeRecord("j", "p");
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    store->PutPipeline(r, nullptr);
    store->ReserveIds(r.spec.key, 1000, nullptr);
    r.last_completed_id = 1;
    store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1, CheckpointKind::kSavepoint)), nullptr);
  }
  {
    // A damaged row: an id no pipeline can hand out (the coordinator holds ids in 62 bits).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    const std::string sql =
        "UPDATE checkpoints SET checkpoint_id = " + std::to_string(kMaxCheckpointId + 1) +
        " WHERE checkpoint_id = 1";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = OpenStore();
  ASSERT_TRUE(store);
  auto loaded = store->LoadPipelines();
  // The damaged pipeline alone is quarantined; the load goes on.
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(loaded->empty());
  auto unreadable = store->UnreadableRecords();
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].pipeline, r.spec.key);
  EXPECT_NE(unreadable[0].reason.find("outside 1.." + std::to_string(kMaxCheckpointId)),
            std::string::npos)
      << unreadable[0].reason;
}

TEST_F(SqliteStoreTest, UnrestorableMarksThatDoNotReadQuarantineTheirPipelineAlone) {
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    for (const char* name : {"good", "bad"}) {
      PipelineRecord r = MakeRecord("j", name);
      r.unrestorable_ids = {4};
      ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
    }
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    const char* sql =
        "UPDATE pipelines SET unrestorable_ids = '[4,\"x\"]' WHERE pipeline_id = 'bad'";
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = OpenStore();
  ASSERT_TRUE(store);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record.unrestorable_ids, std::vector<int64_t>{4});
  auto unreadable = store->UnreadableRecords();
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].pipeline.pipeline_id, "bad");
  EXPECT_NE(unreadable[0].reason.find("unrestorable_ids"), std::string::npos)
      << unreadable[0].reason;
}

TEST_F(SqliteStoreTest, ReadsAnswerWhileTheWriterIsBusy) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  PipelineRecord r = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  WriterGate gate;
  store->ReserveIds(r.spec.key, 5, gate.Callback());
  ASSERT_TRUE(gate.WaitEntered());
  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), nullptr);  // queued behind the gate
  // The writer thread is stuck; reads go through their own connection.
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].id_counter, 5);
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  gate.Release();
  store->Flush();
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
}

TEST_F(SqliteStoreTest, GarbageFileIsRefusedAndLeftUntouched) {
  std::string garbage;
  for (int i = 0; i < 2000; ++i) garbage += "not a database " + std::to_string(i) + "\n";
  {
    std::ofstream out(db_path(), std::ios::binary);
    out << garbage;
  }
  auto store = SqliteStore::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss) << "exit 65: not restarted into it";
  EXPECT_NE(store.status().message().find(db_path().string()), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFile(db_path()), garbage);
  EXPECT_FALSE(fs::exists(dir_ / "ckptd.db-wal"));
  EXPECT_FALSE(fs::exists(dir_ / "ckptd.db-shm"));
}

TEST_F(SqliteStoreTest, ForeignSqliteDatabaseIsRefused) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users (id INTEGER); INSERT INTO users VALUES (7);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string before = ReadFile(db_path());
  auto store = SqliteStore::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find(db_path().string()), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("not a ckptd one"), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("table users"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(ReadFile(db_path()), before);
}

TEST_F(SqliteStoreTest, OtherApplicationIdOrNewerSchemaIsRefused) {
  { ASSERT_TRUE(OpenStore()); }
  auto set_pragma = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  };
  const std::string newer = std::to_string(SqliteStore::kSchemaVersion + 1);
  set_pragma("PRAGMA user_version = " + newer);
  auto store = SqliteStore::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find("schema version " + newer), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("newer"), std::string::npos) << store.status().message();

  set_pragma("PRAGMA user_version = " + std::to_string(SqliteStore::kSchemaVersion) +
             "; PRAGMA application_id = 1234");
  store = SqliteStore::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not a ckptd one"), std::string::npos)
      << store.status().message();

  set_pragma("PRAGMA application_id = " + std::to_string(SqliteStore::kApplicationId));
  EXPECT_TRUE(OpenStore());
}

TEST_F(SqliteStoreTest, DataDirThatCannotBeCreatedIsAnError) {
  { std::ofstream(dir_ / "plain-file") << "x"; }
  const std::string data_dir = (dir_ / "plain-file" / "data").string();
  auto store = SqliteStore::Open(data_dir);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(data_dir), std::string::npos) << store.status().message();

  store = SqliteStore::Open((dir_ / "plain-file").string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("plain-file"), std::string::npos)
      << store.status().message();
}

TEST_F(SqliteStoreTest, CommitWithUnknownOutcomeReportsNeitherAndStopsWriting) {
  std::promise<Status> fatal;
  auto fatal_future = fatal.get_future();
  SqliteStoreOptions options;
  options.vfs = FaultVfsName();
  options.on_fatal = [&](const Status& s) { fatal.set_value(s); };
  auto store = OpenStore(std::move(options));
  ASSERT_TRUE(store);
  PipelineRecord r = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());

  std::atomic<int> callbacks{0};
  g_fail_sync = true;
  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), [&](Status) { callbacks.fetch_add(1); });
  ASSERT_EQ(fatal_future.wait_for(kDeadline), std::future_status::ready);
  g_fail_sync = false;
  EXPECT_GT(g_failed_syncs.load(), 0);
  Status fatal_status = fatal_future.get();
  EXPECT_EQ(fatal_status.code(), StatusCode::kUnavailable);
  EXPECT_NE(fatal_status.message().find("unknown outcome"), std::string::npos)
      << fatal_status.message();

  // Later writes fail cleanly without touching the file; the unknown one is never reported.
  Status later = Await([&](auto done) { store->ReserveIds(r.spec.key, 10, done); });
  EXPECT_EQ(later.code(), StatusCode::kUnavailable) << later.ToString();
  store->Flush();
  EXPECT_EQ(callbacks.load(), 0);
  store.reset();

  // What is on disk is consistent either way, and the store opens again.
  auto reopened = OpenStore();
  ASSERT_TRUE(reopened);
  auto loaded = reopened->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->size(), 1u);
}

TEST_F(SqliteStoreTest, DiskFullAtCommitFailsCleanlyAndTheStoreGoesOnWhenSpaceReturns) {
  std::atomic<bool> fatal{false};
  SqliteStoreOptions options;
  options.vfs = FaultVfsName();
  options.on_fatal = [&](const Status&) { fatal = true; };
  auto store = OpenStore(std::move(options));
  ASSERT_TRUE(store);
  PipelineRecord r = MakeRecord("j", "p", 100);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());

  g_wal_disk_full = true;
  Status refused =
      Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), done); });
  g_wal_disk_full = false;
  EXPECT_GT(g_refused_wal_writes.load(), 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("disk full"), std::string::npos) << refused.ToString();
  EXPECT_FALSE(fatal.load()) << "a refused write is a known outcome, not a reason to stop";

  ASSERT_TRUE(
      Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(2)), done); }).ok())
      << "the store goes on once space returns";
  store.reset();

  auto reopened = OpenStore();
  ASSERT_TRUE(reopened);
  auto listed = reopened->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u) << "the refused checkpoint must not reappear after a reopen";
  EXPECT_EQ((*listed)[0].checkpoint_id, 2);
}

}  // namespace
}  // namespace ckpt
