// The coordinator's part of the security rules: takeovers stay within a principal, and what a
// worker may ask for (savepoint targets under savepoint_root, a rate per minute).
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(CoordinatorTakeover, AWorkerTakesOverOnlyTasksOfItsOwnPrincipal) {
  Harness h;
  h.Start();
  auto first = h.c().OnRegister(1, "w1", {"a"}, false, "etl-workers");
  ASSERT_TRUE(first.status.ok());
  h.Apply(first.actions);

  auto stranger = h.c().OnRegister(2, "w2", {"a"}, /*takeover=*/true, "billing-workers");
  EXPECT_EQ(stranger.status.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(stranger.status.message().find("etl-workers"), std::string::npos)
      << stranger.status.message();
  EXPECT_TRUE(stranger.actions.empty()) << "a refused takeover changes nothing";
  EXPECT_EQ(h.c().Describe().registered_tasks, 1);

  auto same = h.c().OnRegister(3, "w1-again", {"a"}, /*takeover=*/true, "etl-workers");
  EXPECT_TRUE(same.status.ok()) << same.status.ToString();
  // A task held by no one is free to anyone allowed the job.
  auto free_task = h.c().OnRegister(4, "w4", {"b"}, /*takeover=*/true, "billing-workers");
  EXPECT_TRUE(free_task.status.ok()) << free_task.status.ToString();
}

TEST(CoordinatorWorkerSavepoint, ATargetOutsideItsJobsDirectoryUnderSavepointRootIsRefused) {
  CoordinatorOptions options;
  options.savepoint_root = "/data/savepoints";
  PipelineSpec spec = MakeSpec();
  const std::string job_dir = "/data/savepoints/" + spec.key.job_id;
  Harness h(spec, 0, options);
  h.StartToFirstTrigger();
  for (const std::string& target : std::vector<std::string>{
           "/etc/cron.d/x", "/data/savepoints/../x", "/data/savepointsx", "/data/savepoints/mine",
           "/data/savepoints/other-job/p/1", job_dir + "x/1", job_dir + "/../other-job/1"}) {
    const Actions refused = h.c().OnWorkerSavepointRequest(1, target, false);
    auto answers = ActionsOf<SendSavepointRefused>(refused);
    ASSERT_EQ(answers.size(), 1u) << target;
    EXPECT_NE(answers[0].reason.find("savepoint_root/<its job>"), std::string::npos)
        << answers[0].reason;
  }
  EXPECT_FALSE(h.c().CurrentSavepoint().has_value());
  const Actions ok = h.c().OnWorkerSavepointRequest(1, job_dir + "/mine", false);
  EXPECT_TRUE(ActionsOf<SendSavepointRefused>(ok).empty());
}

TEST(CoordinatorWorkerSavepoint, RequestsBeyondThePerMinuteLimitAreRefused) {
  CoordinatorOptions options;
  options.savepoint_requests_per_minute = 2;
  PipelineSpec spec = MakeSpec();
  spec.tolerable_failures = 1000;  // the rounds of the minute below expire unanswered
  Harness h(spec, 0, options);
  h.StartToFirstTrigger();
  h.AckAll(h.LastTriggerId());
  auto refusals = [&] {
    const Actions out = h.c().OnWorkerSavepointRequest(1, "", false);
    h.Apply(out);
    return ActionsOf<SendSavepointRefused>(out);
  };
  EXPECT_TRUE(refusals().empty());
  EXPECT_TRUE(refusals().empty());  // joins the pending one, but counts
  auto third = refusals();
  ASSERT_EQ(third.size(), 1u);
  EXPECT_NE(third[0].reason.find("limits.savepoint_requests_per_minute (2)"), std::string::npos)
      << third[0].reason;
  EXPECT_EQ(third[0].limit, CountedLimit::kSavepointRequestsPerMinute)
      << "counted under its own label, not max_savepoints_per_pipeline";
  h.RunFor(seconds(61));  // the minute passes
  auto later = refusals();
  EXPECT_TRUE(later.empty()) << "the window moved on: " << (later.empty() ? "" : later[0].reason);
}

TEST(CoordinatorWorkerSavepoint, ARequestIsLoggedWithThePrincipalAndWorker) {
  Harness h;
  h.Start();
  auto reg = h.c().OnRegister(1, "w7", {"a", "b"}, false, "etl-workers");
  ASSERT_TRUE(reg.status.ok());
  h.Apply(reg.actions);
  const Actions out = h.c().OnWorkerSavepointRequest(1, "", /*stop=*/true);
  bool attributed = false;
  for (const Log& log : ActionsOf<Log>(out)) {
    attributed = attributed || (log.text.find("w7") != std::string::npos &&
                                log.text.find("etl-workers") != std::string::npos &&
                                log.text.find("savepoint-and-stop") != std::string::npos);
  }
  EXPECT_TRUE(attributed);
}

}  // namespace
}  // namespace ckpt::testing
