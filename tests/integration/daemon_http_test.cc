// The daemon's /metrics, /healthz and /readyz: every metric docs/OPERATING.md lists ("Operating
// ckptd") with HELP and TYPE, values that follow real checkpoints, per-pipeline series only when
// asked, and metrics_listen "" off.
#include <gtest/gtest.h>

#include <regex>

#include "ckpt_version.h"
#include "daemon_fixture.h"
#include "http_client.h"
#include "raw_worker.h"

namespace ckpt::testing {
namespace {

// The value of the sample line that starts with `series` ("name{labels}" or "name"), or -1.
double SampleValue(const std::string& page, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const size_t at = page.find(needle);
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + needle.size()));
}

class DaemonHttpTest : public DaemonTest {
 protected:
  std::string Metrics() {
    HttpResult r = HttpGet(daemon_->metrics_port(), "/metrics");
    EXPECT_EQ(r.status, 200);
    return "\n" + r.body;
  }
};

TEST_F(DaemonHttpTest, EveryContractMetricHasHelpAndType) {
  StartDaemon();
  ASSERT_GT(daemon_->metrics_port(), 0);
  const std::string page = Metrics();
  const std::pair<const char*, const char*> families[] = {
      {"ckptd_checkpoints_completed_total", "counter"},
      {"ckptd_checkpoints_failed_total", "counter"},
      {"ckptd_checkpoints_expired_total", "counter"},
      {"ckptd_checkpoint_duration_seconds", "histogram"},
      {"ckptd_trigger_delay_seconds", "histogram"},
      {"ckptd_trigger_held_seconds", "histogram"},
      {"ckptd_round_fan_in_own_seconds", "histogram"},
      {"ckptd_store_commit_seconds", "histogram"},
      {"ckptd_round_fan_out_seconds", "histogram"},
      {"ckptd_round_fan_in_seconds", "histogram"},
      {"ckptd_pending_checkpoints", "gauge"},
      {"ckptd_pipelines", "gauge"},
      {"ckptd_worker_sessions", "gauge"},
      {"ckptd_worker_session_calls", "gauge"},
      {"ckptd_session_frames_read_total", "counter"},
      {"ckptd_session_frames_written_total", "counter"},
      {"ckptd_session_envelopes_written_total", "counter"},
      {"ckptd_acks_total", "counter"},
      {"ckptd_ignored_messages_total", "counter"},
      {"ckptd_build_info", "gauge"},
  };
  for (const auto& [name, type] : families) {
    SCOPED_TRACE(name);
    EXPECT_NE(page.find(std::string("\n# HELP ") + name + " "), std::string::npos);
    EXPECT_NE(page.find(std::string("\n# TYPE ") + name + " " + type + "\n"), std::string::npos);
  }
  EXPECT_EQ(SampleValue(page, std::string("ckptd_build_info{version=\"") + kCkptVersion + "\"}"),
            1);
  for (const char* reason : {"unowned_task", "not_pending", "duplicate", "unknown_message"}) {
    EXPECT_EQ(
        SampleValue(page, std::string("ckptd_ignored_messages_total{reason=\"") + reason + "\"}"),
        0);
  }
  EXPECT_EQ(page.find("ckptd_pipeline_"), std::string::npos) << "per-pipeline series are off";
}

TEST_F(DaemonHttpTest, ValuesFollowCheckpoints) {
  config_.pipelines = {TestSpec("p", {"0"}, 50)};
  StartDaemon();
  EXPECT_EQ(SampleValue(Metrics(), "ckptd_pipelines{state=\"WAITING_FOR_TASKS\"}"), 1);
  RawWorker worker(channel_);
  ASSERT_TRUE(worker.Hello("job", "p", {"0"}));
  ASSERT_TRUE(worker.WaitWelcome().has_value());
  for (int i = 0; i < 2; ++i) {
    auto trigger = worker.WaitTrigger();
    ASSERT_TRUE(trigger.has_value());
    ASSERT_TRUE(worker.Ack(trigger->trigger().checkpoint_id(), "0"));
    ASSERT_TRUE(worker.WaitComplete().has_value());
  }
  ASSERT_TRUE(worker.Ack(1, "0"));  // an old round: ignored as not pending
  std::string page;
  // A page is not one instant: a counter read early in it may predate the stale ack counted
  // late in it (a poll that began before the second round finished). Wait for one page that
  // shows them all.
  ASSERT_TRUE(Eventually([&] {
    page = Metrics();
    return SampleValue(page, "ckptd_ignored_messages_total{reason=\"not_pending\"}") >= 1 &&
           SampleValue(page, "ckptd_checkpoints_completed_total") >= 2 &&
           SampleValue(page, "ckptd_checkpoint_duration_seconds_count") >= 2 &&
           SampleValue(page, "ckptd_round_fan_in_seconds_count") >= 2;
  })) << page;
  EXPECT_GE(SampleValue(page, "ckptd_checkpoints_completed_total"), 2);
  EXPECT_GE(SampleValue(page, "ckptd_acks_total"), 3);
  EXPECT_EQ(SampleValue(page, "ckptd_worker_sessions"), 1);
  EXPECT_EQ(SampleValue(page, "ckptd_pipelines{state=\"RUNNING\"}"), 1);
  EXPECT_EQ(SampleValue(page, "ckptd_pipelines{state=\"WAITING_FOR_TASKS\"}"), 0);
  EXPECT_GE(SampleValue(page, "ckptd_checkpoint_duration_seconds_count"), 2);
  EXPECT_GE(SampleValue(page, "ckptd_store_commit_seconds_count"), 2);
  // Both rounds were handed out, and both were completed after a last ack; the stale ack after
  // them started no commit, so no third fan-in.
  EXPECT_GE(SampleValue(page, "ckptd_round_fan_out_seconds_count"), 2);
  EXPECT_EQ(SampleValue(page, "ckptd_round_fan_in_seconds_count"), 2);
  EXPECT_EQ(SampleValue(page, "ckptd_round_fan_in_own_seconds_count"), 2);
  EXPECT_GE(SampleValue(page, "ckptd_trigger_delay_seconds_count"), 1);
  // Every periodic trigger observes its hold too (0 when nothing held it).
  EXPECT_GE(SampleValue(page, "ckptd_trigger_held_seconds_count"), 1);
  EXPECT_EQ(SampleValue(page, "ckptd_checkpoint_duration_seconds_bucket{le=\"+Inf\"}"),
            SampleValue(page, "ckptd_checkpoint_duration_seconds_count"));
}

TEST_F(DaemonHttpTest, PipelinesByStateFollowPauseAndDelete) {
  StartDaemon();
  CreateThroughApi(TestSpec("a", {"0"}));
  CreateThroughApi(TestSpec("b", {"0"}));
  auto runner = daemon_->pipelines().registry().Find({"job", "a"});
  std::promise<void> paused;
  runner->Pause([&](Status, const PipelineStatus&) { paused.set_value(); });
  paused.get_future().wait();
  std::string page;
  ASSERT_TRUE(Eventually([&] {
    page = Metrics();
    return SampleValue(page, "ckptd_pipelines{state=\"PAUSED\"}") == 1 &&
           SampleValue(page, "ckptd_pipelines{state=\"WAITING_FOR_TASKS\"}") == 1;
  })) << page;
  std::promise<Status> deleted;
  daemon_->pipelines().Delete(runner, [&](Status s) { deleted.set_value(s); });
  ASSERT_TRUE(deleted.get_future().get().ok());
  ASSERT_TRUE(Eventually([&] {
    page = Metrics();
    return SampleValue(page, "ckptd_pipelines{state=\"PAUSED\"}") == 0;
  })) << page;
}

TEST_F(DaemonHttpTest, PerPipelineSeriesWhenTurnedOnWithEscapedLabels) {
  config_.metrics_per_pipeline = true;
  config_.pipelines = {TestSpec("p \"quoted\" \\ slash", {"0"})};
  StartDaemon();
  const std::string page = Metrics();
  const std::string labels = R"({job_id="job",pipeline_id="p \"quoted\" \\ slash")";
  EXPECT_EQ(SampleValue(page, "ckptd_pipeline_checkpoints_completed_total" + labels + "}"), 0)
      << page;
  EXPECT_EQ(SampleValue(page, "ckptd_pipeline_state" + labels + ",state=\"WAITING_FOR_TASKS\"}"),
            1);
  EXPECT_EQ(SampleValue(page, "ckptd_pipeline_state" + labels + ",state=\"RUNNING\"}"), 0);
}

TEST_F(DaemonHttpTest, HealthAndReadiness) {
  StartDaemon();
  EXPECT_TRUE(daemon_->ready());
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz").status, 200);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/readyz").status, 200);
  const int port = daemon_->metrics_port();
  daemon_->Shutdown();
  EXPECT_FALSE(daemon_->ready());
  EXPECT_FALSE(TestSocket(port).connected()) << "the HTTP port must be closed after shutdown";
}

TEST_F(DaemonHttpTest, EmptyMetricsListenServesNoHttp) {
  config_.metrics_listen = "";
  StartDaemon();
  EXPECT_EQ(daemon_->metrics_port(), 0);
  EXPECT_TRUE(daemon_->ready());
  EXPECT_NE(daemon_->MetricsText().find("ckptd_build_info"), std::string::npos);
}

TEST_F(DaemonHttpTest, AMetricsPortInUseFailsTheStartCleanly) {
  StartDaemon();
  DaemonConfig other = config_;
  other.data_dir = data_dir_.string() + "-other";
  other.metrics_listen = "127.0.0.1:" + std::to_string(daemon_->metrics_port());
  Daemon second(other);
  Status s = second.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("metrics_listen"), std::string::npos) << s.message();
  EXPECT_FALSE(second.ready());
  std::filesystem::remove_all(other.data_dir);
}

TEST_F(DaemonHttpTest, AScrapeOfPerPipelineSeriesNeedsNoPipelineLoop) {
  config_.metrics_per_pipeline = true;
  config_.pipelines = {TestSpec("a", {"0"}), TestSpec("b", {"0"})};
  StartDaemon();
  // Wedge every pipeline loop: a scrape must not wait for one (and must not stall one).
  WedgedLoops loops(*daemon_);
  ASSERT_TRUE(loops.wedged());
  HttpResult r = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("ckptd_pipeline_state{job_id=\"job\",pipeline_id=\"a\""),
            std::string::npos);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz").status, 200)
      << "a loop busy for a moment is not a dead daemon";
}

TEST_F(DaemonHttpTest, SecondDaemonOnTheSameGrpcPortFailsWithAddressInUse) {
  StartDaemon();
  DaemonConfig other = config_;
  other.data_dir = data_dir_.string() + "-other";
  other.listen = "127.0.0.1:" + std::to_string(daemon_->grpc_port());
  Daemon second(other);
  Status s = second.Start();
  EXPECT_FALSE(s.ok()) << "two daemons must never share the gRPC port";
  EXPECT_NE(s.message().find("address already in use"), std::string::npos) << s.message();
  std::filesystem::remove_all(other.data_dir);
}

}  // namespace
}  // namespace ckpt::testing
