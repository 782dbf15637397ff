#include "web/web_view.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/admin_convert.h"
#include "api/admin_reads.h"
#include "runtime/quarantine.h"
#include "views/figures.h"
#include "web/api_json.h"
#include "web/escape.h"
#include "web/pages.h"
#include "web/pipeline_table.h"

namespace ckpt {

namespace {

// The rounds a pipeline page shows (the pending one, recent failures, the store's history).
constexpr int kHistoryRounds = 30;

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int HttpStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

// Pages may only be what they are: no script runs (there is none), nothing loads from elsewhere,
// no other site frames them.
void AddPageHeaders(HttpReply& reply) {
  reply.headers.emplace_back("Content-Security-Policy",
                             "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                             "form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
  reply.headers.emplace_back("X-Content-Type-Options", "nosniff");
  reply.headers.emplace_back("Referrer-Policy", "no-referrer");
  reply.headers.emplace_back("Cache-Control", "no-store");
}

HttpReply Html(int status, std::string body) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = std::move(body);
  AddPageHeaders(reply);
  return reply;
}

HttpReply JsonReply(int status, const Json& json) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = "application/json";
  reply.body = Dump(json);
  AddPageHeaders(reply);
  return reply;
}

HttpReply Failure(bool api, const Status& s) {
  const int status = HttpStatus(s);
  return api ? JsonReply(status, ErrorJson(s)) : Html(status, RenderErrorPage(status, s.message()));
}

bool IsApi(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path.substr(0, 8) == "/api/v1/" || path == "/api/v1";
}

// The path's segments, each percent-decoded; nullopt if one is not valid percent-encoding.
std::optional<std::vector<std::string>> Segments(std::string_view path) {
  std::vector<std::string> segments;
  if (path.empty() || path.front() != '/') return std::nullopt;
  path.remove_prefix(1);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    auto segment = PercentDecode(path.substr(0, slash));
    if (!segment) return std::nullopt;
    segments.push_back(std::move(*segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
    if (path.empty()) segments.emplace_back();  // a trailing slash: an empty last segment
  }
  return segments;
}

std::optional<int64_t> CheckpointId(const std::string& text) {
  int64_t id = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size() || id <= 0) return std::nullopt;
  return id;
}

// One request's answer, given once: by the page, or by its deadline if that comes first.
// Threading: Give and the deadline's handler run on the render loop (one thread).
class PageAnswer : public std::enable_shared_from_this<PageAnswer> {
 public:
  PageAnswer(std::function<void(HttpReply)> answer, std::atomic<int>& in_flight,
             boost::asio::io_context& render_on, bool api)
      : answer_(std::move(answer)), in_flight_(in_flight), deadline_(render_on), api_(api) {}

  void ArmDeadline(std::chrono::milliseconds after) {
    deadline_.expires_after(after);
    deadline_.async_wait([self = shared_from_this(), after](boost::system::error_code ec) {
      if (ec) return;  // answered in time
      self->Give(Failure(
          self->api_,
          Status::Unavailable("the page was not ready within " + FormatDuration(after.count()) +
                              " (a busy pipeline loop or store); try again")));
    });
  }

  void Give(HttpReply reply) {
    if (given_) return;
    given_ = true;
    deadline_.cancel();
    in_flight_.fetch_sub(1);
    auto answer = std::move(answer_);
    answer(std::move(reply));
  }

 private:
  std::function<void(HttpReply)> answer_;
  std::atomic<int>& in_flight_;
  boost::asio::steady_timer deadline_;
  const bool api_;
  bool given_ = false;
};

// What a pipeline's page is gathered into, step by step; shared by the steps' callbacks.
struct PipelineGather {
  PipelinePageData data;
  PipelineStatus status;
};

}  // namespace

void WebView::Serve(std::string_view method, std::string_view target,
                    std::function<void(HttpReply)> answer) {
  const bool api = IsApi(target);
  if (method != "GET") {
    const std::string why = "the web view is read-only: only GET is served here";
    HttpReply refused =
        api ? JsonReply(405, Json{{"error", {{"code", "METHOD_NOT_ALLOWED"}, {"message", why}}}})
            : Html(405, RenderErrorPage(405, why));
    refused.headers.emplace_back("Allow", "GET");
    return answer(std::move(refused));
  }
  if (in_flight_.fetch_add(1) >= limits_.max_in_flight) {
    in_flight_.fetch_sub(1);
    HttpReply busy =
        Failure(api, Status::Unavailable("too many pages are being served at once; try again"));
    busy.headers.emplace_back("Retry-After", "1");
    return answer(std::move(busy));
  }
  auto page = std::make_shared<PageAnswer>(std::move(answer), in_flight_, render_on_, api);
  page->ArmDeadline(limits_.deadline);
  ServePage(target, [page](HttpReply reply) { page->Give(std::move(reply)); });
}

void WebView::ServePage(std::string_view target, std::function<void(HttpReply)> answer) {
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const bool api = IsApi(path);
  if (path.empty() || path.front() != '/') {
    return answer(Failure(api, Status::InvalidArgument("the request target is not a path")));
  }
  auto params = ParseQuery(question == std::string_view::npos ? std::string_view()
                                                              : target.substr(question + 1));
  auto segments = Segments(path);
  if (!params || !segments) {
    return answer(Failure(api, Status::InvalidArgument("the URL is not valid percent-encoding")));
  }
  std::vector<std::string>& s = *segments;
  if (api) s.erase(s.begin(), s.begin() + 2);  // "api", "v1"
  const bool list = api ? s.size() == 1 && s[0] == "pipelines" : path == "/";
  const bool pipeline = s.size() == 3 && s[0] == "pipelines";
  const bool checkpoint = s.size() == 5 && s[0] == "pipelines" && s[3] == "checkpoints";
  if (!list && !pipeline && !checkpoint) {
    return answer(Failure(api, Status::NotFound(api ? "no such resource; try /api/v1/pipelines"
                                                    : "no such page; the pipelines are at /")));
  }

  if (list) {
    auto query = ParseTableQuery(*params);
    if (!query.ok()) return answer(Failure(api, query.status()));
    // The runners are held while their keys are in the rows.
    const auto runners = backend_.AllPipelines();
    const auto quarantined = backend_.AllUnreadable();  // held too while their keys are in rows
    std::vector<PipelineRow> rows;
    rows.reserve(runners.size() + quarantined.size());
    for (const UnreadableRecord& record : quarantined) {
      PipelineRow row{};
      row.key = &record.pipeline;
      row.state = PipelineState::kUnreadable;
      rows.push_back(row);
    }
    for (const auto& runner : runners) {
      const PipelineMetrics& m = runner->pipeline_metrics();
      constexpr auto relaxed = std::memory_order_relaxed;
      rows.push_back(PipelineRow{&runner->key(), static_cast<PipelineState>(m.state.load(relaxed)),
                                 m.pending.load(relaxed), m.last_completed_id.load(relaxed),
                                 m.last_completed_at_ms.load(relaxed),
                                 static_cast<int64_t>(m.last_duration_ms.load(relaxed)),
                                 m.checkpoints_completed_total.load(relaxed),
                                 m.checkpoints_failed_total.load(relaxed),
                                 m.checkpoints_expired_total.load(relaxed)});
    }
    const TablePage page = SelectPage(std::move(rows), *query);
    if (api) return answer(JsonReply(200, PipelineListJson(page, *query)));
    DaemonBanner banner;
    const auto leadership = backend_.facts().leadership;
    if (leadership.role == Leadership::Role::kStandby) {
      banner.text = "This daemon is a standby and serves no pipelines; the leader is " +
                    (leadership.leader_address.empty() ? std::string("not known yet")
                                                       : "at " + leadership.leader_address) +
                    ".";
    }
    return answer(Html(200, RenderPipelineListPage(page, *query, banner, WallNowMs())));
  }

  auto refresh = ParseRefresh(*params);
  if (!refresh.ok()) return answer(Failure(api, refresh.status()));
  const PipelineKey key{s[1], s[2]};
  auto runner = backend_.FindPipeline(key);
  if (!runner) {
    if (auto held = backend_.FindUnreadable(key)) {
      return answer(Failure(api, UnreadableStatus(*held)));
    }
    return answer(Failure(api, Status::NotFound("no pipeline " + key.ToString())));
  }

  if (checkpoint) {
    auto id = CheckpointId(s[4]);
    if (!id) {
      return answer(Failure(api, Status::InvalidArgument("a checkpoint id is a positive number")));
    }
    auto info = std::make_shared<v1::CheckpointInfo>();
    ReadCheckpoint(backend_, runner, *id, info.get(),
                   [this, api, key, info, refresh_s = *refresh,
                    answer = std::move(answer)](Status status) mutable {
                     boost::asio::post(render_on_, [api, key, info, refresh_s, status,
                                                    answer = std::move(answer)] {
                       if (!status.ok()) return answer(Failure(api, status));
                       if (api) return answer(JsonReply(200, CheckpointJson(*info)));
                       answer(Html(200, RenderCheckpointPage(key, *info, refresh_s, WallNowMs())));
                     });
                   });
    return;
  }

  // A pipeline's page: its status, then its explanation, then its history; each step starts the
  // next, and the last renders off the strands.
  auto gather = std::make_shared<PipelineGather>();
  auto finish = [this, api, gather, refresh_s = *refresh,
                 answer = std::move(answer)](Status status) mutable {
    boost::asio::post(render_on_, [api, gather, refresh_s, status, answer = std::move(answer)] {
      if (!status.ok()) return answer(Failure(api, status));
      ToProto(gather->status, &gather->data.pipeline);
      if (api) return answer(JsonReply(200, PipelinePageJson(gather->data)));
      answer(Html(200, RenderPipelinePage(gather->data, refresh_s, WallNowMs())));
    });
  };
  runner->Inspect([this, runner, gather,
                   finish = std::move(finish)](const PipelineCoordinator& c) mutable {
    gather->status = c.Describe(/*with_task_ids=*/false);
    runner->Explain(/*stuck_threshold_ms=*/0, [this, runner, gather, finish = std::move(finish)](
                                                  Status s, const Explanation& e,
                                                  const std::string& sentence) mutable {
      if (!s.ok()) return finish(s);
      ToProto(e, sentence, &gather->data.explanation);
      ReadCheckpointHistory(backend_, runner, kHistoryRounds, 0, &gather->data.history,
                            &gather->data.state_bytes,
                            [gather, finish = std::move(finish)](Status history) mutable {
                              // The page is still worth showing without its history.
                              if (!history.ok()) gather->data.history_error = history.message();
                              finish(Status::Ok());
                            });
    });
  });
}

}  // namespace ckpt
