#include <gtest/gtest.h>

#include "ctl/savepoint_view.h"

namespace ckpt::ctl {
namespace {

v1::SavepointProgress Progress(int acked_p0, v1::SavepointStatus p0_status, int64_t p0_id) {
  v1::SavepointProgress progress;
  progress.set_job_id("etl");
  progress.set_status(v1::SAVEPOINT_STATUS_IN_PROGRESS);
  v1::PipelineSavepoint* p0 = progress.add_savepoints();
  p0->set_pipeline_id("p0");
  p0->set_status(p0_status);
  p0->set_savepoint_id(p0_id);
  p0->set_acked_tasks(acked_p0);
  p0->set_expected_tasks(3);
  v1::PipelineSavepoint* p1 = progress.add_savepoints();
  p1->set_pipeline_id("p1");
  p1->set_status(v1::SAVEPOINT_STATUS_QUEUED);
  p1->set_expected_tasks(2);
  return progress;
}

TEST(CtlSavepointView, LiveLines) {
  EXPECT_EQ(
      LiveProgressLines("etl", Progress(2, v1::SAVEPOINT_STATUS_IN_PROGRESS, 7), 3200),
      (std::vector<std::string>{
          "Savepoint of job etl: IN_PROGRESS, 3.2s", "  PIPELINE  STATUS       ACKED  SAVEPOINT",
          "  p0        IN_PROGRESS  2/3    7", "  p1        QUEUED       0/2    -"}));
  v1::SavepointProgress unknown_count = Progress(0, v1::SAVEPOINT_STATUS_QUEUED, 0);
  unknown_count.mutable_savepoints(0)->set_expected_tasks(0);
  EXPECT_EQ(LiveProgressLines("etl", unknown_count, 0)[2], "  p0        QUEUED  -      -");
  ProgressChangeLog log;
  EXPECT_EQ(log.Changes(unknown_count, 0)[0], "savepoint etl/p0: QUEUED (0.0s)");
  EXPECT_EQ(LiveProgressLines("etl", v1::SavepointProgress(), 100),
            (std::vector<std::string>{"Savepoint of job etl: STARTING, 0.1s"}));
}

TEST(CtlSavepointView, PlainLinesOnlyForChanges) {
  ProgressChangeLog log;
  EXPECT_EQ(log.Changes(Progress(0, v1::SAVEPOINT_STATUS_IN_PROGRESS, 7), 100),
            (std::vector<std::string>{
                "savepoint etl/p0: IN_PROGRESS, savepoint 7, 0/3 tasks acked (0.1s)",
                "savepoint etl/p1: QUEUED, 0/2 tasks acked (0.1s)"}));
  // Only the time moved: nothing to say.
  EXPECT_TRUE(log.Changes(Progress(0, v1::SAVEPOINT_STATUS_IN_PROGRESS, 7), 900).empty());
  EXPECT_EQ(log.Changes(Progress(2, v1::SAVEPOINT_STATUS_IN_PROGRESS, 7), 1000),
            (std::vector<std::string>{
                "savepoint etl/p0: IN_PROGRESS, savepoint 7, 2/3 tasks acked (1.0s)"}));
  v1::SavepointProgress done = Progress(3, v1::SAVEPOINT_STATUS_COMPLETED, 7);
  done.mutable_savepoints(1)->set_status(v1::SAVEPOINT_STATUS_FAILED);
  done.mutable_savepoints(1)->set_failure_reason("pipeline is PAUSED");
  EXPECT_EQ(log.Changes(done, 1500),
            (std::vector<std::string>{
                "savepoint etl/p0: COMPLETED, savepoint 7, 3/3 tasks acked (1.5s)",
                "savepoint etl/p1: FAILED, 0/2 tasks acked: pipeline is PAUSED (1.5s)"}));
}

}  // namespace
}  // namespace ckpt::ctl
