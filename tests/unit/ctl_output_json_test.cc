#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "views/admin_json.h"

namespace ckpt::ctl {
namespace {

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

v1::Pipeline SamplePipeline() {
  v1::Pipeline p;
  v1::PipelineSpec* spec = p.mutable_spec();
  spec->set_job_id("etl");
  spec->set_pipeline_id("p0");
  spec->add_task_ids("0");
  spec->add_task_ids("1");
  spec->add_task_ids("2");
  spec->set_interval_ms(10'000);
  spec->set_timeout_ms(600'000);
  spec->set_min_pause_ms(0);
  spec->set_tolerable_failures(2);
  spec->set_retained(10);
  p.set_state(v1::PIPELINE_STATE_WAITING_FOR_TASKS);
  p.set_generation(4);
  p.set_expected_tasks(3);
  p.set_registered_tasks(1);
  p.add_missing_tasks("1");
  p.add_missing_tasks("2");
  p.set_last_completed_checkpoint_id(7);
  p.set_last_completed_at_ms(1'700'000'000'123);
  p.set_completed_count(7);
  p.set_expired_count(1);
  return p;
}

TEST(CtlOutputJson, PipelineHasEveryContractKeyInOrder) {
  const Json json = PipelineJson(SamplePipeline());
  EXPECT_EQ(Keys(json), (std::vector<std::string>{"job_id",
                                                  "pipeline_id",
                                                  "state",
                                                  "state_reason",
                                                  "generation",
                                                  "expected_tasks",
                                                  "registered_tasks",
                                                  "missing_tasks",
                                                  "missing_tasks_total",
                                                  "pending_checkpoint_id",
                                                  "last_completed_checkpoint_id",
                                                  "last_completed_at_ms",
                                                  "completed_count",
                                                  "failed_count",
                                                  "expired_count",
                                                  "consecutive_failures",
                                                  "interval_ms",
                                                  "timeout_ms",
                                                  "min_pause_ms",
                                                  "task_ids",
                                                  "task_ids_omitted",
                                                  "tolerable_failures",
                                                  "retained",
                                                  "position_interval",
                                                  "alignment_group",
                                                  "commit_timeout_ms",
                                                  "committing_checkpoint_id",
                                                  "last_committed_checkpoint_id",
                                                  "from_config",
                                                  "restore",
                                                  "max_overhead",
                                                  "max_interval_ms",
                                                  "effective_interval_ms",
                                                  "effective_interval_reason"}));
  EXPECT_EQ(json["job_id"], "etl");
  EXPECT_EQ(json["pipeline_id"], "p0");
  EXPECT_EQ(json["state"], "WAITING_FOR_TASKS");
  EXPECT_EQ(json["generation"], 4);
  EXPECT_EQ(json["missing_tasks"], Json::array({"1", "2"}));
  EXPECT_EQ(json["task_ids"], Json::array({"0", "1", "2"}));
  EXPECT_EQ(json["last_completed_at_ms"], 1'700'000'000'123);
  EXPECT_TRUE(json["last_completed_at_ms"].is_number_integer());
  // Zeros are present, as numbers.
  EXPECT_EQ(json["pending_checkpoint_id"], 0);
  EXPECT_EQ(json["failed_count"], 0);
  EXPECT_EQ(json["min_pause_ms"], 0);
  EXPECT_TRUE(json["min_pause_ms"].is_number_integer());
  EXPECT_EQ(json["tolerable_failures"], 2);
  EXPECT_EQ(json["from_config"], false);
}

TEST(CtlOutputJson, EmptyPipelineStillHasEveryKey) {
  const Json json = PipelineJson(v1::Pipeline());
  EXPECT_EQ(json.size(), 34u);
  EXPECT_EQ(Keys(json["restore"]),
            (std::vector<std::string>{"checkpoint_id", "kind", "location", "source_job_id",
                                      "source_pipeline_id", "rescaled", "operator_set", "position",
                                      "commit_pending"}));
  EXPECT_EQ(json["restore"]["checkpoint_id"], 0);
  EXPECT_EQ(json["restore"]["kind"], "") << "no restore point: no kind";
  EXPECT_EQ(json["state"], "UNSPECIFIED");
  EXPECT_TRUE(json["missing_tasks"].is_array());
  EXPECT_TRUE(json["missing_tasks"].empty());
  EXPECT_EQ(json["job_id"], "");
}

TEST(CtlOutputJson, CheckpointTasksCarryEveryFigure) {
  v1::CheckpointInfo c;
  c.set_checkpoint_id(3);
  v1::TaskCheckpointInfo* t = c.add_tasks();
  t->set_task_id("a");
  t->set_worker_id("w1");
  t->set_acked_at_ms(1700);
  t->mutable_state()->set_uri("s3://a");
  t->set_sync_duration_ms(1);
  t->set_async_duration_ms(2);
  t->set_alignment_duration_ms(3);
  t->set_bytes_processed_during_alignment(4);
  const Json json = CheckpointJson(c);
  ASSERT_EQ(json["tasks"].size(), 1u);
  EXPECT_EQ(
      Keys(json["tasks"][0]),
      (std::vector<std::string>{"task_id", "worker_id", "acked_at_ms", "state", "sync_duration_ms",
                                "async_duration_ms", "alignment_duration_ms",
                                "bytes_processed_during_alignment", "committed_at_ms"}));
  EXPECT_EQ(json["tasks"][0]["worker_id"], "w1");
  EXPECT_EQ(json["tasks"][0]["state"]["uri"], "s3://a");
  EXPECT_EQ(json["tasks"][0]["bytes_processed_during_alignment"], 4);
}

TEST(CtlOutputJson, CheckpointWithStateSortedByTask) {
  v1::CheckpointInfo c;
  c.set_checkpoint_id(12);
  c.set_kind(v1::CHECKPOINT_KIND_SAVEPOINT_AND_STOP);
  c.set_status(v1::CHECKPOINT_STATUS_COMPLETED);
  c.set_triggered_at_ms(1000);
  c.set_finished_at_ms(1500);
  c.set_acked_tasks(2);
  c.set_expected_tasks(2);
  c.set_location("/data/savepoints/etl/p0/12");
  v1::TaskState b;
  b.set_uri("s3://x/b");
  b.set_size_bytes(20);
  b.set_checksum("cb");
  v1::TaskState a;
  a.set_uri("s3://x/a");
  (*c.mutable_state())["b"] = b;
  (*c.mutable_state())["a"] = a;

  const Json json = CheckpointJson(c);
  EXPECT_EQ(Keys(json),
            (std::vector<std::string>{"checkpoint_id", "kind", "status", "triggered_at_ms",
                                      "finished_at_ms", "acked_tasks", "expected_tasks",
                                      "failure_reason", "location", "position", "alignment_group",
                                      "commit_status", "committed_at_ms", "state", "pending_tasks",
                                      "pending_tasks_total", "tasks", "unrestorable"}));
  EXPECT_EQ(json["tasks"], Json::array()) << "a list view's: GetCheckpoint fills it";
  EXPECT_EQ(json["unrestorable"], false);
  EXPECT_EQ(json["kind"], "SAVEPOINT_AND_STOP");
  EXPECT_EQ(json["status"], "COMPLETED");
  EXPECT_EQ(json["failure_reason"], "");
  EXPECT_EQ(Keys(json["state"]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(json["state"]["b"],
            Json({{"uri", "s3://x/b"}, {"size_bytes", 20}, {"checksum", "cb"}}));
  EXPECT_EQ(json["state"]["a"]["size_bytes"], 0);
  EXPECT_EQ(json["pending_tasks"], Json::array());
}

TEST(CtlOutputJson, PendingCheckpointListsTheTasksNotAcked) {
  v1::CheckpointInfo c;
  c.set_checkpoint_id(13);
  c.set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
  c.set_status(v1::CHECKPOINT_STATUS_PENDING);
  c.add_pending_tasks("2");
  const Json json = CheckpointJson(c);
  EXPECT_EQ(json["kind"], "CHECKPOINT");
  EXPECT_EQ(json["status"], "PENDING");
  EXPECT_EQ(json["state"], Json::object());
  EXPECT_EQ(json["pending_tasks"], Json::array({"2"}));
}

TEST(CtlOutputJson, Savepoint) {
  v1::SavepointProgress progress;
  progress.set_job_id("etl");
  progress.set_status(v1::SAVEPOINT_STATUS_FAILED);
  progress.set_final(true);
  progress.set_elapsed_ms(1234);
  v1::PipelineSavepoint* ok = progress.add_savepoints();
  ok->set_pipeline_id("p0");
  ok->set_savepoint_id(8);
  ok->set_status(v1::SAVEPOINT_STATUS_COMPLETED);
  ok->set_location("/sp/etl/p0/8");
  v1::PipelineSavepoint* bad = progress.add_savepoints();
  bad->set_pipeline_id("p1");
  bad->set_status(v1::SAVEPOINT_STATUS_FAILED);
  bad->set_failure_reason("declined by task 1");

  const Json json = SavepointJson(progress);
  EXPECT_EQ(Keys(json), (std::vector<std::string>{"job_id", "status", "savepoints", "elapsed_ms"}));
  EXPECT_EQ(json["status"], "FAILED");
  ASSERT_EQ(json["savepoints"].size(), 2u);
  EXPECT_EQ(Keys(json["savepoints"][0]),
            (std::vector<std::string>{"pipeline_id", "savepoint_id", "status", "location",
                                      "failure_reason", "acked_tasks", "expected_tasks"}));
  EXPECT_EQ(json["savepoints"][0]["status"], "COMPLETED");
  EXPECT_EQ(json["savepoints"][0]["savepoint_id"], 8);
  EXPECT_EQ(json["savepoints"][0]["location"], "/sp/etl/p0/8");
  EXPECT_EQ(json["savepoints"][1]["savepoint_id"], 0);
  EXPECT_EQ(json["savepoints"][1]["failure_reason"], "declined by task 1");
}

TEST(CtlOutputJson, DaemonStatusAndDeleted) {
  v1::DaemonStatus status;
  status.set_version("0.1.0");
  status.set_pipelines(3);
  const Json json = DaemonStatusJson(status);
  EXPECT_EQ(Keys(json),
            (std::vector<std::string>{
                "version", "uptime_ms", "pipelines", "worker_sessions", "io_threads", "data_dir",
                "checkpoints_completed", "checkpoints_failed", "checkpoints_expired",
                "pending_checkpoints", "role", "leader_address", "leader_epoch"}));
  EXPECT_EQ(json["pipelines"], 3);
  EXPECT_EQ(json["uptime_ms"], 0);
  EXPECT_EQ(json["role"], "single") << "a daemon without the role field has no HA";
  EXPECT_EQ(json["leader_address"], "");
  EXPECT_EQ(json["leader_epoch"], 0);
  EXPECT_EQ(DeletedJson("etl", "p0"),
            Json({{"job_id", "etl"}, {"pipeline_id", "p0"}, {"deleted", true}}));
}

TEST(CtlOutputJson, DaemonRolesAreLowercase) {
  v1::DaemonStatus status;
  status.set_role(v1::DAEMON_ROLE_STANDBY);
  status.set_leader_address("10.0.0.5:7070");
  status.set_leader_epoch(42);
  Json json = DaemonStatusJson(status);
  EXPECT_EQ(json["role"], "standby");
  EXPECT_EQ(json["leader_address"], "10.0.0.5:7070");
  EXPECT_EQ(json["leader_epoch"], 42);
  status.set_role(v1::DAEMON_ROLE_LEADER);
  EXPECT_EQ(DaemonStatusJson(status)["role"], "leader");
  status.set_role(v1::DAEMON_ROLE_SINGLE);
  EXPECT_EQ(DaemonStatusJson(status)["role"], "single");
}

TEST(CtlOutputJson, DumpIsOneDocumentAndNeverThrowsOnBadUtf8) {
  const std::string text = Dump(Json({{"id", std::string("bad \xff byte")}}));
  EXPECT_EQ(text.back(), '\n');
  Json parsed;
  EXPECT_NO_THROW(parsed = Json::parse(text));
  EXPECT_TRUE(parsed.contains("id"));
  EXPECT_EQ(Json::parse(Dump(DeletedJson("j", "p"))), DeletedJson("j", "p"));
}

}  // namespace
}  // namespace ckpt::ctl
