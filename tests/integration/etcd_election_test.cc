// The leader election on an etcd lease (etcd/etcd_election.h), against real etcd members: who
// leads, the standby's takeover when the leader resigns, a revoked lease, and a leader's lease
// while etcd is down and back, or while the member it asks hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "etcd/etcd_election.h"
#include "etcd_store_fixture.h"
#include "support/etcd_cluster.h"
#include "support/need_tool.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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
