// A standby's copy of the etcd prefix, kept warm by a watch: its takeover loads from it exactly
// what a full read loads (and writes on from there), and falls back to a full read when the copy
// cannot say where a history starts.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "etcd_store_fixture.h"
#include "support/eventually.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A standby keeps a copy of the prefix warm by watching it: after the leader's puts, commits,
// trims, savepoints, progress writes and a delete, the standby's takeover loads from that copy
// exactly what a full read loads.
TEST_F(EtcdStoreTest, AStandbysWatchedCopyLoadsWhatAFullReadLoads) {
  auto leader = OpenSharedFenced(prefix_);
  PipelineRecord a = MakeRecord("job", "a", /*retained=*/3);
  PipelineRecord b = MakeRecord("job", "b");
  PipelineRecord gone = MakeRecord("job", "gone");
  for (PipelineRecord* r : {&a, &b, &gone}) {
    ASSERT_TRUE(Await([&](auto done) { leader->PutPipeline(*r, done); }).ok());
    ASSERT_TRUE(Await([&](auto done) { leader->ReserveIds(r->spec.key, 100, done); }).ok());
  }
  int64_t next_a = 1;
  GroupCommitStore* writer = leader.get();
  auto commit_a = [&](CheckpointKind kind) {
    CompletedCheckpoint cp = MakeCheckpoint(next_a++, kind);
    a.counters.completed_count += 1;
    a.last_completed_id = cp.checkpoint_id;
    a.last_completed_kind = kind;
    a.last_completed_at_ms = cp.finished_at_ms;
    return Await([&](auto done) { writer->CommitCheckpoint(CommitOf(a, cp), done); });
  };
  for (int n = 0; n < 5; ++n) ASSERT_TRUE(commit_a(CheckpointKind::kCheckpoint).ok());
  for (int64_t id = 1; id <= 2; ++id) {  // "gone" is deleted later, with its history
    ASSERT_TRUE(Await([&](auto done) {
                  leader->CommitCheckpoint(CommitOf(gone, MakeCheckpoint(id)), done);
                }).ok());
  }

  auto standby =
      EtcdStore::Create(ClientFor(SharedCluster().endpoints(), prefix_), [] { return true; });
  standby->backend().StartWarming();
  ASSERT_TRUE(testing::Eventually([&] {
    return standby->backend().warm_copy_progress().first >= 1;
  })) << "the standby never loaded its copy";

  // Written while it watches: trims (retained 3), a savepoint, progress alone, a delete, a new
  // pipeline, a reservation.
  for (int n = 0; n < 9; ++n) {
    ASSERT_TRUE(commit_a(n == 4 ? CheckpointKind::kSavepoint : CheckpointKind::kCheckpoint).ok());
  }
  b.counters.failed_count = 2;
  b.counters.consecutive_failures = 2;
  ASSERT_TRUE(Await([&](auto done) { leader->PutProgress(b.spec.key, b.progress(), done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { leader->DeletePipeline(gone.spec.key, done); }).ok());
  PipelineRecord later = MakeRecord("job", "later");
  ASSERT_TRUE(Await([&](auto done) { leader->PutPipeline(later, done); }).ok());
  // Created again under the old name, with a checkpoint of its own; and one written in chunks.
  gone.last_completed_id = 101;
  ASSERT_TRUE(Await([&](auto done) { leader->PutPipeline(gone, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) {
                leader->CommitCheckpoint(CommitOf(gone, MakeCheckpoint(101)), done);
              }).ok());
  PipelineRecord wide = MakeRecord("job", "wide", /*retained=*/1);
  ASSERT_TRUE(Await([&](auto done) { leader->PutPipeline(wide, done); }).ok());
  const CompletedCheckpoint big = WideCheckpoint(1);
  wide.last_completed_id = 1;
  ASSERT_TRUE(Await([&](auto done) { leader->CommitCheckpoint(CommitOf(wide, big), done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { leader->ReserveIds(b.spec.key, 300, done); }).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return standby->backend().warm_copy_progress().second > 0; }));

  auto expected = leader->LoadPipelines();  // a full read
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  auto expected_history = leader->ListCompleted(a.spec.key, 0);
  ASSERT_TRUE(expected_history.ok());
  leader.reset();  // dies; the standby takes over under the same fence

  const auto fence = Dump(*client_, prefix_ + "/election/test");
  ASSERT_EQ(fence.size(), 1u);
  standby->backend().SetFence(prefix_ + "/election/test", fence[0].create_revision());
  auto loaded = standby->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(standby->backend().last_load_warm());
  ASSERT_EQ(loaded->size(), expected->size());
  for (size_t i = 0; i < loaded->size(); ++i) {
    EXPECT_EQ((*loaded)[i].record, (*expected)[i].record)
        << (*loaded)[i].record.spec.key.ToString();
    EXPECT_EQ((*loaded)[i].id_counter, (*expected)[i].id_counter);
  }
  auto history = standby->ListCompleted(a.spec.key, 0);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(Ids(*history), Ids(*expected_history));
  {
    auto reader = OpenSharedFenced(prefix_);  // a full read of the same prefix, for its view
    ASSERT_TRUE(reader->LoadPipelines().ok());
    EXPECT_FALSE(reader->backend().last_load_warm());
    EXPECT_EQ(standby->backend().DescribeView(), reader->backend().DescribeView());
    const std::string view = standby->backend().DescribeView();
    EXPECT_NE(view.find("savepoints 10"), std::string::npos) << view;
    EXPECT_NE(view.find("job/gone record; checkpoints 101;"), std::string::npos) << view;
    EXPECT_NE(view.find("job/wide record; checkpoints 1; savepoints; chunked 1"), std::string::npos)
        << view;
  }
  // And it writes on from there.
  writer = standby.get();
  EXPECT_TRUE(commit_a(CheckpointKind::kCheckpoint).ok());
  history = standby->ListCompleted(a.spec.key, 3);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(Ids(*history), (std::vector<int64_t>{next_a - 1, next_a - 2, next_a - 3}));
}

// A copy that lost a pipeline's newest write while older ones stayed (not something ckptd
// writes: an operator's etcdctl) cannot say where that history starts: the takeover reads etcd.
TEST_F(EtcdStoreTest, AWarmCopyMissingANewestValueFallsBackToAFullRead) {
  auto leader = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "p");
  ASSERT_TRUE(Await([&](auto done) { leader->PutPipeline(r, done); }).ok());
  auto standby =
      EtcdStore::Create(ClientFor(SharedCluster().endpoints(), prefix_), [] { return true; });
  standby->backend().StartWarming();
  ASSERT_TRUE(
      testing::Eventually([&] { return standby->backend().warm_copy_progress().first >= 1; }));
  for (int64_t id = 1; id <= 3; ++id) {
    r.last_completed_id = id;
    ASSERT_TRUE(Await([&](auto done) {
                  leader->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)), done);
                }).ok());
  }
  const uint64_t events_before = standby->backend().warm_copy_progress().second;
  etcdserverpb::TxnRequest txn;  // etcdctl del of the newest checkpoint
  txn.add_success()->mutable_request_delete_range()->set_key(
      etcd::Layout(prefix_).CheckpointKey(r.spec.key, 3, CheckpointKind::kCheckpoint, false));
  etcdserverpb::TxnResponse response;
  EtcdError error;
  ASSERT_TRUE(client_->Txn(txn, &response, &error)) << error.status.ToString();
  ASSERT_TRUE(testing::Eventually(
      [&] { return standby->backend().warm_copy_progress().second > events_before; }));
  leader.reset();

  const auto fence = Dump(*client_, prefix_ + "/election/test");
  ASSERT_EQ(fence.size(), 1u);
  standby->backend().SetFence(prefix_ + "/election/test", fence[0].create_revision());
  const auto began = std::chrono::steady_clock::now();
  auto loaded = standby->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_FALSE(standby->backend().last_load_warm());
  // Told at once (the copy had caught up; only the value was missing), not by waiting it out.
  EXPECT_LT(std::chrono::steady_clock::now() - began, EtcdBackend::kWarmWait);
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record.last_completed_id, 2);  // what etcd now holds
}

}  // namespace
}  // namespace ckpt
