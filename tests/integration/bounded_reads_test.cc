// Reads a hostile or merely large caller cannot make unbounded: ListCheckpoints and ListPipelines
// page at most 1000 entries, a pipeline of 100,000 tasks lists in an ordinary message, and
// GetPipeline returns it whole to a client that accepts a large reply.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"
#include "sqlite/sqlite_store.h"

namespace ckpt::testing {
namespace {

class BoundedReadsTest : public DaemonTest {
 protected:
  // Writes pipelines (and checkpoints) straight into the store before the daemon starts: a
  // history of thousands would take minutes to make through real rounds.
  void Prepopulate(const std::function<void(SqliteStore&)>& fill) {
    auto store = OpenSqlite();
    ASSERT_TRUE(store);
    fill(*store);
    store->Flush();
  }

  void StartWithAdmin() {
    StartDaemon();
    admin_ = Stub(4 << 20);  // a default client's limit
  }
  std::unique_ptr<v1::AdminService::Stub> Stub(int max_reply_bytes) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(max_reply_bytes);
    return v1::AdminService::NewStub(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(daemon_->grpc_port()),
                                  grpc::InsecureChannelCredentials(), args));
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(BoundedReadsTest, ListCheckpointsPagesAtMostAThousand) {
  PipelineRecord record;
  record.spec = TestSpec("p", {"a"}, 60000);
  record.spec.retained = 5000;
  Prepopulate([&](SqliteStore& store) {
    store.PutPipeline(record, nullptr);
    store.ReserveIds(record.spec.key, 2000, nullptr);
    for (int64_t id = 1; id <= 1500; ++id) {
      CheckpointCommit commit{record.spec.key, record.spec.retained, record.progress(), {}, {}};
      commit.checkpoint.checkpoint_id = id;
      commit.checkpoint.task_states["a"] = {"mem://a/" + std::to_string(id), 1, ""};
      commit.progress_after.last_completed_id = id;
      store.CommitCheckpoint(commit, nullptr);
    }
  });
  StartWithAdmin();
  v1::ListCheckpointsRequest req;
  req.set_job_id("job");
  req.set_pipeline_id("p");
  req.set_limit(INT32_MAX);  // the trial's request: must not load every row
  std::set<int64_t> seen;
  int pages = 0;
  for (;;) {
    grpc::ClientContext ctx;
    v1::ListCheckpointsResponse resp;
    ASSERT_TRUE(admin_->ListCheckpoints(&ctx, req, &resp).ok());
    ++pages;
    ASSERT_LE(resp.checkpoints_size(), 1000);
    for (const auto& c : resp.checkpoints()) {
      EXPECT_TRUE(seen.insert(c.checkpoint_id()).second) << "listed twice: " << c.checkpoint_id();
    }
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen.size(), 1500u);
  EXPECT_EQ(*seen.begin(), 1);

  req.set_page_token("not-a-token");
  grpc::ClientContext ctx;
  v1::ListCheckpointsResponse resp;
  EXPECT_EQ(admin_->ListCheckpoints(&ctx, req, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BoundedReadsTest, ListPipelinesPagesInKeyOrder) {
  Prepopulate([&](SqliteStore& store) {
    for (int i = 0; i < 2500; ++i) {
      PipelineRecord record;
      record.spec = TestSpec("p" + std::to_string(10000 + i), {"a"}, 60000);
      store.PutPipeline(record, nullptr);
    }
  });
  StartWithAdmin();
  v1::ListPipelinesRequest req;
  std::vector<std::string> ids;
  int pages = 0;
  for (;;) {
    grpc::ClientContext ctx;
    v1::ListPipelinesResponse resp;
    ASSERT_TRUE(admin_->ListPipelines(&ctx, req, &resp).ok());
    ++pages;
    ASSERT_LE(resp.pipelines_size(), 1000);
    for (const auto& p : resp.pipelines()) ids.push_back(p.spec().pipeline_id());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(ids.size(), 2500u);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 2500u) << "no duplicates";
}

TEST_F(BoundedReadsTest, APipelineOfAHundredThousandLongTaskIdsListsInAnOrdinaryMessage) {
  PipelineRecord big;
  big.spec = TestSpec("big", {}, 60000);
  for (int i = 0; i < 100000; ++i) {
    big.spec.task_ids.push_back("task-" + std::to_string(i) + "-" + std::string(60, 'x'));
  }
  Prepopulate([&](SqliteStore& store) { store.PutPipeline(big, nullptr); });
  StartWithAdmin();
  {
    grpc::ClientContext ctx;
    v1::ListPipelinesResponse resp;
    ASSERT_TRUE(admin_->ListPipelines(&ctx, v1::ListPipelinesRequest(), &resp).ok())
        << "a listing must fit a default client's 4 MiB";
    ASSERT_EQ(resp.pipelines_size(), 1);
    const auto& p = resp.pipelines(0);
    EXPECT_TRUE(p.task_ids_omitted());
    EXPECT_EQ(p.spec().task_ids_size(), 0);
    EXPECT_EQ(p.expected_tasks(), 100000);
    EXPECT_EQ(p.missing_tasks_size(), 1000);
    EXPECT_EQ(p.missing_tasks_total(), 100000);
  }
  // GetPipeline returns every task id to a client that accepts a large reply (ckptctl: 64 MiB).
  auto large = Stub(64 << 20);
  grpc::ClientContext ctx;
  v1::PipelineRef ref;
  ref.set_job_id("job");
  ref.set_pipeline_id("big");
  v1::Pipeline p;
  const grpc::Status got = large->GetPipeline(&ctx, ref, &p);
  ASSERT_TRUE(got.ok()) << got.error_code() << " " << got.error_message();
  EXPECT_EQ(p.spec().task_ids_size(), 100000);
  EXPECT_FALSE(p.task_ids_omitted());
  EXPECT_EQ(p.missing_tasks_size(), 1000);
}

}  // namespace
}  // namespace ckpt::testing
