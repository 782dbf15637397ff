// Records under the etcd prefix that cannot be read (a garbage spec, counter or checkpoint
// value, a key no ckptd writes), against a real etcd: only their pipeline is quarantined (the
// load goes on and reports it), unknown keys are passed over and reported, the delete of a
// quarantined pipeline gives it the high-water mark as its counter, and a standby's warm copy
// reports an unreadable record as its watch brings it, before any takeover.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "../unit/store_test_util.h"
#include "etcd/etcd_election.h"
#include "etcd_test_util.h"
#include "support/etcd_cluster.h"
#include "support/eventually.h"
#include "support/need_tool.h"

namespace ckpt {
namespace {

using std::chrono::seconds;

testing::EtcdCluster& Cluster() {
  static testing::EtcdCluster cluster(1);
  return cluster;
}

class EtcdUnreadableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CKPT_NEED_ETCD();
    prefix_ = "/u/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // Two pipelines with a checkpoint each, written through a store that is then closed.
  void Populate() {
    auto fenced = OpenFenced(Cluster().endpoints(), prefix_);
    for (const char* name : {"good", "bad"}) {
      const PipelineRecord r = MakeRecord("job", name);
      ASSERT_TRUE(Await([&](auto done) { fenced->store->PutPipeline(r, done); }).ok());
      ASSERT_TRUE(Await([&](auto done) { fenced->store->ReserveIds(r.spec.key, 700, done); }).ok());
      ASSERT_TRUE(Await([&](auto done) {
                    fenced->store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(3)), done);
                  }).ok());
    }
  }
  std::string prefix_;
};

TEST_F(EtcdUnreadableTest, AGarbageValueQuarantinesItsPipelineAloneAndUnknownKeysArePassedOver) {
  Populate();
  auto raw = Client(Cluster().endpoints(), prefix_);
  EXPECT_EQ(
      Etcdctl(Cluster().endpoints().front(), "get " + prefix_ + "/high_water --print-value-only"),
      "700\n")
      << "every counter raises the high-water mark in its txn";
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/pipelines/job/bad/spec", "{not json").ok());
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/junk", "left by someone").ok());
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/pipelines/job/weird", "x").ok());

  auto fenced = OpenFenced(Cluster().endpoints(), prefix_);
  auto loaded = fenced->store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ(loaded->front().record.spec.key.pipeline_id, "good");
  const auto unreadable = fenced->store->UnreadableRecords();
  auto quarantined = std::find_if(unreadable.begin(), unreadable.end(), [](const auto& r) {
    return r.kind == UnreadableRecord::Kind::kPipeline;
  });
  ASSERT_NE(quarantined, unreadable.end());
  EXPECT_EQ(quarantined->pipeline.pipeline_id, "bad");
  EXPECT_NE(quarantined->reason.find("/pipelines/job/bad/spec"), std::string::npos)
      << quarantined->reason;
  EXPECT_EQ(
      std::count_if(unreadable.begin(), unreadable.end(),
                    [](const auto& r) { return r.kind == UnreadableRecord::Kind::kUnknownKey; }),
      2)
      << "the two keys no ckptd writes";

  // Its counter is garbage too now; the delete gives it the high-water mark.
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/counters/job/bad", "garbage").ok());
  auto counter = fenced->store->LoadIdCounter({"job", "bad"});
  ASSERT_TRUE(counter.ok()) << counter.status().ToString();
  EXPECT_GE(*counter, 700) << "a counter that does not read counts as the high-water mark";
  ASSERT_TRUE(Await([&](auto done) {
                fenced->store->DeleteUnreadablePipeline({"job", "bad"}, done);
              }).ok());
  EXPECT_EQ(Etcdctl(Cluster().endpoints().front(),
                    "get " + prefix_ + "/counters/job/bad --print-value-only"),
            "700\n");
  EXPECT_EQ(Etcdctl(Cluster().endpoints().front(),
                    "get --prefix --keys-only " + prefix_ + "/pipelines/job/bad/"),
            "");
  EXPECT_EQ(fenced->fatal.load(), 0);
}

TEST_F(EtcdUnreadableTest, UnrestorableMarksThatDoNotReadQuarantineTheirPipelineAlone) {
  Populate();
  auto raw = Client(Cluster().endpoints(), prefix_);
  const std::string progress =
      Etcdctl(Cluster().endpoints().front(),
              "get " + prefix_ + "/pipelines/job/bad/progress --print-value-only");
  auto value = nlohmann::json::parse(progress, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(value.is_object()) << progress;
  value["unrestorable"] = {3, "x"};
  // Written below the checkpoint's own progress: a later mod revision makes it the one read.
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/pipelines/job/bad/progress", value.dump()).ok());

  auto fenced = OpenFenced(Cluster().endpoints(), prefix_);
  auto loaded = fenced->store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ(loaded->front().record.spec.key.pipeline_id, "good");
  const auto unreadable = fenced->store->UnreadableRecords();
  ASSERT_EQ(std::count_if(unreadable.begin(), unreadable.end(),
                          [](const auto& r) {
                            return r.kind == UnreadableRecord::Kind::kPipeline &&
                                   r.pipeline.pipeline_id == "bad";
                          }),
            1);
  EXPECT_EQ(fenced->fatal.load(), 0);
}

TEST_F(EtcdUnreadableTest, AStandbysWarmCopyReportsAnUnreadableRecordAsItArrives) {
  Populate();
  auto standby = EtcdStore::Create(Client(Cluster().endpoints(), prefix_), [] { return true; });
  standby->backend().StartWarming();
  ASSERT_TRUE(testing::Eventually([&] { return standby->backend().warm_copy_progress().first > 0; },
                                  seconds(10)));
  EXPECT_EQ(standby->backend().unreadable_seen_by_standby(), 0u);
  auto raw = Client(Cluster().endpoints(), prefix_);
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/counters/job/good", "twelve").ok());
  EXPECT_TRUE(testing::Eventually(
      [&] { return standby->backend().unreadable_seen_by_standby() == 1; }, seconds(10)));
  // Written again readable, it is no longer counted.
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/counters/job/good", "900").ok());
  EXPECT_TRUE(testing::Eventually(
      [&] { return standby->backend().unreadable_seen_by_standby() == 0; }, seconds(10)));
}

// Keys under election/ that no ckptd could have written, older than any candidate: no lease (it
// would never expire), a value that is no leader address. Each would have been the leader every
// daemon waited for, for ever.
TEST_F(EtcdUnreadableTest, ForeignElectionKeysDoNotKeepTheGroupFromElectingALeader) {
  auto raw = Client(Cluster().endpoints(), prefix_);
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/election/0000000000000001", "a.example:1").ok());
  ASSERT_TRUE(RawPut(*raw, prefix_ + "/election/zzz", "b.example:7070\nx-evil: 1").ok());
  // More than a page of them: a look reads on past the first page.
  for (int i = 0; i < 150; ++i) {
    ASSERT_TRUE(RawPut(*raw, prefix_ + "/election/f" + std::to_string(i), "x.example:1").ok());
  }
  std::mutex mu;
  std::condition_variable cv;
  int64_t elected = 0;
  std::string seen;
  ElectionCallbacks callbacks;
  callbacks.on_leader_seen = [&](const std::string& address, int64_t) {
    std::lock_guard lock(mu);
    seen = address;
    cv.notify_all();
  };
  callbacks.on_elected = [&](const std::string&, int64_t epoch) {
    std::lock_guard lock(mu);
    elected = epoch;
    cv.notify_all();
  };
  callbacks.on_lost = [](const std::string& why) { ADD_FAILURE() << "lost: " << why; };
  EtcdElection election(raw, "c.example:7070", std::move(callbacks));
  election.Start();
  std::unique_lock lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, seconds(10), [&] { return elected > 0; }))
      << "the foreign keys kept this candidate from leading; it saw " << seen;
  EXPECT_EQ(seen, "c.example:7070");
  lock.unlock();
  election.Stop(/*resign=*/true);
}

}  // namespace
}  // namespace ckpt
