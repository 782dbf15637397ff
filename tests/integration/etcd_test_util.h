#pragma once
// What the tests of the etcd store against a real etcd share: a client, a raw put (not through
// the store), etcdctl, and a store fenced by a leader key of the test's own making.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "etcd/etcd_store.h"

namespace ckpt {

inline std::shared_ptr<EtcdClient> Client(const std::vector<std::string>& endpoints,
                                          const std::string& prefix) {
  EtcdSettings settings;
  settings.endpoints = endpoints;
  settings.prefix = prefix;
  auto client = EtcdClient::Create(settings);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

// Puts `key` = `value` directly (not through the store); the status etcd answered.
inline Status RawPut(EtcdClient& client, const std::string& key, const std::string& value) {
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  etcdserverpb::TxnResponse response;
  EtcdError error;
  if (!client.Txn(txn, &response, &error)) return error.status;
  return Status::Ok();
}

// Runs etcdctl (Debian's etcd-client) against `endpoint`; its output, or a failure.
inline std::string Etcdctl(const std::string& endpoint, const std::string& args) {
  const std::string command =
      "ETCDCTL_API=3 etcdctl --endpoints=" + endpoint + " " + args + " 2>&1";
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    std::array<char, 4096> buffer{};
    while (fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
    const int rc = pclose(pipe);
    EXPECT_EQ(rc, 0) << command << ": " << out;
  } else {
    ADD_FAILURE() << "cannot run " << command;
  }
  return out;
}

struct FencedStore {
  std::shared_ptr<EtcdClient> client;
  std::unique_ptr<EtcdStore> store;
  std::atomic<int> fatal{0};
};

inline std::unique_ptr<FencedStore> OpenFenced(const std::vector<std::string>& endpoints,
                                               const std::string& prefix) {
  auto fenced = std::make_unique<FencedStore>();
  fenced->client = Client(endpoints, prefix);
  GroupCommitOptions options;
  options.on_fatal = [f = fenced.get()](const Status& s) {
    ADD_FAILURE() << "the store stopped: " << s.ToString();
    f->fatal.fetch_add(1);
  };
  fenced->store = EtcdStore::Create(
      fenced->client, [] { return true; }, std::move(options));
  EXPECT_TRUE(RawPut(*fenced->client, prefix + "/election/test", "a:1").ok());
  etcdserverpb::RangeRequest request;
  request.set_key(prefix + "/election/test");
  auto fence = fenced->client->Range(request);
  EXPECT_TRUE(fence.ok() && fence->kvs_size() == 1);
  fenced->store->backend().SetFence(prefix + "/election/test", fence->kvs(0).create_revision());
  return fenced;
}

}  // namespace ckpt
