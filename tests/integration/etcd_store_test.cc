// The etcd backend against a real etcd (Debian's, started by support/etcd_cluster.h): the
// MetadataStore contract, the fence, writes of unknown outcome (a fake etcd that never answers),
// the lease gate, chunked checkpoints and batches split to etcd's limits. And the election: who
// leads, takeover on resignation, a revoked lease, etcd down and back.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "../unit/metadata_store_contract.h"
#include "etcd/etcd_election.h"
#include "etcd/etcd_store.h"
#include "support/etcd_cluster.h"
#include "support/eventually.h"
#include "support/need_tool.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One cluster for the whole program: each test works under a prefix of its own.
testing::EtcdCluster& SharedCluster() {
  // One per test program, ended with it: the destructor kills the members and removes their
  // data dir (a crash still takes the members down: PR_SET_PDEATHSIG).
  static testing::EtcdCluster cluster(1);
  return cluster;
}

std::shared_ptr<EtcdClient> ClientFor(const EtcdSettings& settings) {
  auto client = EtcdClient::Create(settings);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

std::shared_ptr<EtcdClient> ClientFor(const std::vector<std::string>& endpoints,
                                      const std::string& prefix, int64_t request_timeout_ms = 5000,
                                      int64_t max_txn_ops = EtcdSettings{}.max_txn_ops) {
  EtcdSettings settings;
  settings.endpoints = endpoints;
  settings.prefix = prefix;
  settings.request_timeout_ms = request_timeout_ms;
  settings.max_txn_ops = max_txn_ops;
  return ClientFor(settings);
}

// A fence key of our own making, as a leader's candidate key would be: its create revision.
int64_t MakeFence(EtcdClient& client, const std::string& key) {
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value("test");
  etcdserverpb::TxnResponse response;
  EtcdError error;
  EXPECT_TRUE(client.Txn(txn, &response, &error)) << error.status.ToString();
  return response.header().revision();
}

std::vector<etcdserverpb::KeyValue> Dump(EtcdClient& client, const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  auto response = client.Range(request);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  return {response->kvs().begin(), response->kvs().end()};
}

std::unique_ptr<EtcdStore> OpenSharedFenced(
    const std::string& prefix, std::function<void(const Status&)> on_fatal = nullptr,
    std::function<bool()> may_write = [] { return true; }) {
  auto client = ClientFor(SharedCluster().endpoints(), prefix);
  GroupCommitOptions options;
  if (on_fatal) options.on_fatal = std::move(on_fatal);
  auto store = EtcdStore::Create(client, std::move(may_write), std::move(options));
  const std::string fence = prefix + "/election/test";
  // Reopening under a prefix keeps its fence, as a leader keeps its key.
  auto existing = Dump(*client, fence);
  const int64_t revision =
      existing.empty() ? MakeFence(*client, fence) : existing.front().create_revision();
  store->backend().SetFence(fence, revision);
  return store;
}

// A checkpoint of 20,000 tasks: about 2 MB of states, too large for one etcd value (chunks).
CompletedCheckpoint WideCheckpoint(int64_t id) {
  CompletedCheckpoint cp = MakeCheckpoint(id);
  for (int t = 0; t < 20000; ++t) {
    cp.task_states["task-" + std::to_string(t)] = {
        "s3://bucket/state/a-rather-long-path/for/every/task/" + std::to_string(t), t, "crc"};
  }
  // Every task's figures, in the chunks beside its state.
  cp.task_figures.clear();
  for (const auto& [task, state] : cp.task_states) {
    cp.task_figures.push_back({task, "w-" + task, cp.triggered_at_ms + 10, {1, 2, 0, 0}});
  }
  return cp;
}

INSTANTIATE_TEST_SUITE_P(
    Etcd, MetadataStoreContract,
    ::testing::Values(Backend{"etcd",
                              [](const fs::path& dir) -> std::unique_ptr<GroupCommitStore> {
                                if (!testing::EtcdCluster::Installed()) return nullptr;
                                return OpenSharedFenced("/contract/" + dir.filename().string());
                              }}),
    [](const ::testing::TestParamInfo<Backend>& info) { return info.param.name; });

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CKPT_NEED_ETCD();
    prefix_ = "/t/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    client_ = ClientFor(SharedCluster().endpoints(), prefix_);
  }
  std::string prefix_;
  std::shared_ptr<EtcdClient> client_;
};

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

// A fake etcd KV with just what the store's writes need: puts, the CREATE and MOD compares,
// and single-key ranges. The leader key /fake/election/x exists with create revision 7. Its
// answers can be lost on purpose: `lose` says how the next Txn goes wrong.
class ScriptedKv final : public etcdserverpb::KV::Service {
 public:
  enum class Lose { kNothing, kBeforeApplying, kAfterApplying, kEveryAnswer };
  static constexpr const char* kLeaderKey = "/fake/election/x";

  void set_lose(Lose lose) {
    std::lock_guard lock(mu_);
    lose_ = lose;
  }
  int txns_applied() {
    std::lock_guard lock(mu_);
    return applied_;
  }

  grpc::Status Txn(grpc::ServerContext* context, const etcdserverpb::TxnRequest* request,
                   etcdserverpb::TxnResponse* response) override {
    std::unique_lock lock(mu_);
    const Lose lose = lose_;
    if (lose_ != Lose::kEveryAnswer) lose_ = Lose::kNothing;
    if (lose == Lose::kEveryAnswer) {
      lock.unlock();
      while (!context->IsCancelled()) std::this_thread::sleep_for(milliseconds(10));
      return grpc::Status::CANCELLED;
    }
    if (lose == Lose::kBeforeApplying) return {grpc::StatusCode::UNAVAILABLE, "member died"};
    bool holds = true;
    for (const auto& c : request->compare()) {
      if (c.target() == etcdserverpb::Compare::CREATE) {
        holds = holds && c.key() == kLeaderKey && c.create_revision() == 7;
      } else {
        holds =
            holds && c.target() == etcdserverpb::Compare::MOD && ModOf(c.key()) == c.mod_revision();
      }
    }
    response->set_succeeded(holds);
    if (holds) {
      ++revision_;
      ++applied_;
      for (const auto& op : request->success()) {
        kvs_[op.request_put().key()] = {op.request_put().value(), revision_};
      }
    }
    response->mutable_header()->set_revision(revision_);
    if (lose == Lose::kAfterApplying) {
      return {grpc::StatusCode::DEADLINE_EXCEEDED, "the answer was lost"};
    }
    return grpc::Status::OK;
  }

  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest* request,
                     etcdserverpb::RangeResponse* response) override {
    std::lock_guard lock(mu_);
    if (request->key() == kLeaderKey) {
      auto* kv = response->add_kvs();
      kv->set_key(kLeaderKey);
      kv->set_create_revision(7);
      kv->set_mod_revision(7);
    } else if (auto it = kvs_.find(request->key());
               request->range_end().empty() && it != kvs_.end()) {
      auto* kv = response->add_kvs();
      kv->set_key(it->first);
      kv->set_value(it->second.first);
      kv->set_mod_revision(it->second.second);
    }
    response->mutable_header()->set_revision(revision_);
    return grpc::Status::OK;  // a range over a prefix: an empty store
  }

 private:
  int64_t ModOf(const std::string& key) {
    auto it = kvs_.find(key);
    return it == kvs_.end() ? 0 : it->second.second;
  }

  std::mutex mu_;
  Lose lose_ = Lose::kNothing;
  int64_t revision_ = 10;
  int applied_ = 0;
  std::map<std::string, std::pair<std::string, int64_t>> kvs_;
};

class EtcdStoreFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&kv_);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_);
    port_ = port;
  }
  // The store, with etcd requests timing out after `request_timeout_ms` (generous unless the
  // test waits for timeouts: sanitizer builds are slow).
  void Open(int64_t request_timeout_ms) {
    auto client =
        ClientFor({"http://127.0.0.1:" + std::to_string(port_)}, "/fake", request_timeout_ms);
    GroupCommitOptions options;
    options.on_fatal = [this](const Status& s) { fatal_.set_value(s); };
    store_ = EtcdStore::Create(
        client, [] { return true; }, std::move(options));
    store_->backend().SetFence(ScriptedKv::kLeaderKey, 7);
  }
  void TearDown() override {
    store_.reset();
    server_->Shutdown(std::chrono::system_clock::now());
  }
  Status Put(const std::string& pipeline) {
    std::promise<Status> done;
    store_->PutPipeline(MakeRecord("job", pipeline), [&done](Status s) { done.set_value(s); });
    auto future = done.get_future();
    if (future.wait_for(seconds(10)) != std::future_status::ready) {
      return Status::Internal("no answer within 10 s");
    }
    return future.get();
  }

  ScriptedKv kv_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::promise<Status> fatal_;
  std::unique_ptr<EtcdStore> store_;
};

TEST_F(EtcdStoreFakeTest, ATxnLostBeforeEtcdAppliedItIsSentAgainAndLandsOnce) {
  Open(5000);
  ASSERT_TRUE(Put("p0").ok());
  kv_.set_lose(ScriptedKv::Lose::kBeforeApplying);
  EXPECT_TRUE(Put("p1").ok());
  EXPECT_EQ(kv_.txns_applied(), 2);
  EXPECT_EQ(store_->backend().txns_resent(), 1u);
}

TEST_F(EtcdStoreFakeTest, ATxnAppliedWhoseAnswerWasLostIsFoundLandedAndNotSentAgain) {
  Open(5000);
  ASSERT_TRUE(Put("p0").ok());
  kv_.set_lose(ScriptedKv::Lose::kAfterApplying);
  EXPECT_TRUE(Put("p1").ok());
  EXPECT_EQ(kv_.txns_applied(), 2);
  EXPECT_EQ(store_->backend().txns_resent(), 0u);
  // And the next txn's cursor compare holds: the store knows where it stands.
  EXPECT_TRUE(Put("p2").ok());
  EXPECT_EQ(kv_.txns_applied(), 3);
}

TEST_F(EtcdStoreFakeTest, AWriteWhoseOutcomeStaysUnknownStopsTheStoreWithoutAnsweringIt) {
  Open(1000);  // a silent etcd: 3 x 1 s of asking, then the store stops
  kv_.set_lose(ScriptedKv::Lose::kEveryAnswer);
  store_->PutPipeline(MakeRecord("job", "p"),
                      [](Status) { ADD_FAILURE() << "a write of unknown outcome was answered"; });
  auto future = fatal_.get_future();
  ASSERT_EQ(future.wait_for(seconds(10)), std::future_status::ready);
  const Status why = future.get();
  EXPECT_EQ(why.code(), StatusCode::kDeadlineExceeded) << why.ToString();
  EXPECT_NE(why.message().find("unknown outcome"), std::string::npos) << why.ToString();
  EXPECT_EQ(kv_.txns_applied(), 0);
}

// An election's events, gathered for the test thread.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  int64_t elected_epoch = 0;
  std::string leader_address;
  std::string lost;

  ElectionCallbacks Callbacks() {
    ElectionCallbacks c;
    c.on_leader_seen = [this](const std::string& address, int64_t) {
      std::lock_guard lock(mu);
      leader_address = address;
      cv.notify_all();
    };
    c.on_elected = [this](const std::string&, int64_t epoch) {
      std::lock_guard lock(mu);
      elected_epoch = epoch;
      cv.notify_all();
    };
    c.on_lost = [this](const std::string& why) {
      std::lock_guard lock(mu);
      lost = why;
      cv.notify_all();
    };
    return c;
  }
  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, pred);
  }
};

TEST_F(EtcdStoreTest, TheFirstCandidateLeadsAndTheStandbyTakesOverWhenItResigns) {
  auto settings_client = ClientFor(SharedCluster().endpoints(), prefix_);
  Seen a, b;
  EtcdElection first(settings_client, "a:1", a.Callbacks());
  first.Start();
  ASSERT_TRUE(a.WaitFor([&] { return a.elected_epoch > 0; }, seconds(10)));
  EtcdElection second(settings_client, "b:2", b.Callbacks());
  second.Start();
  ASSERT_TRUE(b.WaitFor([&] { return b.leader_address == "a:1"; }, seconds(10)));
  EXPECT_EQ(b.elected_epoch, 0);
  EXPECT_TRUE(first.LeaseConfirmed());

  // The daemon's shutdown: the store sends nothing more, and the lease still stands (no standby
  // leads) until the resignation.
  first.StopConfirming();
  EXPECT_FALSE(first.LeaseConfirmed());
  EXPECT_FALSE(b.WaitFor([&] { return b.elected_epoch > 0; }, milliseconds(500)));
  const auto resigned = std::chrono::steady_clock::now();
  first.Stop(/*resign=*/true);
  ASSERT_TRUE(b.WaitFor([&] { return b.elected_epoch > 0; }, seconds(10)));
  EXPECT_GT(b.elected_epoch, a.elected_epoch) << "epochs grow with each leader";
  EXPECT_LT(std::chrono::steady_clock::now() - resigned, seconds(2))
      << "a resignation hands over at once, not after the TTL";
  EXPECT_TRUE(a.lost.empty());
}

TEST_F(EtcdStoreTest, ALeaderWhoseLeaseIsRevokedIsToldItLostAndNeverLeadsAgain) {
  auto client = ClientFor(SharedCluster().endpoints(), prefix_);
  Seen a;
  EtcdElection election(client, "a:1", a.Callbacks());
  election.Start();
  ASSERT_TRUE(a.WaitFor([&] { return a.elected_epoch > 0; }, seconds(10)));
  // The lease id is the candidate key's last segment (hex).
  auto keys = Dump(*client, prefix_ + "/election/");
  ASSERT_EQ(keys.size(), 1u);
  const std::string key = keys.front().key();
  const int64_t lease =
      static_cast<int64_t>(std::stoull(key.substr(key.rfind('/') + 1), nullptr, 16));
  ASSERT_TRUE(client->LeaseRevoke(lease).ok());
  ASSERT_TRUE(a.WaitFor([&] { return !a.lost.empty(); }, seconds(10)));
  EXPECT_TRUE(a.lost.find("expired") != std::string::npos ||
              a.lost.find("no longer") != std::string::npos)
      << a.lost;
}

TEST(EtcdElectionOutageTest, ALeaderStopsActingWhileEtcdIsDownAndResumesWhenItIsBack) {
  CKPT_NEED_ETCD();
  testing::EtcdCluster cluster(1);
  EtcdSettings settings;
  settings.endpoints = cluster.endpoints();
  settings.prefix = "/outage";
  settings.election_ttl_ms = 3000;
  settings.request_timeout_ms = 500;
  auto shared = ClientFor(settings);
  Seen a;
  EtcdElection election(shared, "a:1", a.Callbacks());
  election.Start();
  ASSERT_TRUE(a.WaitFor([&] { return a.elected_epoch > 0; }, seconds(10)));
  cluster.Kill(0);
  // Within the TTL the local deadline passes: nothing is to be sent or written.
  const auto deadline = std::chrono::steady_clock::now() + seconds(6);
  while (election.LeaseConfirmed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_FALSE(election.LeaseConfirmed());
  cluster.Restart(0);
  // etcd restores its leases with a fresh TTL when it starts: the keepalive confirms ours again.
  const auto back = std::chrono::steady_clock::now() + seconds(20);
  while (!election.LeaseConfirmed() && std::chrono::steady_clock::now() < back) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(election.LeaseConfirmed());
  std::lock_guard lock(a.mu);
  EXPECT_TRUE(a.lost.empty()) << a.lost;
}

TEST(EtcdElectionOutageTest, ALeaderKeepsItsLeaseWhileTheMemberItAsksHangs) {
  // One member of three that stops answering without closing its connections (a hung process, a
  // paused host): the leader asks another in time, and nothing stops. Defaults for the TTL and
  // the request timeout, which are equal: a keepalive left to hang for the request timeout alone
  // would outlast the local deadline.
  CKPT_NEED_ETCD();
  testing::EtcdCluster cluster(3, {"--heartbeat-interval=50", "--election-timeout=500"});
  EtcdSettings settings;
  settings.endpoints = cluster.endpoints();
  settings.prefix = "/hung";
  ASSERT_EQ(settings.election_ttl_ms, 5000);
  ASSERT_EQ(settings.request_timeout_ms, 5000);
  auto shared = ClientFor(settings);
  Seen a;
  EtcdElection election(shared, "a:1", a.Callbacks());
  election.Start();
  ASSERT_TRUE(a.WaitFor([&] { return a.elected_epoch > 0; }, seconds(10)));
  ASSERT_EQ(shared->first_endpoint(), 0u);  // asking the member about to hang

  cluster.Pause(0);
  // Two TTLs: the lease would have expired in etcd, and the local deadline passed, had no
  // keepalive got through.
  int unconfirmed = 0;
  int samples = 0;
  const auto until = std::chrono::steady_clock::now() + seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    unconfirmed += election.LeaseConfirmed() ? 0 : 1;
    ++samples;
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(unconfirmed, 0) << "of " << samples << " samples, the lease was unconfirmed in "
                            << unconfirmed;
  EXPECT_NE(shared->first_endpoint(), 0u);
  etcdserverpb::RangeRequest read;
  read.set_key(etcd::Layout(settings.prefix).ElectionPrefix());
  read.set_range_end(PrefixEnd(read.key()));
  auto candidates = shared->Range(read);  // the data path too, while the member still hangs
  ASSERT_TRUE(candidates.ok()) << candidates.status().ToString();
  EXPECT_EQ(candidates->kvs_size(), 1);
  cluster.Resume(0);
  std::lock_guard lock(a.mu);
  EXPECT_TRUE(a.lost.empty()) << a.lost;
}

}  // namespace
}  // namespace ckpt
