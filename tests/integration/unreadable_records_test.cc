// A record the store cannot read quarantines its pipeline alone (docs/DESIGN.md "Availability in
// depth"): a real daemon on a real SQLite file damaged between two starts. The others load and
// run; the damaged one is listed UNREADABLE with the row and why, nothing runs for it, a hello
// for it is refused FAILED_PRECONDITION, and DeletePipeline removes it; created again, it starts
// its ids above every id the store ever gave, also when its own counter was what was damaged.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"
#include "raw_worker.h"
#include "runtime/quarantine.h"

namespace ckpt::testing {
namespace {

void Sql(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class UnreadableRecordsTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    config_.lease_ttl_ms = 30000;  // RawWorker does not heartbeat
  }
  std::string Db() const { return (data_dir_ / "ckptd.db").string(); }

  // Completes `rounds` checkpoints of job/`pipeline` (one task "a"); the last id.
  int64_t Checkpoint(const std::string& pipeline, int rounds) {
    RawWorker w(channel_);
    w.Hello("job", pipeline, {"a"}, /*takeover=*/true);
    EXPECT_TRUE(w.WaitWelcome());
    int64_t id = 0;
    for (int i = 0; i < rounds; ++i) {
      auto t = w.WaitTrigger();
      EXPECT_TRUE(t);
      if (!t) return 0;
      id = t->trigger().checkpoint_id();
      w.Ack(id, "a");
      EXPECT_TRUE(w.WaitComplete());
    }
    return id;
  }

  v1::Pipeline Get(const std::string& pipeline, grpc::Status* status) {
    auto admin = v1::AdminService::NewStub(channel_);
    grpc::ClientContext ctx;
    v1::PipelineRef ref;
    ref.set_job_id("job");
    ref.set_pipeline_id(pipeline);
    v1::Pipeline p;
    *status = admin->GetPipeline(&ctx, ref, &p);
    return p;
  }

  grpc::Status Delete(const std::string& pipeline) {
    auto admin = v1::AdminService::NewStub(channel_);
    grpc::ClientContext ctx;
    v1::PipelineRef ref;
    ref.set_job_id("job");
    ref.set_pipeline_id(pipeline);
    v1::DeletePipelineResponse resp;
    return admin->DeletePipeline(&ctx, ref, &resp);
  }

  // The damaged pipeline as every path shows it, then its delete and its creation again: the
  // first id it triggers is above `highest`.
  void ExpectQuarantinedThenRecreatedAbove(const std::string& reason, int64_t highest) {
    grpc::Status status;
    v1::Pipeline p = Get("p", &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(p.state(), v1::PIPELINE_STATE_UNREADABLE);
    EXPECT_NE(p.state_reason().find(reason), std::string::npos) << p.state_reason();
    EXPECT_NE(p.state_reason().find("ckptd.db"), std::string::npos) << "names the file";
    {
      auto admin = v1::AdminService::NewStub(channel_);
      grpc::ClientContext ctx;
      v1::ListPipelinesRequest req;
      v1::ListPipelinesResponse resp;
      ASSERT_TRUE(admin->ListPipelines(&ctx, req, &resp).ok());
      ASSERT_EQ(resp.pipelines_size(), 2);
      EXPECT_EQ(resp.pipelines(0).spec().pipeline_id(), "p");
      EXPECT_EQ(resp.pipelines(0).state(), v1::PIPELINE_STATE_UNREADABLE);
      EXPECT_EQ(resp.pipelines(1).spec().pipeline_id(), "q");
    }
    {
      auto admin = v1::AdminService::NewStub(channel_);
      grpc::ClientContext ctx;
      v1::PipelineRef ref;
      ref.set_job_id("job");
      ref.set_pipeline_id("p");
      v1::Pipeline reply;
      const grpc::Status paused = admin->PausePipeline(&ctx, ref, &reply);
      EXPECT_EQ(paused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
      EXPECT_NE(paused.error_message().find("UNREADABLE"), std::string::npos);
    }
    {
      RawWorker w(channel_);
      w.Hello("job", "p", {"a"});
      auto end = w.WaitEnd();
      ASSERT_TRUE(end);
      EXPECT_EQ(end->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
      EXPECT_NE(end->error_message().find(reason), std::string::npos) << end->error_message();
    }
    EXPECT_EQ(daemon_->metrics()
                  .pipelines_by_state[static_cast<size_t>(PipelineState::kUnreadable)]
                  .load(),
              1);
    EXPECT_NE(daemon_->MetricsText().find("ckptd_store_unreadable_records 1"), std::string::npos);
    // The other pipeline runs.
    EXPECT_GT(Checkpoint("q", 1), 0);

    ASSERT_TRUE(Delete("p").ok());
    Get("p", &status);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    CreateThroughApi(TestSpec("p", {"a"}));
    RawWorker w(channel_);
    w.Hello("job", "p", {"a"});
    ASSERT_TRUE(w.WaitWelcome());
    auto t = w.WaitTrigger();
    ASSERT_TRUE(t);
    EXPECT_GT(t->trigger().checkpoint_id(), highest) << "an id the store gave before, again";
  }
};

TEST_F(UnreadableRecordsTest, ARowThatDoesNotReadQuarantinesItsPipelineAlone) {
  StartDaemon();
  CreateThroughApi(TestSpec("p", {"a"}));
  CreateThroughApi(TestSpec("q", {"a"}));
  const int64_t last = Checkpoint("p", 3);
  ASSERT_GT(last, 0);
  StopDaemon();
  Sql(Db(), "UPDATE pipelines SET task_ids = 'not json' WHERE pipeline_id = 'p'");
  StartDaemon();
  ExpectQuarantinedThenRecreatedAbove("task_ids", last);
}

TEST_F(UnreadableRecordsTest, ACounterThatDoesNotReadGivesWayToTheHighWaterMark) {
  StartDaemon();
  CreateThroughApi(TestSpec("p", {"a"}));
  CreateThroughApi(TestSpec("q", {"a"}));
  ASSERT_GT(Checkpoint("p", 2), 0);
  StopDaemon();
  // p's counter (the end of the ids it reserved, above every id it triggered) is the highest
  // of the store; then it is damaged.
  Sql(Db(),
      "UPDATE id_counters SET counter = 5000 WHERE pipeline_id = 'p'; "
      "UPDATE id_high_water SET value = 5000");
  // What a raised counter left in the high-water mark stays when the counter is damaged.
  Sql(Db(), "UPDATE id_counters SET counter = 'x' WHERE pipeline_id = 'p'");
  StartDaemon();
  ExpectQuarantinedThenRecreatedAbove("id counter", 5000);
}

// A record whose name no request can carry (not UTF-8, a control character) could be neither
// listed (a reply that does not parse would break every listing) nor deleted: it is counted and
// logged like an unknown key, and the others are listed as before.
TEST(QuarantineTest, ARecordWhoseNameNoRequestCanCarryIsCountedNotListed) {
  auto pipeline = [](std::string job, std::string id) {
    UnreadableRecord record;
    record.pipeline = {std::move(job), std::move(id)};
    record.reason = "spec does not parse";
    return record;
  };
  UnreadableRecord group;
  group.kind = UnreadableRecord::Kind::kGroup;
  group.group = "ledger\x1b[2J";
  Quarantine quarantine;
  UnreadableRecord hidden_group = group;
  hidden_group.group = "led\u202eger";  // a format character: ValidateId refuses it
  quarantine.Load({pipeline("job", "ok"), pipeline("job", "bad\xff"), pipeline("j\nob", "p"),
                   pipeline("job", std::string(300, 'p')), pipeline("job", ".."), group,
                   hidden_group});
  ASSERT_EQ(quarantine.Pipelines().size(), 1u);
  EXPECT_EQ(quarantine.Pipelines()[0].pipeline.pipeline_id, "ok");
  EXPECT_TRUE(quarantine.Groups().empty()) << "what is listed, a request can also delete";
  EXPECT_EQ(quarantine.records(), 7u) << "every one is counted";
}

// A counter damaged while its pipeline was deleted (the counter outlives it) is replaced by the
// next create's reservation: the pipeline created again still loads after a restart.
TEST_F(UnreadableRecordsTest, ACounterDamagedAfterADeleteIsRepairedByTheNextCreate) {
  StartDaemon();
  CreateThroughApi(TestSpec("p", {"a"}));
  const int64_t last = Checkpoint("p", 2);
  ASSERT_GT(last, 0);
  ASSERT_TRUE(Delete("p").ok());
  StopDaemon();
  Sql(Db(), "UPDATE id_counters SET counter = 'x' WHERE pipeline_id = 'p'");
  StartDaemon();
  CreateThroughApi(TestSpec("p", {"a"}));
  EXPECT_GT(Checkpoint("p", 1), last);
  StopDaemon();
  StartDaemon();
  grpc::Status status;
  v1::Pipeline p = Get("p", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(p.state(), v1::PIPELINE_STATE_UNREADABLE) << p.state_reason();
}

// A damaged group row quarantines the group and holds its members; the group's delete lets them
// load and run outside any group, at once and after a restart.
TEST_F(UnreadableRecordsTest, DeletingAnUnreadableGroupLetsItsMembersLoadAndRun) {
  StartDaemon();
  auto admin = v1::AdminService::NewStub(channel_);
  auto put_group = [&] {
    grpc::ClientContext ctx;
    v1::AlignmentGroupSpec spec;
    spec.set_name("ledger");
    spec.set_interval_ms(100);
    v1::AlignmentGroup reply;
    return admin->PutAlignmentGroup(&ctx, spec, &reply);
  };
  ASSERT_TRUE(put_group().ok());
  PipelineSpec member = TestSpec("m", {"a"});
  member.alignment_group = "ledger";
  CreateThroughApi(member);
  CreateThroughApi(TestSpec("q", {"a"}));
  const int64_t last = Checkpoint("m", 2);
  ASSERT_GT(last, 0);
  StopDaemon();
  Sql(Db(), "UPDATE alignment_groups SET interval_ms = 'x' WHERE name = 'ledger'");
  StartDaemon();
  admin = v1::AdminService::NewStub(channel_);
  grpc::Status status;
  v1::Pipeline held = Get("m", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(held.state(), v1::PIPELINE_STATE_UNREADABLE);
  EXPECT_NE(held.state_reason().find("alignment group ledger"), std::string::npos)
      << held.state_reason();
  EXPECT_GT(Checkpoint("q", 1), 0) << "the pipeline outside the group runs";
  const grpc::Status put = put_group();
  EXPECT_EQ(put.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "not over the damaged row";
  EXPECT_NE(put.error_message().find("ckptctl group delete ledger"), std::string::npos)
      << put.error_message();
  {
    grpc::ClientContext ctx;
    v1::AlignmentGroupRef ref;
    ref.set_name("ledger");
    v1::DeleteAlignmentGroupResponse resp;
    const grpc::Status deleted = admin->DeleteAlignmentGroup(&ctx, ref, &resp);
    ASSERT_TRUE(deleted.ok()) << deleted.error_message();
  }
  v1::Pipeline loaded = Get("m", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(loaded.state(), v1::PIPELINE_STATE_UNREADABLE) << loaded.state_reason();
  EXPECT_EQ(loaded.spec().alignment_group(), "");
  EXPECT_GT(Checkpoint("m", 1), last) << "it runs on its own, above the group's ids";
  EXPECT_NE(daemon_->MetricsText().find("ckptd_store_unreadable_records 0"), std::string::npos);
  StopDaemon();
  StartDaemon();
  loaded = Get("m", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(loaded.state(), v1::PIPELINE_STATE_UNREADABLE) << "its record was rewritten";
  EXPECT_EQ(loaded.spec().alignment_group(), "");
}

}  // namespace
}  // namespace ckpt::testing
