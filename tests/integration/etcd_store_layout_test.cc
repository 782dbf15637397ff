// What the etcd store leaves under its prefix (etcd/etcd_layout.h), against a real etcd: the
// layout version (an unknown one is refused), checkpoints too large for one value in chunks, trims
// of the history spread over commits and around savepoints, a group round's keys in one txn,
// deletes that take their chunks along and spare the newest, and a completion's one write. Each
// read back by a new leader's load.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "etcd_store_fixture.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Lowering `retained` by hundreds must not make one commit's trim exceed etcd's 128 operations
// (etcd would refuse the txn, and every daemon of the group would stop on it in turn).
TEST_F(EtcdStoreTest, ALargeCutOfRetainedIsTrimmedOverSeveralCommits) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "deep", /*retained=*/300);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  constexpr int kStored = 200;
  Outcomes outcomes;
  for (int id = 1; id <= kStored; ++id) {
    store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)), outcomes.Record(id));
  }
  store->Flush();
  for (const auto& [n, s] : outcomes.seen()) ASSERT_TRUE(s.ok()) << n << ": " << s.ToString();
  r.spec.retained = 1;
  int64_t id = kStored;
  for (int commit = 0; commit < 8; ++commit) {
    ++id;
    ASSERT_TRUE(Await([&](auto done) {
                  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)), done);
                }).ok())
        << "commit " << id;
  }
  EXPECT_EQ(Dump(*client_, prefix_ + "/checkpoints/job/deep/").size(), 1u);
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{id}));
}

TEST_F(EtcdStoreTest, ACheckpointTooLargeForOneValueIsWrittenInChunksAndTrimmedWithThem) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "wide", /*retained=*/1);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  const CompletedCheckpoint big = WideCheckpoint(1);
  ASSERT_TRUE(Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, big), done); }).ok());
  const size_t chunks = Dump(*client_, prefix_ + "/chunks/").size();
  EXPECT_GE(chunks, 3u) << "about 2 MB of states should not fit one value";
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front(), big);

  // Retention 1: the next checkpoint pushes it out, chunks and all.
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(2)), done);
              }).ok());
  EXPECT_TRUE(Dump(*client_, prefix_ + "/chunks/").empty());
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{2}));
}

// A group round of three members, one of them too wide for a value: its chunks go first, then
// one txn (the commit point) writes every member's checkpoint key and the group's; a new leader
// loads every member at the round and the group's progress.
TEST_F(EtcdStoreTest, AGroupRoundLandsEveryMembersCheckpointKeyInOneTxn) {
  auto store = OpenSharedFenced(prefix_);
  std::vector<PipelineRecord> members = {MakeRecord("a", "p"), MakeRecord("b", "p"),
                                         MakeRecord("c", "wide")};
  AlignmentGroupSpec spec;
  spec.name = "ledger";
  ASSERT_TRUE(Await([&](auto done) { store->PutGroup(spec, false, done); }).ok());
  GroupRoundCommit round;
  round.group = "ledger";
  round.progress_after = {7, 7, 700, 1700000000007};
  for (PipelineRecord& r : members) {
    ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
    CompletedCheckpoint cp =
        r.spec.key.pipeline_id == "wide" ? WideCheckpoint(7) : MakeCheckpoint(7);
    cp.alignment_group = "ledger";
    cp.position = 700;
    r.last_completed_id = 7;
    round.members.push_back(CommitOf(r, cp));
  }
  const uint64_t txns_before = store->backend().txns_committed();
  ASSERT_TRUE(Await([&](auto done) { store->CommitGroupRound(round, done); }).ok());
  EXPECT_GE(Dump(*client_, prefix_ + "/chunks/").size(), 3u) << "the wide member's states";
  std::set<int64_t> revisions;
  for (const auto& kv : Dump(*client_, prefix_ + "/checkpoints/"))
    revisions.insert(kv.mod_revision());
  revisions.insert(Dump(*client_, prefix_ + "/groups/ledger").at(0).mod_revision());
  EXPECT_EQ(revisions.size(), 1u) << "every member's key and the group's in one txn";
  EXPECT_GE(store->backend().txns_committed() - txns_before, 2u) << "chunks first, then the round";

  store.reset();
  store = OpenSharedFenced(prefix_);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 3u);
  for (size_t m = 0; m < 3; ++m) {
    EXPECT_EQ((*loaded)[m].record, members[m]);
    ASSERT_TRUE((*loaded)[m].newest.has_value());
    EXPECT_EQ(*(*loaded)[m].newest, round.members[m].checkpoint);
  }
  auto groups = store->LoadGroups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].progress, round.progress_after);
}

// A deleted checkpoint takes its chunks along; the newest one, whose value holds the pipeline's
// progress and where its history starts, is never deleted. A new leader loads the newest's
// states, chunks and all, as the restore point.
TEST_F(EtcdStoreTest, ADeleteTakesTheChunksAlongAndNeverTheNewestKey) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "wide", /*retained=*/5);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  r.last_completed_id = 1;
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, WideCheckpoint(1)), done);
              }).ok());
  r.last_completed_id = 2;
  const CompletedCheckpoint big = WideCheckpoint(2);
  ASSERT_TRUE(Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, big), done); }).ok());
  const size_t chunks_of_two = Dump(*client_, prefix_ + "/chunks/").size();
  ASSERT_TRUE(Await([&](auto done) { store->DeleteCheckpoints(r.spec.key, {1}, done); }).ok());
  EXPECT_EQ(Dump(*client_, prefix_ + "/chunks/").size(), chunks_of_two / 2);
  EXPECT_EQ(Dump(*client_, prefix_ + "/checkpoints/").size(), 1u);

  const Status newest = Await([&](auto done) { store->DeleteCheckpoints(r.spec.key, {2}, done); });
  EXPECT_EQ(newest.code(), StatusCode::kFailedPrecondition) << newest.ToString();
  EXPECT_EQ(Dump(*client_, prefix_ + "/checkpoints/").size(), 1u);

  store.reset();
  store = OpenSharedFenced(prefix_);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  ASSERT_TRUE((*loaded)[0].newest.has_value());
  EXPECT_EQ(*(*loaded)[0].newest, big);
  EXPECT_EQ((*loaded)[0].history, (std::vector<HistoryEntry>{{2, CheckpointKind::kCheckpoint}}));
}

// A completion is one etcd write: the progress after it rides in the checkpoint's value, and the
// progress key is left alone (a load takes whichever was written last: the contract's tests).
TEST_F(EtcdStoreTest, ACompletionWritesItsCheckpointKeyAndLeavesTheProgressKeyAlone) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(r.spec.key, 100, done); }).ok());
  const auto progress_before = Dump(*client_, prefix_ + "/pipelines/job/p/progress");
  ASSERT_EQ(progress_before.size(), 1u);
  const uint64_t txns_before = store->backend().txns_committed();
  for (int64_t id = 1; id <= 3; ++id) {
    r.counters.completed_count = id;
    r.last_completed_id = id;
    ASSERT_TRUE(Await([&](auto done) {
                  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)), done);
                }).ok());
  }
  EXPECT_EQ(store->backend().txns_committed() - txns_before, 3u);
  const auto progress_after = Dump(*client_, prefix_ + "/pipelines/job/p/progress");
  ASSERT_EQ(progress_after.size(), 1u);
  EXPECT_EQ(progress_after[0].mod_revision(), progress_before[0].mod_revision());
  EXPECT_EQ(Dump(*client_, prefix_ + "/checkpoints/job/p/").size(), 3u);

  store.reset();  // a new leader loads the progress of the last commit
  store = OpenSharedFenced(prefix_);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record, r);
}

// A prefix written by a ckptd of a layout this one does not know is refused before anything is
// read into the view or written; the first write of a leadership records the layout.
TEST_F(EtcdStoreTest, ALayoutThisCkptdDoesNotKnowIsRefusedAndItsOwnIsRecorded) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  auto layout = Dump(*client_, prefix_ + "/layout");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0].value(), std::to_string(etcd::kLayoutVersion));

  store.reset();
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(prefix_ + "/layout");
  put->set_value("99");
  etcdserverpb::TxnResponse response;
  EtcdError error;
  ASSERT_TRUE(client_->Txn(txn, &response, &error)) << error.status.ToString();
  store = OpenSharedFenced(prefix_);
  auto loaded = store->LoadPipelines();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kDataLoss) << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find("layout 99"), std::string::npos)
      << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find("newer ckptd"), std::string::npos)
      << loaded.status().ToString();
}

// Checkpoints that leave the history are hidden at once and deleted a few at a time, as range
// deletes that skip the savepoints stored among them; a new leader hides the same ones.
TEST_F(EtcdStoreTest, CheckpointsOutOfTheHistoryAreHiddenAtOnceAndDeletedInRangesAroundSavepoints) {
  auto store = OpenSharedFenced(prefix_);
  PipelineRecord r = MakeRecord("job", "p", /*retained=*/3);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  const std::set<int64_t> savepoints = {5, 6, 17};
  std::vector<int64_t> checkpoints;
  auto expected_listing = [&] {
    std::vector<int64_t> ids(savepoints.begin(), savepoints.end());
    ids.insert(ids.end(), checkpoints.end() - std::min<size_t>(3, checkpoints.size()),
               checkpoints.end());
    std::sort(ids.rbegin(), ids.rend());
    ids.erase(
        std::remove_if(ids.begin(), ids.end(), [&](int64_t id) { return id > checkpoints.back(); }),
        ids.end());
    return ids;
  };
  // Trims go every third commit (retained 3): 31 leaves checkpoint 28 hidden but stored.
  for (int64_t id = 1; id <= 31; ++id) {
    const bool savepoint = savepoints.count(id) > 0;
    if (!savepoint) checkpoints.push_back(id);
    ASSERT_TRUE(Await([&](auto done) {
                  store->CommitCheckpoint(
                      CommitOf(r, MakeCheckpoint(id, savepoint ? CheckpointKind::kSavepoint
                                                               : CheckpointKind::kCheckpoint)),
                      done);
                }).ok());
    if (savepoint) continue;
    auto listed = store->ListCompleted(r.spec.key, 0);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_EQ(Ids(*listed), expected_listing()) << "after " << id;
    const size_t stored = Dump(*client_, prefix_ + "/checkpoints/job/p/").size();
    EXPECT_LE(stored, 3u + 3u + savepoints.size()) << "after " << id << ": trims not made";
  }
  for (int64_t id : savepoints) {
    const std::string key =
        etcd::Layout(prefix_).CheckpointKey(r.spec.key, id, CheckpointKind::kSavepoint, false);
    EXPECT_EQ(Dump(*client_, key).size(), 1u) << "savepoint " << id << " was trimmed";
  }
  auto before = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(before.ok());

  store.reset();
  store = OpenSharedFenced(prefix_);
  ASSERT_TRUE(store->LoadPipelines().ok());
  auto after = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(Ids(*after), Ids(*before));
  // A page that starts among hidden ones still finds the savepoints below them.
  ASSERT_EQ(Dump(*client_, etcd::Layout(prefix_).CheckpointKey(r.spec.key, 28,
                                                               CheckpointKind::kCheckpoint, false))
                .size(),
            1u);
  auto page = store->ListCompleted(r.spec.key, 2, /*before_id=*/29);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(Ids(*page), (std::vector<int64_t>{17, 6}));

  // An id below the history (ids only grow) is refused alone; the store goes on.
  Status old =
      Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(3)), done); });
  EXPECT_EQ(old.code(), StatusCode::kFailedPrecondition) << old.ToString();
  EXPECT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(32)), done);
              }).ok());
}

}  // namespace
}  // namespace ckpt
