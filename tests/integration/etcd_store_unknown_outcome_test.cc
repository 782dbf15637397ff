// Writes of unknown outcome, against a fake etcd whose answers are lost on purpose (ScriptedKv): a
// txn lost before etcd applied it is sent again and lands once, one applied whose answer was lost
// is found landed, and one whose outcome stays unknown stops the store without answering it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "etcd_store_fixture.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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

}  // namespace
}  // namespace ckpt
