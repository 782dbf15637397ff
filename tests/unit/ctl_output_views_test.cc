#include <gtest/gtest.h>

#include "ctl/output_views.h"

namespace ckpt::ctl {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

v1::Pipeline MakePipeline(const std::string& job, const std::string& id, v1::PipelineState state) {
  v1::Pipeline p;
  p.mutable_spec()->set_job_id(job);
  p.mutable_spec()->set_pipeline_id(id);
  p.mutable_spec()->add_task_ids("0");
  p.mutable_spec()->add_task_ids("1");
  p.mutable_spec()->set_interval_ms(10'000);
  p.mutable_spec()->set_timeout_ms(600'000);
  p.mutable_spec()->set_retained(10);
  p.set_state(state);
  p.set_expected_tasks(2);
  return p;
}

TEST(CtlOutputViews, PipelinesTableIsAlignedWithHumanTimes) {
  Pipelines pipelines;
  v1::Pipeline* a = pipelines.Add();
  *a = MakePipeline("etl", "p0", v1::PIPELINE_STATE_RUNNING);
  a->set_registered_tasks(2);
  a->set_pending_checkpoint_id(9);
  a->set_last_completed_checkpoint_id(8);
  a->set_last_completed_at_ms(kNow - 3000);
  a->set_completed_count(8);
  *pipelines.Add() = MakePipeline("analytics", "p12", v1::PIPELINE_STATE_WAITING_FOR_TASKS);
  SortPipelines(&pipelines);
  EXPECT_EQ(
      PipelinesTable(pipelines, kNow),
      "JOB        PIPELINE  STATE              TASKS  PENDING  LAST CHECKPOINT  COMPLETED  FAILED  "
      "EXPIRED  INTERVAL  TIMEOUT\n"
      "analytics  p12       WAITING_FOR_TASKS  0/2    -        never            0          0       "
      "0        10s       10m\n"
      "etl        p0        RUNNING            2/2    9        8, 3s ago        8          0       "
      "0        10s       10m\n");
}

TEST(CtlOutputViews, AListCutShortSaysHowManyMoreThereAre) {
  v1::Pipeline p = MakePipeline("etl", "p0", v1::PIPELINE_STATE_WAITING_FOR_TASKS);
  for (int i = 0; i < 1000; ++i) p.add_missing_tasks("t" + std::to_string(i));
  p.set_missing_tasks_total(100000);
  const std::string text = PipelineDetail(p, kNow);
  EXPECT_NE(text.find("t9, … (99990 more)"), std::string::npos) << text;
}

TEST(CtlOutputViews, NoPipelines) {
  EXPECT_EQ(PipelinesTable(Pipelines(), kNow), "No pipelines.\n");
}

TEST(CtlOutputViews, PipelineDetailNamesMissingTasks) {
  v1::Pipeline p = MakePipeline("etl", "p0", v1::PIPELINE_STATE_WAITING_FOR_TASKS);
  p.set_registered_tasks(1);
  p.add_missing_tasks("1");
  const std::string text = PipelineDetail(p, kNow);
  EXPECT_NE(text.find("Pipeline:            etl/p0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("State:               WAITING_FOR_TASKS\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Tasks:               1/2 registered (0, 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Missing tasks:       1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Pending checkpoint:  none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Last completed:      never\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Interval:            10s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Timeout:             10m\n"), std::string::npos) << text;
}

TEST(CtlOutputViews, LongListsAreAbbreviated) {
  google::protobuf::RepeatedPtrField<std::string> ids;
  for (int i = 0; i < 13; ++i) *ids.Add() = std::to_string(i);
  EXPECT_EQ(JoinAbbreviated(ids, 3), "0, 1, 2, … (10 more)");
  EXPECT_EQ(JoinAbbreviated(ids, 13), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12");
}

TEST(CtlOutputViews, CheckpointsShowThePendingOneFirstWithWhoIsMissing) {
  Checkpoints list;
  v1::CheckpointInfo* done = list.Add();
  done->set_checkpoint_id(7);
  done->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
  done->set_status(v1::CHECKPOINT_STATUS_COMPLETED);
  done->set_triggered_at_ms(kNow - 12'000);
  done->set_finished_at_ms(kNow - 12'000 + 35);
  done->set_acked_tasks(3);
  done->set_expected_tasks(3);
  v1::CheckpointInfo* expired = list.Add();
  expired->set_checkpoint_id(6);
  expired->set_kind(v1::CHECKPOINT_KIND_SAVEPOINT);
  expired->set_status(v1::CHECKPOINT_STATUS_EXPIRED);
  expired->set_triggered_at_ms(kNow - 700'000);
  expired->set_finished_at_ms(kNow - 100'000);
  expired->set_acked_tasks(1);
  expired->set_expected_tasks(3);
  expired->set_failure_reason("timed out");
  // Even listed last, the pending round comes first.
  v1::CheckpointInfo* pending = list.Add();
  pending->set_checkpoint_id(8);
  pending->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
  pending->set_status(v1::CHECKPOINT_STATUS_PENDING);
  pending->set_triggered_at_ms(kNow - 2000);
  pending->set_acked_tasks(1);
  pending->set_expected_tasks(3);
  pending->add_pending_tasks("1");
  pending->add_pending_tasks("2");

  EXPECT_EQ(CheckpointsView(list, kNow),
            "Pending: CHECKPOINT 8, triggered 2s ago, 1/3 tasks acked\n"
            "  waiting for 2 tasks: 1, 2\n"
            "\n"
            "ID  KIND        STATUS     TRIGGERED  TOOK  ACKED  LOCATION / REASON\n"
            "7   CHECKPOINT  COMPLETED  12s ago    35ms  3/3\n"
            "6   SAVEPOINT   EXPIRED    11m ago    10m   1/3    timed out\n");
}

TEST(CtlOutputViews, ACommitColumnAppearsWhereACommitPhaseIs) {
  Checkpoints list;
  v1::CheckpointInfo* committing = list.Add();
  committing->set_checkpoint_id(9);
  committing->set_kind(v1::CHECKPOINT_KIND_CHECKPOINT);
  committing->set_status(v1::CHECKPOINT_STATUS_COMPLETED);
  committing->set_triggered_at_ms(kNow - 3000);
  committing->set_finished_at_ms(kNow - 2900);
  committing->set_acked_tasks(2);
  committing->set_expected_tasks(2);
  committing->set_commit_status(v1::COMMIT_STATUS_COMMITTING);
  v1::CheckpointInfo* committed = list.Add();
  *committed = *committing;
  committed->set_checkpoint_id(8);
  committed->set_commit_status(v1::COMMIT_STATUS_COMMITTED);
  v1::CheckpointInfo* none = list.Add();
  *none = *committing;
  none->set_checkpoint_id(7);
  none->set_commit_status(v1::COMMIT_STATUS_NONE);
  EXPECT_EQ(CheckpointsView(list, kNow),
            "No checkpoint pending.\n"
            "\n"
            "ID  KIND        STATUS     COMMIT      TRIGGERED  TOOK   ACKED  LOCATION / REASON\n"
            "9   CHECKPOINT  COMPLETED  COMMITTING  3s ago     100ms  2/2\n"
            "8   CHECKPOINT  COMPLETED  COMMITTED   3s ago     100ms  2/2\n"
            "7   CHECKPOINT  COMPLETED  -           3s ago     100ms  2/2\n");

  committed->set_committed_at_ms(kNow - 2400);
  auto* task = committed->add_tasks();
  task->set_task_id("0");
  task->set_worker_id("w");
  task->set_acked_at_ms(kNow - 2950);
  task->set_committed_at_ms(kNow - 2500);
  const std::string detail = CheckpointTasksView(*committed, kNow);
  EXPECT_NE(detail.find("commit: COMMITTED 500ms after complete"), std::string::npos) << detail;
  EXPECT_NE(detail.find("COMMITTED AFTER"), std::string::npos) << detail;
  EXPECT_NE(detail.find("400ms"), std::string::npos) << detail;
}

TEST(CtlOutputViews, NoCheckpoints) {
  EXPECT_EQ(CheckpointsView(Checkpoints(), kNow),
            "No checkpoint pending.\n\nNo finished checkpoints.\n");
}

TEST(CtlOutputViews, SavepointResultAddsAReasonColumnOnlyWhenNeeded) {
  v1::SavepointProgress result;
  result.set_job_id("etl");
  result.set_status(v1::SAVEPOINT_STATUS_COMPLETED);
  result.set_elapsed_ms(1200);
  v1::PipelineSavepoint* s = result.add_savepoints();
  s->set_pipeline_id("p0");
  s->set_savepoint_id(9);
  s->set_status(v1::SAVEPOINT_STATUS_COMPLETED);
  s->set_acked_tasks(2);
  s->set_expected_tasks(2);
  s->set_location("/sp/etl/p0/9");
  EXPECT_EQ(SavepointResult(result),
            "Savepoint of job etl: COMPLETED in 1.2s\n"
            "PIPELINE  SAVEPOINT  STATUS     ACKED  LOCATION\n"
            "p0        9          COMPLETED  2/2    /sp/etl/p0/9\n");

  result.set_status(v1::SAVEPOINT_STATUS_FAILED);
  v1::PipelineSavepoint* f = result.add_savepoints();
  f->set_pipeline_id("p1");
  f->set_status(v1::SAVEPOINT_STATUS_FAILED);
  f->set_expected_tasks(2);
  f->set_failure_reason("pipeline is PAUSED");
  EXPECT_EQ(SavepointResult(result),
            "Savepoint of job etl: FAILED in 1.2s\n"
            "PIPELINE  SAVEPOINT  STATUS     ACKED  LOCATION      REASON\n"
            "p0        9          COMPLETED  2/2    /sp/etl/p0/9\n"
            "p1        -          FAILED     0/2                  pipeline is PAUSED\n");
}

TEST(CtlOutputViews, DaemonSummary) {
  v1::DaemonStatus status;
  status.set_version("0.1.0");
  status.set_uptime_ms(125'000);
  status.set_pipelines(2);
  status.set_worker_sessions(3);
  status.set_io_threads(4);
  status.set_data_dir("/var/lib/ckptd");
  status.set_checkpoints_completed(10);
  EXPECT_EQ(DaemonSummary(status, "127.0.0.1:7070"),
            "ckptd 0.1.0 at 127.0.0.1:7070: serving, up 2m05s\n"
            "  pipelines 2, worker sessions 3, pending checkpoints 0, io threads 4\n"
            "  checkpoints completed 10, failed 0, expired 0; data_dir /var/lib/ckptd\n");
}

TEST(CtlOutputViews, DaemonSummaryOfALeader) {
  v1::DaemonStatus status;
  status.set_version("0.1.0");
  status.set_uptime_ms(1000);
  status.set_role(v1::DAEMON_ROLE_LEADER);
  status.set_leader_address("a:7070");
  status.set_leader_epoch(12);
  EXPECT_EQ(DaemonSummary(status, "a:7070"),
            "ckptd 0.1.0 at a:7070: leader, serving, up 1.0s\n"
            "  pipelines 0, worker sessions 0, pending checkpoints 0, io threads 0\n"
            "  checkpoints completed 0, failed 0, expired 0; data_dir \n"
            "  role leader, leader address a:7070, leader epoch 12\n");
}

TEST(CtlOutputViews, DaemonSummaryOfAStandbyNamesTheLeader) {
  v1::DaemonStatus status;
  status.set_version("0.1.0");
  status.set_uptime_ms(1000);
  status.set_role(v1::DAEMON_ROLE_STANDBY);
  status.set_leader_address("a:7070");
  status.set_leader_epoch(12);
  EXPECT_EQ(DaemonSummary(status, "b:7070"),
            "ckptd 0.1.0 at b:7070: standby, not serving, up 1.0s\n"
            "  role standby, leader address a:7070, leader epoch 12\n");
  EXPECT_EQ(StandbyNote(status), "standby; leader is a:7070\n");
  status.clear_leader_address();
  EXPECT_EQ(StandbyNote(status), "standby; no leader is known yet\n");
  EXPECT_NE(DaemonSummary(status, "b:7070").find("leader address unknown"), std::string::npos);
}

}  // namespace
}  // namespace ckpt::ctl
