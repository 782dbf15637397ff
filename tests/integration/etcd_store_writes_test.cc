// How the etcd store's writes reach etcd (Debian's, started by support/etcd_cluster.h): fenced by
// the leader key (a write after it was replaced stops the store), held while the lease is not
// confirmed, and a batch split into txns of at most max_txn_ops that land in order (the check of
// that setting against what the members take included).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "etcd_store_fixture.h"
#include "support/etcd_cluster.h"
#include "support/need_tool.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(EtcdStoreTest, AWriteAfterTheLeaderKeyWasReplacedIsRefusedAndStopsTheStore) {
  std::promise<Status> fatal;
  auto store = OpenSharedFenced(prefix_, [&fatal](const Status& s) { fatal.set_value(s); });
  PipelineRecord r = MakeRecord("job", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());

  // Another daemon's leadership: the key goes (lease expired) and comes back with a new create
  // revision. The deposed leader's next write must not land.
  etcdserverpb::TxnRequest txn;
  auto* del = txn.add_success()->mutable_request_delete_range();
  del->set_key(prefix_ + "/election/test");
  etcdserverpb::TxnResponse response;
  EtcdError error;
  ASSERT_TRUE(client_->Txn(txn, &response, &error));
  MakeFence(*client_, prefix_ + "/election/test");

  PipelineRecord second = MakeRecord("job", "q");
  store->PutPipeline(second, [](Status) { ADD_FAILURE() << "a fenced-out write was answered"; });
  auto future = fatal.get_future();
  ASSERT_EQ(future.wait_for(seconds(10)), std::future_status::ready);
  const Status why = future.get();
  EXPECT_EQ(why.code(), StatusCode::kFailedPrecondition) << why.ToString();
  EXPECT_NE(why.message().find("leadership lost"), std::string::npos) << why.ToString();
  for (const auto& kv : Dump(*client_, prefix_ + "/pipelines/job/q")) {
    ADD_FAILURE() << "written despite the fence: " << kv.key();
  }
}

TEST_F(EtcdStoreTest, NothingIsSentWhileTheLeaseIsNotConfirmed) {
  std::atomic<bool> confirmed{false};
  auto store = OpenSharedFenced(prefix_, nullptr, [&confirmed] { return confirmed.load(); });
  PipelineRecord r = MakeRecord("job", "p");
  Status s = Await([&](auto done) { store->PutPipeline(r, done); });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Dump(*client_, prefix_ + "/pipelines/").empty());
  confirmed = true;  // etcd answers again: the store goes on
  EXPECT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  EXPECT_EQ(Dump(*client_, prefix_ + "/pipelines/").size(), 2u);  // spec and progress
}

// With retained 1, two commits of one pipeline in one batch: the second's trim deletes the
// first's key, which etcd refuses in the txn that puts it, so they go in two.
TEST_F(EtcdStoreTest, TwoCommitsOfOnePipelineInOneBatchBothLandAndTheOlderIsTrimmed) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "p", /*retained=*/1);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  WriterGate gate;
  store->Probe(gate.Callback());
  ASSERT_TRUE(gate.WaitEntered());
  Outcomes outcomes;
  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), outcomes.Record(1));
  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(2)), outcomes.Record(2));
  gate.Release();
  store->Flush();
  auto seen = outcomes.seen();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [n, s] : seen) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{2}));
  EXPECT_EQ(Dump(*client_, prefix_ + "/checkpoints/job/p/").size(), 1u);
}

TEST_F(EtcdStoreTest, ABatchLargerThanOneTransactionIsSplitAndEveryOpLands) {
  auto store = OpenSharedFenced(prefix_);
  Outcomes outcomes;
  constexpr int kPipelines = 300;  // 600 puts: at least 5 txns of at most 128 operations
  for (int i = 0; i < kPipelines; ++i) {
    store->PutPipeline(MakeRecord("job", "p" + std::to_string(i)), outcomes.Record(i));
  }
  store->Flush();
  auto seen = outcomes.seen();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kPipelines));
  for (const auto& [n, s] : seen) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  EXPECT_GE(store->backend().txns_committed(), 5u);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->size(), static_cast<size_t>(kPipelines));
}

// store.etcd.max_txn_ops above what the members take (the shared cluster runs etcd's default,
// 128) is found by the takeover's check, before a write: etcd would refuse the first full batch,
// and a refused txn stops the store.
TEST_F(EtcdStoreTest, MaxTxnOpsAboveWhatTheMembersTakeIsRefusedByTheCheck) {
  EtcdBackend too_large(ClientFor(SharedCluster().endpoints(), prefix_, 5000, 512),
                        [] { return true; });
  const Status refused = too_large.CheckTxnLimit();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.message().find("store.etcd.max_txn_ops"), std::string::npos)
      << refused.ToString();
  EXPECT_NE(refused.message().find("--max-txn-ops 512"), std::string::npos) << refused.ToString();
  EtcdBackend fits(client_, [] { return true; });  // the default: 128
  EXPECT_TRUE(fits.CheckTxnLimit().ok());
}

// Members started with a higher --max-txn-ops, and the setting raised to it: one batch of 600
// puts goes in two txns (at the default 128 it takes five, above), and every op lands.
TEST(EtcdLargeTxnTest, ABatchGoesInTxnsOfMaxTxnOpsWhenTheMembersTakeThem) {
  CKPT_NEED_ETCD();
  testing::EtcdCluster cluster(1, {"--max-txn-ops", "512"});
  auto client = ClientFor(cluster.endpoints(), "/large-txns", 5000, 512);
  EtcdBackend backend(client, [] { return true; });
  const std::string fence = "/large-txns/election/test";
  backend.SetFence(fence, MakeFence(*client, fence));
  ASSERT_TRUE(backend.CheckTxnLimit().ok());
  constexpr int kPipelines = 300;  // a spec and a progress put each
  std::vector<WriteOp> ops;
  for (int i = 0; i < kPipelines; ++i) {
    ops.push_back(PutPipelineOp{MakeRecord("job", "p" + std::to_string(i))});
  }
  const BatchResult result = backend.ApplyBatch(ops);
  ASSERT_EQ(result.outcome, BatchResult::Outcome::kCommitted) << result.status.ToString();
  for (const Status& s : result.results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(backend.txns_committed(), 2u);
  auto loaded = backend.LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->size(), static_cast<size_t>(kPipelines));
}

// A pipeline's progress is its keys' last write (etcd_layout.h), so a batch's txns must land in
// order: two rounds of commits of 200 pipelines in one batch (one put each, their ids reserved:
// several txns) land round after round, and a reload finds every pipeline at its second. (Txns
// sent concurrently would break this: it was tried, see docs/perf-notes/notebook.md.)
TEST_F(EtcdStoreTest, TwoRoundsOfCommitsInOneBatchLandRoundAfterRound) {
  constexpr int kPipelines = 200;
  std::vector<PipelineRecord> records;
  {
    auto store = OpenSharedFenced(prefix_);
    for (int i = 0; i < kPipelines; ++i) {
      records.push_back(MakeRecord("job", "p" + std::to_string(i)));
      store->PutPipeline(records.back(), [](Status) {});
      store->ReserveIds(records.back().spec.key, 100, [](Status) {});
    }
    store->Flush();
    WriterGate gate;
    store->Probe(gate.Callback());
    ASSERT_TRUE(gate.WaitEntered());
    Outcomes outcomes;
    for (int id = 1; id <= 2; ++id) {
      for (int i = 0; i < kPipelines; ++i) {
        CheckpointCommit commit = CommitOf(records[i], MakeCheckpoint(id));
        commit.progress_after.last_completed_id = id;
        store->CommitCheckpoint(commit, outcomes.Record(id * kPipelines + i));
      }
    }
    gate.Release();
    store->Flush();
    auto seen = outcomes.seen();
    ASSERT_EQ(seen.size(), static_cast<size_t>(2 * kPipelines));
    for (const auto& [n, s] : seen) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  }
  std::map<std::string, std::map<int64_t, int64_t>> revisions;  // pipeline -> id -> revision
  for (const auto& kv : Dump(*client_, prefix_ + "/checkpoints/job/")) {
    const std::string key = kv.key();
    const size_t id_at = key.rfind('/') + 1;
    const std::string pipeline = key.substr(0, id_at);
    revisions[pipeline][std::stoll(key.substr(id_at, 19))] = kv.mod_revision();
  }
  ASSERT_EQ(revisions.size(), static_cast<size_t>(kPipelines));
  for (const auto& [pipeline, by_id] : revisions) {
    ASSERT_EQ(by_id.size(), 2u) << pipeline;
    EXPECT_LT(by_id.at(1), by_id.at(2)) << pipeline << ": its second commit landed first";
  }
  auto store = OpenSharedFenced(prefix_);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), static_cast<size_t>(kPipelines));
  for (const auto& pipeline : *loaded) {
    EXPECT_EQ(pipeline.record.progress().last_completed_id, 2)
        << pipeline.record.spec.key.ToString();
  }
}

}  // namespace
}  // namespace ckpt
