#include "support/fault_injecting_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "sqlite/sqlite_store.h"
#include "store_test_util.h"
#include "support/scoped_temp_dir.h"

namespace ckpt {
namespace {

namespace fs = std::filesystem;

// The double the integration tests use to make the store fail, over a real SQLite store.
class FaultInjectingStoreTest : public ::testing::Test {
 protected:
  ckpt::testing::ScopedTempDir temp_{"ckptd-fault-store"};
  const fs::path dir_ = temp_.path();
};

TEST_F(FaultInjectingStoreTest, FailsTheCallsItWasToldToInOrder) {
  auto sqlite = SqliteStore::Open(dir_.string());
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
  SqliteStore* inner = sqlite->get();
  FaultInjectingStore store(std::move(*sqlite));
  PipelineRecord r = MakeRecord("j", "p");
  PipelineRecord other = MakeRecord("j", "q");

  Outcomes outcomes;
  store.FailNextCommits(2, Status::Internal("disk on fire"));
  store.FailNextReserves(1, Status::Unavailable("reservation refused"), PipelineKey{"j", "p"});
  store.PutPipeline(r, outcomes.Record(0));
  store.CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), outcomes.Record(1));  // injected
  store.ReserveIds(other.spec.key, 50, outcomes.Record(2));  // not the targeted pipeline
  store.ReserveIds(r.spec.key, 100, outcomes.Record(3));     // injected
  store.CommitCheckpoint(CommitOf(other, MakeCheckpoint(2)),
                         outcomes.Record(4));  // injected (any pipeline)
  store.CommitCheckpoint(CommitOf(r, MakeCheckpoint(3)), outcomes.Record(5));
  store.ReserveIds(r.spec.key, 200, outcomes.Record(6));
  store.Flush();

  const auto results = outcomes.seen();
  ASSERT_EQ(results.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(results[i].first, i) << "callbacks in call order";
  EXPECT_TRUE(results[0].second.ok());
  EXPECT_EQ(results[1].second.code(), StatusCode::kInternal);
  EXPECT_EQ(results[1].second.message(), "disk on fire");
  EXPECT_TRUE(results[2].second.ok());
  EXPECT_EQ(results[3].second.code(), StatusCode::kUnavailable);
  EXPECT_EQ(results[4].second.message(), "disk on fire");
  EXPECT_TRUE(results[5].second.ok()) << results[5].second.ToString();
  EXPECT_TRUE(results[6].second.ok());
  EXPECT_EQ(store.injected_commit_failures(), 2);
  EXPECT_EQ(store.injected_reserve_failures(), 1);

  // Nothing of the failed calls was written.
  auto listed = store.ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{3}));
  listed = store.ListCompleted(other.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  EXPECT_EQ(*inner->LoadIdCounter(r.spec.key), 200);
  EXPECT_EQ(*inner->LoadIdCounter(other.spec.key), 50);

  // A new plan replaces the old one; count 0 cancels.
  store.FailNextCommits(5, Status::Internal("x"));
  store.FailNextCommits(0, Status::Internal("x"));
  EXPECT_TRUE(
      Await([&](auto done) { store.CommitCheckpoint(CommitOf(r, MakeCheckpoint(4)), done); }).ok());

  ASSERT_TRUE(Await([&](auto done) { store.DeletePipeline(r.spec.key, done); }).ok());
  auto loaded = store.LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty());  // `other` never had a record: its commit was the failed one
}

}  // namespace
}  // namespace ckpt
