// The web view's HTML and JSON from fixed inputs: ids printed as text and linked encoded, the why
// sentence, who has not acked, the plot, the tasks slowest first, the JSON's keys.
#include <gtest/gtest.h>

#include <regex>

#include "web/api_json.h"
#include "web/duration_plot.h"
#include "web/pages.h"

namespace ckpt {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;
const std::string kHostileJob = "j<script>alert(1)";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

PipelinePageData SlowPipeline() {
  PipelinePageData d;
  d.pipeline.mutable_spec()->set_job_id(kHostileJob);
  d.pipeline.mutable_spec()->set_pipeline_id("p\"0");
  d.pipeline.mutable_spec()->set_interval_ms(1000);
  d.pipeline.mutable_spec()->set_timeout_ms(600000);
  d.pipeline.set_state(v1::PIPELINE_STATE_RUNNING);
  d.pipeline.set_expected_tasks(2);
  d.pipeline.set_registered_tasks(2);
  d.pipeline.set_pending_checkpoint_id(8);
  d.explanation.set_summary("waiting for task 1 of worker w<7> for 41s");
  d.explanation.set_holdup(v1::PIPELINE_HOLDUP_ROUND_SLOW);
  d.explanation.set_pending_checkpoint_id(8);
  d.explanation.set_pending_age_ms(41000);
  auto* t = d.explanation.add_tasks();
  t->set_task_id("1");
  t->set_worker_id("w<7>");
  t->set_session_id(3);
  t->set_since_ms(kNow - 60000);
  t->set_last_message_at_ms(kNow - 38000);
  auto* lost = d.explanation.add_tasks();
  lost->set_task_id("2");
  d.explanation.set_tasks_total(5);
  auto* pending = d.history.add_checkpoints();
  pending->set_checkpoint_id(8);
  pending->set_status(v1::CHECKPOINT_STATUS_PENDING);
  pending->set_triggered_at_ms(kNow - 41000);
  pending->set_acked_tasks(1);
  pending->set_expected_tasks(2);
  for (int64_t id : {7, 6}) {
    auto* done = d.history.add_checkpoints();
    done->set_checkpoint_id(id);
    done->set_status(id == 7 ? v1::CHECKPOINT_STATUS_COMPLETED : v1::CHECKPOINT_STATUS_FAILED);
    done->set_triggered_at_ms(kNow - 100000 * (9 - id));
    done->set_finished_at_ms(kNow - 100000 * (9 - id) + 250 * id);
    done->set_failure_reason(id == 6 ? "declined: <disk full>" : "");
  }
  return d;
}

TEST(WebPages, APipelinePageSaysWhyAndNamesWhoHasNotAcked) {
  const std::string html = RenderPipelinePage(SlowPipeline(), 5, kNow);
  EXPECT_NE(html.find("<p id=\"why\" class=\"why warn\" data-holdup=\"ROUND_SLOW\">waiting for "
                      "task 1 of worker w&lt;7&gt; for 41s</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("data-task-id=\"1\"><td>1</td><td>w&lt;7&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<em>no worker holds it</em>"), std::string::npos);
  EXPECT_NE(html.find("and 3 more"), std::string::npos);
  EXPECT_NE(html.find("38s ago"), std::string::npos) << "the last message of w<7>";
  EXPECT_NE(html.find("1 of 2 tasks acked"), std::string::npos);
  EXPECT_NE(html.find("declined: &lt;disk full&gt;"), std::string::npos);
  // Three rounds: three bars, oldest first; the pending one drawn with its age so far.
  EXPECT_EQ(Count(html, "<rect class=\"bar "), 3u);
  EXPECT_LT(html.find("data-checkpoint-id=\"6\" x="), html.find("data-checkpoint-id=\"8\" x="));
  EXPECT_NE(html.find("<rect class=\"bar pending\""), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"bar failed\""), std::string::npos);
  EXPECT_NE(html.find("<meta http-equiv=\"refresh\" content=\"5\">"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "the job id must stay text";
  EXPECT_NE(html.find("j&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_NE(html.find("href=\"/pipelines/j%3Cscript%3Ealert%281%29/p%220/checkpoints/7\""),
            std::string::npos);
}

TEST(WebPages, EachRoundShowsTheSizeOfItsStates) {
  PipelinePageData d = SlowPipeline();
  d.state_bytes = {0, 4 << 20, 0};
  EXPECT_NE(RenderPipelinePage(d, 0, kNow).find(">4.0 MiB</td>"), std::string::npos);
  const Json json = PipelinePageJson(d);
  EXPECT_EQ(json["checkpoints"][1]["state_bytes"], 4 << 20);
  EXPECT_EQ(json["checkpoints"][0]["state_bytes"], 0);
}

TEST(WebPages, AHistoryThatCouldNotBeReadIsSaid) {
  PipelinePageData d = SlowPipeline();
  d.history.clear_checkpoints();
  d.history_error = "the store is <unavailable>";
  const std::string html = RenderPipelinePage(d, 0, kNow);
  EXPECT_NE(html.find("id=\"history-error\">The history could not be read: the store is "
                      "&lt;unavailable&gt;"),
            std::string::npos);
  EXPECT_EQ(html.find("http-equiv=\"refresh\""), std::string::npos) << "refresh 0: never";
}

TEST(WebPages, ThePlotScalesToItsTallestBar) {
  EXPECT_NE(DurationPlotSvg({}).find("No rounds to plot yet"), std::string::npos);
  const std::string svg = DurationPlotSvg({{1, 400, "COMPLETED", "CHECKPOINT"},
                                           {2, 800, "COMPLETED", "CHECKPOINT"},
                                           {3, 200, "EXPIRED", "SAVEPOINT"}});
  std::regex bar(
      R"re(<rect class="bar (\w+)" data-checkpoint-id="(\d)" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)">)re");
  std::vector<double> heights;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator();
       ++it) {
    heights.push_back(std::stod((*it)[3]));
  }
  ASSERT_EQ(heights.size(), 3u) << svg;
  // The axis tops at 1s (a round number above 800ms): 0.4, 0.8 and 0.2 of the plot's height.
  EXPECT_NEAR(heights[0] / heights[1], 0.5, 0.01);
  EXPECT_NEAR(heights[2] / heights[1], 0.25, 0.01);
  EXPECT_NE(svg.find(">1s</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>SAVEPOINT 3: 200ms, EXPIRED</title>"), std::string::npos);
}

TEST(WebPages, TheListPrintsIdsAsTextAndLinksThemEncoded) {
  std::deque<PipelineKey> keys{{kHostileJob, "p&1"}};
  TablePage page;
  page.total = 100000;
  page.matching = 1;
  PipelineRow row;
  row.key = &keys[0];
  row.state = PipelineState::kFailed;
  row.last_checkpoint_id = 12;
  page.rows.push_back(row);
  TableQuery query;
  query.job = "\"><script>";
  const std::string html = RenderPipelineListPage(page, query, DaemonBanner{}, kNow);
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"job\">j&lt;script&gt;alert(1)</td>"), std::string::npos);
  EXPECT_NE(html.find("href=\"/pipelines/j%3Cscript%3Ealert%281%29/p%261\""), std::string::npos);
  EXPECT_NE(html.find("value=\"&quot;&gt;&lt;script&gt;\""), std::string::npos);
  EXPECT_NE(html.find("data-state=\"FAILED\""), std::string::npos);
  EXPECT_NE(html.find("1 of 1 matching (100,000 pipelines in all)"), std::string::npos);
  DaemonBanner standby{"This daemon is a standby"};
  EXPECT_NE(RenderPipelineListPage({}, TableQuery{}, standby, kNow).find("id=\"banner\""),
            std::string::npos);
}

TEST(WebPages, ACheckpointPageListsTheSlowestTaskFirst) {
  v1::CheckpointInfo c;
  c.set_checkpoint_id(9);
  c.set_status(v1::CHECKPOINT_STATUS_COMPLETED);
  c.set_triggered_at_ms(kNow - 5000);
  c.set_finished_at_ms(kNow - 1000);
  for (auto [task, after] :
       {std::pair{"fast", 100}, std::pair{"slow", 4000}, std::pair{"mid", 900}}) {
    auto* t = c.add_tasks();
    t->set_task_id(task);
    t->set_acked_at_ms(kNow - 5000 + after);
    t->set_sync_duration_ms(after / 2);
    t->mutable_state()->set_uri(std::string("s3://b/<") + task + ">");
  }
  const std::string html = RenderCheckpointPage({"job", "p"}, c, 0, kNow);
  const size_t slow = html.find("data-task-id=\"slow\"");
  const size_t mid = html.find("data-task-id=\"mid\"");
  const size_t fast = html.find("data-task-id=\"fast\"");
  ASSERT_NE(fast, std::string::npos);
  EXPECT_LT(slow, mid);
  EXPECT_LT(mid, fast);
  EXPECT_NE(html.find("s3://b/&lt;slow&gt;"), std::string::npos);
  EXPECT_NE(html.find(">4s</td>"), std::string::npos) << "ack after 4s";
  EXPECT_EQ(html.find("Position"), std::string::npos) << "a round without a position";
  c.set_position(4200);
  EXPECT_NE(RenderCheckpointPage({"job", "p"}, c, 0, kNow).find("4200"), std::string::npos);
}

TEST(WebPages, TheJsonHasTheDocumentsThePagesShow) {
  const Json page = PipelinePageJson(SlowPipeline());
  EXPECT_EQ(page["pipeline"]["job_id"], kHostileJob);
  EXPECT_EQ(page["explanation"]["tasks"][0]["worker_id"], "w<7>");
  EXPECT_EQ(page["checkpoints"].size(), 3u);
  EXPECT_EQ(page["checkpoints"][0]["status"], "PENDING");
  EXPECT_EQ(page["history_error"], "");
  const Json error = ErrorJson(Status::NotFound("no pipeline a/b"));
  EXPECT_EQ(error["error"]["code"], "NOT_FOUND");
  EXPECT_EQ(error["error"]["message"], "no pipeline a/b");
}

}  // namespace
}  // namespace ckpt
