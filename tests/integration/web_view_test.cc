// The web view on metrics_listen against a real daemon: the JSON behind the pages (filter, sort,
// pages; a pipeline with the task that holds its round; one checkpoint), ids percent-decoded from
// paths and printed escaped, errors as JSON or HTML, the list served with every pipeline loop
// wedged, and metrics.web_view: false.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <future>
#include <nlohmann/json.hpp>

#include "api/admin_backend.h"
#include "daemon_fixture.h"
#include "http_client.h"
#include "raw_worker.h"
#include "web/web_view.h"

namespace ckpt::testing {
namespace {

using nlohmann::json;

class WebViewTest : public DaemonTest {
 protected:
  HttpResult Get(const std::string& path) { return HttpGet(daemon_->metrics_port(), path); }

  // The JSON document at `path`; fails the test unless it answers `status`.
  json GetJson(const std::string& path, int status = 200) {
    HttpResult r = Get(path);
    EXPECT_EQ(r.status, status) << path << "\n" << r.body;
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
    return json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }

  static std::vector<std::string> PipelineIds(const json& list) {
    std::vector<std::string> ids;
    for (const auto& p : list["pipelines"]) ids.push_back(p["pipeline_id"].get<std::string>());
    return ids;
  }
};

TEST_F(WebViewTest, ThePipelineListFiltersSortsAndPages) {
  config_.pipelines = {TestSpec("p3", {"0"}), TestSpec("p1", {"0"}), TestSpec("p2", {"0"}),
                       TestSpec("p0", {"0"})};
  PipelineSpec other = TestSpec("p9", {"0"});
  other.key.job_id = "other-job";
  config_.pipelines.push_back(other);
  StartDaemon();
  RawWorker worker(channel_);
  ASSERT_TRUE(worker.Hello("job", "p2", {"0"}));
  ASSERT_TRUE(worker.WaitWelcome().has_value());
  auto trigger = worker.WaitTrigger();
  ASSERT_TRUE(trigger.has_value());
  ASSERT_TRUE(worker.Ack(trigger->trigger().checkpoint_id(), "0"));
  ASSERT_TRUE(worker.WaitComplete().has_value());

  json page = GetJson("/api/v1/pipelines?limit=2");
  EXPECT_EQ(page["total"], 5);
  EXPECT_EQ(page["matching"], 5);
  EXPECT_EQ(PipelineIds(page), (std::vector<std::string>{"p0", "p1"}));  // by key: job, then id
  page = GetJson("/api/v1/pipelines?limit=2&offset=2");
  EXPECT_EQ(PipelineIds(page), (std::vector<std::string>{"p2", "p3"}));
  page = GetJson("/api/v1/pipelines?limit=2&offset=4");
  EXPECT_EQ(PipelineIds(page), (std::vector<std::string>{"p9"}));
  page = GetJson("/api/v1/pipelines?job=other");
  EXPECT_EQ(page["matching"], 1);
  EXPECT_EQ(PipelineIds(page), (std::vector<std::string>{"p9"}));

  ASSERT_TRUE(Eventually([&] {
    page = GetJson("/api/v1/pipelines?state=RUNNING");
    return page["matching"] == 1;
  })) << page.dump();
  const json& p2 = page["pipelines"][0];
  EXPECT_EQ(p2["pipeline_id"], "p2");
  EXPECT_EQ(p2["state"], "RUNNING");
  EXPECT_GE(p2["last_checkpoint_id"].get<int64_t>(), 1);
  EXPECT_GT(p2["last_completed_at_ms"].get<int64_t>(), 0);
  EXPECT_GE(p2["completed_since_start"].get<int64_t>(), 1);
  // The newest completion first: p2 is the only one that has one.
  page = GetJson("/api/v1/pipelines?sort=last_completed&order=desc&limit=1");
  EXPECT_EQ(PipelineIds(page), (std::vector<std::string>{"p2"}));

  json bad = GetJson("/api/v1/pipelines?limit=0", 400);
  EXPECT_EQ(bad["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("limit"), std::string::npos);
  EXPECT_EQ(GetJson("/api/v1/pipelines?sort=nonsense", 400)["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(GetJson("/api/v1/pipelines?job=%zz", 400)["error"]["code"], "INVALID_ARGUMENT");

  HttpResult html = Get("/?state=RUNNING");
  EXPECT_EQ(html.status, 200);
  EXPECT_NE(html.head.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(html.head.find("Content-Security-Policy: default-src 'none'"), std::string::npos)
      << html.head;
  EXPECT_NE(html.body.find("data-pipeline-id=\"p2\""), std::string::npos);
  EXPECT_EQ(html.body.find("data-pipeline-id=\"p3\""), std::string::npos) << "filtered out";
}

TEST_F(WebViewTest, APipelinesPageNamesTheTaskThatHoldsItsRound) {
  config_.stuck_threshold_ms = 100;
  config_.pipelines = {TestSpec("p", {"0", "1"}, 50, 600000)};
  StartDaemon();
  RawWorker worker(channel_);
  ASSERT_TRUE(worker.Hello("job", "p", {"0", "1"}, false, "w-holding"));
  ASSERT_TRUE(worker.WaitWelcome().has_value());
  auto first = worker.WaitTrigger();
  ASSERT_TRUE(first.has_value());
  const int64_t first_id = first->trigger().checkpoint_id();
  ASSERT_TRUE(worker.Ack(first_id, "0"));
  ASSERT_TRUE(worker.Ack(first_id, "1"));
  ASSERT_TRUE(worker.WaitComplete().has_value());
  auto second = worker.WaitTrigger();
  ASSERT_TRUE(second.has_value());
  const int64_t held_id = second->trigger().checkpoint_id();
  ASSERT_TRUE(worker.Ack(held_id, "0"));  // task 1 holds the round

  json page;
  ASSERT_TRUE(Eventually([&] {
    page = GetJson("/api/v1/pipelines/job/p");
    return page["explanation"]["holdup"] == "ROUND_SLOW" &&
           page["explanation"]["tasks"].size() == 1;
  })) << page.dump(2);
  EXPECT_EQ(page["pipeline"]["state"], "RUNNING");
  EXPECT_EQ(page["pipeline"]["pending_checkpoint_id"], held_id);
  const json& task = page["explanation"]["tasks"][0];
  EXPECT_EQ(task["task_id"], "1");
  EXPECT_EQ(task["worker_id"], "w-holding");
  EXPECT_GT(task["last_message_at_ms"].get<int64_t>(), 0);
  EXPECT_NE(page["explanation"]["summary"].get<std::string>().find("w-holding"), std::string::npos);
  ASSERT_GE(page["checkpoints"].size(), 2u);
  EXPECT_EQ(page["checkpoints"][0]["checkpoint_id"], held_id);
  EXPECT_EQ(page["checkpoints"][0]["status"], "PENDING");
  EXPECT_EQ(page["checkpoints"][1]["checkpoint_id"], first_id);
  EXPECT_EQ(page["checkpoints"][1]["status"], "COMPLETED");
  EXPECT_TRUE(page["checkpoints"][1].contains("state_bytes"));
  EXPECT_TRUE(page["checkpoints"][1]["state"].empty()) << "states are on the checkpoint's page";
  EXPECT_EQ(page["history_error"], "");

  HttpResult html = Get("/pipelines/job/p");
  ASSERT_EQ(html.status, 200);
  EXPECT_NE(html.body.find("<tr class=\"waiting-task\" data-task-id=\"1\">"), std::string::npos)
      << html.body;
  EXPECT_NE(html.body.find("w-holding"), std::string::npos);
  EXPECT_NE(html.body.find("<svg id=\"duration-plot\""), std::string::npos);
  EXPECT_NE(html.body.find("class=\"bar pending\""), std::string::npos);
  EXPECT_NE(html.body.find("<meta http-equiv=\"refresh\" content=\"5\">"), std::string::npos);
  EXPECT_EQ(Get("/pipelines/job/p?refresh=0").body.find("http-equiv=\"refresh\""),
            std::string::npos);

  json checkpoint = GetJson("/api/v1/pipelines/job/p/checkpoints/" + std::to_string(first_id));
  EXPECT_EQ(checkpoint["status"], "COMPLETED");
  ASSERT_EQ(checkpoint["tasks"].size(), 2u);
  EXPECT_GT(checkpoint["tasks"][0]["acked_at_ms"].get<int64_t>(), 0);
  EXPECT_EQ(checkpoint["tasks"][0]["worker_id"], "w-holding");
  json pending = GetJson("/api/v1/pipelines/job/p/checkpoints/" + std::to_string(held_id));
  EXPECT_EQ(pending["status"], "PENDING");
  HttpResult tasks_page = Get("/pipelines/job/p/checkpoints/" + std::to_string(held_id));
  ASSERT_EQ(tasks_page.status, 200);
  // Slowest first: the task that has not acked leads.
  EXPECT_LT(tasks_page.body.find("data-task-id=\"1\""), tasks_page.body.find("data-task-id=\"0\""));

  EXPECT_EQ(GetJson("/api/v1/pipelines/job/p/checkpoints/99999", 404)["error"]["code"],
            "NOT_FOUND");
  EXPECT_EQ(GetJson("/api/v1/pipelines/job/p/checkpoints/x1", 400)["error"]["code"],
            "INVALID_ARGUMENT");
  EXPECT_EQ(GetJson("/api/v1/pipelines/job/nope", 404)["error"]["code"], "NOT_FOUND");
  EXPECT_EQ(GetJson("/api/v1/nothing", 404)["error"]["code"], "NOT_FOUND");
  EXPECT_EQ(Get("/pipelines/job/p?refresh=-1").status, 400);
  HttpResult missing = Get("/no/such/page");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.head.find("Content-Type: text/html"), std::string::npos);
  HttpResult post = HttpRequest(daemon_->metrics_port(), "POST", "/pipelines/job/p");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.head.find("Allow: GET"), std::string::npos) << post.head;
  HttpResult delete_api = HttpRequest(daemon_->metrics_port(), "DELETE", "/api/v1/pipelines/job/p");
  EXPECT_EQ(delete_api.status, 405);
  EXPECT_EQ(json::parse(delete_api.body, nullptr, false)["error"]["code"], "METHOD_NOT_ALLOWED")
      << delete_api.body;
}

TEST_F(WebViewTest, IdsInPathsAreDecodedAndPrintedAsText) {
  config_.pipelines = {TestSpec("p <b>&\"x\"'", {"0"})};
  StartDaemon();
  const std::string path = "/pipelines/job/p%20%3Cb%3E%26%22x%22%27";
  HttpResult html = Get(path);
  ASSERT_EQ(html.status, 200) << html.body;
  EXPECT_NE(html.body.find("p &lt;b&gt;&amp;&quot;x&quot;&#39;"), std::string::npos);
  EXPECT_EQ(html.body.find("<b>"), std::string::npos) << "an id must never become markup";
  json page = GetJson("/api/v1" + path);
  EXPECT_EQ(page["pipeline"]["pipeline_id"], "p <b>&\"x\"'");
  HttpResult list = Get("/");
  EXPECT_NE(list.body.find("href=\"" + path + "\""), std::string::npos) << "links encode ids";
  EXPECT_EQ(list.body.find("<b>"), std::string::npos);
}

TEST_F(WebViewTest, TheListNeedsNoPipelineLoop) {
  config_.pipelines = {TestSpec("a", {"0"}), TestSpec("b", {"0"})};
  StartDaemon();
  WedgedLoops loops(*daemon_);
  ASSERT_TRUE(loops.wedged());
  json page = GetJson("/api/v1/pipelines");
  EXPECT_EQ(page["total"], 2);
  EXPECT_EQ(Get("/").status, 200);
}

// An AdminBackend over a running daemon's pipelines whose store reads never answer until released:
// a pipeline's page then waits on them as on a stuck store.
class HeldReadsBackend final : public AdminBackend {
 public:
  HeldReadsBackend(Registry& registry, AlignmentGroups& groups, DaemonMetrics& metrics)
      : registry_(registry), groups_(groups), metrics_(metrics) {}
  std::shared_ptr<PipelineRunner> FindPipeline(const PipelineKey& key) const override {
    return registry_.Find(key);
  }
  std::vector<std::shared_ptr<PipelineRunner>> AllPipelines() const override {
    return registry_.All();
  }
  PipelineDefaults pipeline_defaults() const override { return {}; }
  void CreatePipeline(const PipelineSpec&, std::optional<CheckpointRef>, CreateDone) override {}
  void RestorePipeline(std::shared_ptr<PipelineRunner>, CheckpointRef,
                       PipelineRunner::StatusDone) override {}
  void DeletePipeline(std::shared_ptr<PipelineRunner>, std::function<void(Status)>) override {}
  void ListCompleted(const PipelineKey&, int, int64_t, ListDone done) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(std::move(done));
  }
  AlignmentGroups& groups() override { return groups_; }
  DaemonMetrics& metrics() override { return metrics_; }
  Facts facts() const override { return {}; }

  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Release() {
    std::vector<ListDone> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    for (auto& done : held) done(std::vector<CompletedCheckpoint>{});
  }

 private:
  Registry& registry_;
  AlignmentGroups& groups_;
  DaemonMetrics& metrics_;
  std::mutex mu_;
  std::vector<ListDone> held_;
};

TEST_F(WebViewTest, APageStuckOnTheStoreIsAnsweredAtItsDeadlineAndHoldsOneSlot) {
  config_.pipelines = {TestSpec("p", {"0"})};
  StartDaemon();
  HeldReadsBackend backend(daemon_->pipelines().registry(), daemon_->pipelines().groups(),
                           daemon_->metrics());
  boost::asio::io_context render;
  auto guard = boost::asio::make_work_guard(render);
  std::thread render_thread([&] { render.run(); });
  WebView web(backend, render, WebLimits{/*max_in_flight=*/1, std::chrono::milliseconds(300)});
  struct Answers {
    std::mutex mu;
    std::vector<HttpReply> replies;
    size_t count() {
      std::lock_guard<std::mutex> lock(mu);
      return replies.size();
    }
  };
  Answers first;
  Answers second;
  auto serve = [&](const std::string& target, Answers& into) {
    boost::asio::post(render, [&web, target, &into] {
      web.Serve("GET", target, [&into](HttpReply reply) {
        std::lock_guard<std::mutex> lock(into.mu);
        into.replies.push_back(std::move(reply));
      });
    });
  };
  serve("/api/v1/pipelines/job/p", first);
  ASSERT_TRUE(Eventually([&] { return backend.held() == 1; })) << "the page waits on the store";
  serve("/", second);  // the one slot is taken: refused at once, not queued
  ASSERT_TRUE(Eventually([&] { return second.count() == 1; }));
  EXPECT_EQ(second.replies[0].status, 503);
  ASSERT_EQ(second.replies[0].headers.size() > 0, true);
  bool retry_after = false;
  for (const auto& [name, value] : second.replies[0].headers) retry_after |= name == "Retry-After";
  EXPECT_TRUE(retry_after);

  ASSERT_TRUE(Eventually([&] { return first.count() == 1; })) << "answered at its deadline";
  EXPECT_EQ(first.replies[0].status, 503);
  EXPECT_NE(first.replies[0].body.find("not ready within 300ms"), std::string::npos)
      << first.replies[0].body;
  backend.Release();  // the store answers late: the request has had its answer
  Answers third;
  serve("/api/v1/pipelines", third);
  ASSERT_TRUE(Eventually([&] { return third.count() == 1; }));
  EXPECT_EQ(third.replies[0].status, 200) << "the slot was given back at the deadline";
  // The late page rendered, and did not answer a second time.
  std::promise<void> drained;
  boost::asio::post(render, [&] { drained.set_value(); });
  drained.get_future().wait();
  EXPECT_EQ(first.count(), 1u);
  guard.reset();
  render.stop();
  render_thread.join();
}

TEST_F(WebViewTest, TurnedOffOnlyTheProbesAndMetricsAnswer) {
  config_.metrics_web_view = false;
  config_.pipelines = {TestSpec("a", {"0"})};
  StartDaemon();
  HttpResult page = Get("/");
  EXPECT_EQ(page.status, 404);
  EXPECT_NE(page.body.find("metrics.web_view: false"), std::string::npos) << page.body;
  EXPECT_EQ(Get("/api/v1/pipelines").status, 404);
  EXPECT_EQ(Get("/metrics").status, 200);
  EXPECT_EQ(Get("/healthz").status, 200);
}

}  // namespace
}  // namespace ckpt::testing
