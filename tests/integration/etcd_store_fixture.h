#pragma once
// What the tests of the etcd store and of the election against a real etcd share (the
// etcd_store_*_test.cc files and etcd_election_test.cc): one etcd for the whole test program, a
// client, a fence key of the test's own making, a dump of a prefix, a store fenced under a prefix,
// a checkpoint too wide for one etcd value, and the fixture EtcdStoreTest (a prefix of its own
// for each test). Inline: one definition, and so one shared cluster, for the whole program.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../unit/store_test_util.h"
#include "etcd/etcd_store.h"
#include "support/etcd_cluster.h"
#include "support/need_tool.h"

namespace ckpt {

// One cluster for the whole program: each test works under a prefix of its own.
inline testing::EtcdCluster& SharedCluster() {
  // One per test program, ended with it: the destructor kills the members and removes their
  // data dir (a crash still takes the members down: PR_SET_PDEATHSIG).
  static testing::EtcdCluster cluster(1);
  return cluster;
}

inline std::shared_ptr<EtcdClient> ClientFor(const EtcdSettings& settings) {
  auto client = EtcdClient::Create(settings);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

inline std::shared_ptr<EtcdClient> ClientFor(const std::vector<std::string>& endpoints,
                                             const std::string& prefix,
                                             int64_t request_timeout_ms = 5000,
                                             int64_t max_txn_ops = EtcdSettings{}.max_txn_ops) {
  EtcdSettings settings;
  settings.endpoints = endpoints;
  settings.prefix = prefix;
  settings.request_timeout_ms = request_timeout_ms;
  settings.max_txn_ops = max_txn_ops;
  return ClientFor(settings);
}

// A fence key of our own making, as a leader's candidate key would be: its create revision.
inline int64_t MakeFence(EtcdClient& client, const std::string& key) {
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value("test");
  etcdserverpb::TxnResponse response;
  EtcdError error;
  EXPECT_TRUE(client.Txn(txn, &response, &error)) << error.status.ToString();
  return response.header().revision();
}

inline std::vector<etcdserverpb::KeyValue> Dump(EtcdClient& client, const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  auto response = client.Range(request);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  return {response->kvs().begin(), response->kvs().end()};
}

inline std::unique_ptr<EtcdStore> OpenSharedFenced(
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
inline CompletedCheckpoint WideCheckpoint(int64_t id) {
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

}  // namespace ckpt
