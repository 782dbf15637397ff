// What the etcd store does when etcd refuses a write it certainly did not apply
// (ha/etcd_outcomes.h): a full database (`database space exceeded`) is a store that takes no
// writes, as a full disk is for SQLite (rounds fail "store not writable", nothing stops, writes
// resume by themselves once etcd takes them again); a request refused for its own size fails
// only its ops. Against real etcd members started with a small quota or request limit.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <future>
#include <memory>

#include "../unit/store_test_util.h"
#include "etcd/etcd_store.h"
#include "etcd_test_util.h"
#include "support/etcd_cluster.h"
#include "support/eventually.h"
#include "support/need_tool.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class EtcdFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CKPT_NEED_ETCD();
    // A quota a few large values fill.
    cluster_ = std::make_unique<testing::EtcdCluster>(
        1, std::vector<std::string>{"--quota-backend-bytes", std::to_string(16 << 20)});
  }
  // Fills etcd until it refuses with `database space exceeded`.
  void Fill() {
    auto filler = Client(cluster_->endpoints(), "/filler");
    const std::string big(1 << 20, 'x');
    for (int i = 0; i < 200; ++i) {
      const Status s = RawPut(*filler, "/filler/" + std::to_string(i), big);
      if (!s.ok()) {
        ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
        ASSERT_NE(s.message().find("space"), std::string::npos) << s.ToString();
        return;
      }
    }
    FAIL() << "etcd took 200 MiB under a 16 MiB quota";
  }
  // What an operator does: delete, compact, defragment, disarm the alarm.
  void Free() {
    const std::string endpoint = cluster_->endpoints().front();
    Etcdctl(endpoint, "del --prefix /filler");
    const std::string status = Etcdctl(endpoint, "endpoint status -w fields");
    const size_t at = status.find("\"Revision\" : ");
    ASSERT_NE(at, std::string::npos) << status;
    const std::string revision = status.substr(at + 13, status.find('\n', at) - at - 13);
    Etcdctl(endpoint, "compact " + revision);
    Etcdctl(endpoint, "defrag");
    Etcdctl(endpoint, "alarm disarm");
  }
  std::unique_ptr<testing::EtcdCluster> cluster_;
};

TEST_F(EtcdFullTest, AFullEtcdIsAStoreNotWritableThatWritesAgainOnceSpaceIsBack) {
  auto fenced = OpenFenced(cluster_->endpoints(), "/full");
  MetadataStore& store = *fenced->store;
  const PipelineRecord record = MakeRecord("job", "p");
  ASSERT_TRUE(Await([&](auto done) { store.PutPipeline(record, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) {
                store.CommitCheckpoint(CommitOf(record, MakeCheckpoint(1)), done);
              }).ok());
  const std::string view_before = fenced->store->backend().DescribeView();

  Fill();
  const Status refused =
      Await([&](auto done) { store.CommitCheckpoint(CommitOf(record, MakeCheckpoint(2)), done); });
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  EXPECT_NE(refused.message().find("store not writable"), std::string::npos) << refused.ToString();
  EXPECT_NE(refused.message().find("space"), std::string::npos) << refused.ToString();
  // Probes and id reservations are refused alike, and nothing stops.
  EXPECT_EQ(Await([&](auto done) { store.Probe(done); }).code(), StatusCode::kUnavailable);
  EXPECT_EQ(Await([&](auto done) { store.ReserveIds(record.spec.key, 500, done); }).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(fenced->fatal.load(), 0);
  EXPECT_EQ(fenced->store->backend().DescribeView(), view_before)
      << "what etcd refused must not stay in the store's view of it";

  Free();
  ASSERT_TRUE(testing::Eventually([&] { return Await([&](auto done) { store.Probe(done); }).ok(); },
                                  seconds(20)))
      << "writes resume by themselves once etcd takes them";
  EXPECT_TRUE(Await([&](auto done) {
                store.CommitCheckpoint(CommitOf(record, MakeCheckpoint(3)), done);
              }).ok());
  auto listed = store.ListCompleted(record.spec.key, 10, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{3, 1})) << "the refused checkpoint 2 never landed";
  EXPECT_EQ(fenced->fatal.load(), 0);
}

class EtcdSmallRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CKPT_NEED_ETCD();
    // Requests above 64 KiB are refused for their size (etcd's own --max-request-bytes).
    cluster_ = std::make_unique<testing::EtcdCluster>(
        1, std::vector<std::string>{"--max-request-bytes", std::to_string(64 << 10)});
  }
  std::unique_ptr<testing::EtcdCluster> cluster_;
};

// A checkpoint of ~700 KiB of states: written in chunks of its own txns, each over this etcd's
// request limit.
CompletedCheckpoint LargeCheckpoint(int64_t id) {
  CompletedCheckpoint cp = MakeCheckpoint(id);
  for (int t = 0; t < 4000; ++t) {
    cp.task_states["t" + std::to_string(t)] = {
        "s3://bucket/a-rather-long-path/for/the/state/of/task/" + std::to_string(t) + "/" +
            std::string(60, 'p'),
        t, "crc"};
  }
  return cp;
}

TEST_F(EtcdSmallRequestsTest, ARequestRefusedForItsSizeFailsOnlyItsOwnOps) {
  auto fenced = OpenFenced(cluster_->endpoints(), "/small");
  MetadataStore& store = *fenced->store;
  const PipelineRecord big = MakeRecord("job", "big");
  const PipelineRecord small = MakeRecord("job", "small");
  ASSERT_TRUE(Await([&](auto done) { store.PutPipeline(big, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store.PutPipeline(small, done); }).ok());

  // One batch: the small pipeline's commit, the large one's, and the small one's next. The
  // large one's chunks go in txns of their own, which etcd refuses.
  Outcomes outcomes;
  WriterGate gate;
  store.Probe(gate.Callback());
  gate.WaitEntered();
  store.CommitCheckpoint(CommitOf(small, MakeCheckpoint(1)), outcomes.Record(1));
  store.CommitCheckpoint(CommitOf(big, LargeCheckpoint(1)), outcomes.Record(2));
  store.CommitCheckpoint(CommitOf(small, MakeCheckpoint(2)), outcomes.Record(3));
  gate.Release();
  ASSERT_TRUE(testing::Eventually([&] { return outcomes.seen().size() == 3; }, seconds(30)));
  const auto seen = outcomes.seen();
  EXPECT_TRUE(seen[0].second.ok()) << seen[0].second.ToString();
  EXPECT_EQ(seen[1].second.code(), StatusCode::kResourceExhausted) << seen[1].second.ToString();
  EXPECT_NE(seen[1].second.message().find("for its size"), std::string::npos)
      << seen[1].second.ToString();
  EXPECT_TRUE(seen[2].second.ok()) << seen[2].second.ToString();
  auto listed = store.ListCompleted(small.spec.key, 10, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{2, 1}));
  listed = store.ListCompleted(big.spec.key, 10, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  // The store goes on, and the large pipeline's next, smaller checkpoint lands.
  EXPECT_TRUE(Await([&](auto done) {
                store.CommitCheckpoint(CommitOf(big, MakeCheckpoint(2)), done);
              }).ok());
  EXPECT_EQ(fenced->fatal.load(), 0);
}

}  // namespace
}  // namespace ckpt
