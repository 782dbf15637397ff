#include "web/pages.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/explanation.h"
#include "views/enum_names.h"
#include "views/figures.h"
#include "views/task_order.h"
#include "web/duration_plot.h"
#include "web/escape.h"

namespace ckpt {

namespace {

// A checkpoint's page lists at most this many tasks, the slowest; its JSON has every one.
constexpr size_t kMaxTaskRows = 1000;

constexpr std::string_view kStyle =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2327;background:#f6f7f9}"
    "header{background:#1f2d3d;color:#fff;padding:8px 16px}"
    "header a{color:#fff;font-weight:600;text-decoration:none;margin-right:8px}"
    ".muted{color:#6e7781}main{padding:12px 16px;max-width:1200px}"
    "h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}"
    "table{border-collapse:collapse;background:#fff;width:100%}"
    "th,td{padding:4px 8px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere}"
    "th{background:#eef1f4;font-weight:600}th a{color:inherit}.num{text-align:right}"
    ".state{font-weight:600;padding:1px 6px;border-radius:3px;font-size:12px}"
    ".state-RUNNING{background:#dff3e4;color:#1a7f37}"
    ".state-PAUSED{background:#fff4ce;color:#8a6100}"
    ".state-FAILED{background:#ffe1e1;color:#b42318}"
    ".state-STOPPED{background:#e8e8ee;color:#555}"
    ".state-WAITING_FOR_TASKS{background:#e6f0ff;color:#1f5fbf}"
    ".why{padding:8px 12px;border-left:4px solid #1a7f37;background:#fff;margin:8px 0}"
    ".why.warn{border-color:#d4a72c}.why.bad{border-color:#b42318}"
    "dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 16px;background:#fff;"
    "padding:8px 12px;margin:8px 0}dl.facts dt{color:#57606a}"
    "dl.facts dd{margin:0;overflow-wrap:anywhere}"
    "form#filter{margin:8px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:end}"
    "form#filter label{display:flex;flex-direction:column;font-size:12px;color:#57606a}"
    "nav.pages{margin:8px 0;display:flex;gap:16px}.banner{background:#fff4ce;padding:8px 12px}"
    "#duration-plot{width:100%;max-width:720px;height:auto;background:#fff;display:block}"
    "#duration-plot .axis{stroke:#8c959f}#duration-plot .label{font-size:11px;fill:#57606a}"
    ".bar.completed{fill:#2da44e}.bar.failed{fill:#cf222e}.bar.expired{fill:#bf8700}"
    ".bar.aborted{fill:#8c959f}.bar.pending{fill:#54aeff}.error{color:#b42318}";

std::string E(std::string_view text) { return HtmlEscape(text); }

// 100000 -> "100,000".
std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Layout(const std::string& title, const std::string& body, int refresh_s) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  if (refresh_s > 0) {
    html += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_s) + "\">";
  }
  html += "<title>" + E(title) + " - ckptd</title><style>";
  html += kStyle;
  html +=
      "</style></head><body><header><a href=\"/\">ckptd</a>"
      "<span class=\"muted\">checkpoint coordination</span></header><main>";
  html += body;
  html += "</main></body></html>\n";
  return html;
}

std::string StateBadge(const std::string& state) {
  return "<span class=\"state state-" + E(state) + "\">" + E(state) + "</span>";
}

// The why sentence's look: fine, worth a look, or broken.
const char* HoldupClass(v1::PipelineHoldup holdup) {
  switch (holdup) {
    case v1::PIPELINE_HOLDUP_NONE:
    case v1::PIPELINE_HOLDUP_ROUND_PENDING: return "why";
    case v1::PIPELINE_HOLDUP_FAILED: return "why bad";
    default: return "why warn";
  }
}

std::string Fact(const std::string& name, const std::string& value_html) {
  return "<dt>" + E(name) + "</dt><dd>" + value_html + "</dd>";
}

std::string RefreshNote(int refresh_s, const std::string& stop_link) {
  if (refresh_s <= 0) return "Not reloading by itself.";
  return "Reloads every " + std::to_string(refresh_s) + "s (<a href=\"" + stop_link +
         "\">stop</a>).";
}

std::string Crumbs(const PipelineKey& key, const std::string& last_html) {
  return "<p class=\"crumbs\"><a href=\"/\">Pipelines</a> &rsaquo; <a href=\"/?job=" +
         PercentEncode(key.job_id) + "\">" + E(key.job_id) + "</a> &rsaquo; " + last_html + "</p>";
}

int64_t TookMs(const v1::CheckpointInfo& c, int64_t now_ms) {
  const int64_t end = c.finished_at_ms() > 0 ? c.finished_at_ms() : now_ms;
  return std::max<int64_t>(0, end - c.triggered_at_ms());
}

std::string PendingSection(const PipelinePageData& d, int64_t now_ms) {
  const v1::PipelineExplanation& e = d.explanation;
  std::string html = "<section id=\"pending\">";
  if (e.pending_checkpoint_id() > 0) {
    // How many acked, from the history's entry of the round: read a moment after the
    // explanation, it may already be gone (completed); then the count is left out.
    std::string acked;
    for (const auto& c : d.history.checkpoints()) {
      if (c.checkpoint_id() == e.pending_checkpoint_id()) {
        acked = "; " + std::to_string(c.acked_tasks()) + " of " +
                std::to_string(c.expected_tasks()) + " tasks acked";
      }
    }
    html += "<p id=\"pending-round\">" + E(ShortName(e.pending_kind())) + " " +
            std::to_string(e.pending_checkpoint_id()) + " pending for " +
            E(FormatDuration(e.pending_age_ms())) + " (timeout " +
            E(FormatDuration(e.timeout_ms())) + ", stuck after " +
            E(FormatDuration(e.stuck_threshold_ms())) + ")" + acked + ".</p>";
  } else {
    html += "<p id=\"pending-round\">No round pending.";
    if (e.next_trigger_in_ms() >= 0) {
      html += " The next is due in " + E(FormatDuration(e.next_trigger_in_ms())) + ".";
    }
    html += "</p>";
  }
  if (e.tasks_size() > 0) {
    const bool waiting_for_acks = e.pending_checkpoint_id() > 0;
    html += std::string("<p>") +
            (waiting_for_acks ? "Tasks that have not acked" : "Tasks no worker holds") + " (" +
            Grouped(static_cast<uint64_t>(e.tasks_total())) + "):</p>";
    html +=
        "<table id=\"waiting\"><thead><tr><th>Task</th><th>Worker</th><th>Session</th>"
        "<th>Held or missing since</th><th>Last message</th></tr></thead><tbody>";
    for (const auto& t : e.tasks()) {
      html +=
          "<tr class=\"waiting-task\" data-task-id=\"" + E(t.task_id()) + "\"><td>" +
          E(t.task_id()) + "</td><td>" +
          (t.worker_id().empty() ? std::string("<em>no worker holds it</em>") : E(t.worker_id())) +
          "</td><td class=\"num\">" +
          (t.session_id() ? std::to_string(t.session_id()) : std::string("-")) + "</td><td>" +
          E(t.since_ms() > 0 ? FormatAgo(t.since_ms(), now_ms) : "since the daemon started") +
          "</td><td>" +
          E(t.last_message_at_ms() > 0 ? FormatAgo(t.last_message_at_ms(), now_ms) : "-") +
          "</td></tr>";
    }
    html += "</tbody></table>";
    if (e.tasks_total() > e.tasks_size()) {
      html += "<p class=\"muted\">and " +
              Grouped(static_cast<uint64_t>(e.tasks_total() - e.tasks_size())) +
              " more (the first " + std::to_string(e.tasks_size()) +
              " are listed, here and in the JSON).</p>";
    }
  }
  return html + "</section>";
}

std::string HistorySection(const PipelinePageData& d, int64_t now_ms) {
  const PipelineKey key{d.pipeline.spec().job_id(), d.pipeline.spec().pipeline_id()};
  std::string html = "<section id=\"history\">";
  if (!d.history_error.empty()) {
    return html + "<p class=\"error\" id=\"history-error\">The history could not be read: " +
           E(d.history_error) + "</p></section>";
  }
  // The plot runs oldest to newest; the table newest first, as the API lists them.
  std::vector<PlotBar> bars;
  for (auto it = d.history.checkpoints().rbegin(); it != d.history.checkpoints().rend(); ++it) {
    bars.push_back(PlotBar{it->checkpoint_id(), TookMs(*it, now_ms), ShortName(it->status()),
                           ShortName(it->kind())});
  }
  html += DurationPlotSvg(bars);
  html +=
      "<table id=\"checkpoints\"><thead><tr><th class=\"num\">Id</th><th>Kind</th><th>Status</th>"
      "<th>Triggered</th><th class=\"num\">Duration</th><th class=\"num\">Tasks acked</th>"
      "<th class=\"num\">Size</th><th>Reason or location</th></tr></thead><tbody>";
  for (int i = 0; i < d.history.checkpoints_size(); ++i) {
    const v1::CheckpointInfo& c = d.history.checkpoints(i);
    const int64_t bytes = static_cast<size_t>(i) < d.state_bytes.size() ? d.state_bytes[i] : 0;
    const std::string status = ShortName(c.status());
    const std::string detail = !c.failure_reason().empty() ? c.failure_reason() : c.location();
    html += "<tr class=\"checkpoint\" data-checkpoint-id=\"" + std::to_string(c.checkpoint_id()) +
            "\" data-status=\"" + E(status) + "\"><td class=\"num\"><a href=\"" +
            CheckpointPath(key, c.checkpoint_id()) + "\">" + std::to_string(c.checkpoint_id()) +
            "</a></td><td>" + E(ShortName(c.kind())) + "</td><td>" + E(status) +
            (c.unrestorable() ? " UNRESTORABLE" : "") + "</td><td>" +
            E(FormatAgo(c.triggered_at_ms(), now_ms)) + "</td><td class=\"num\">" +
            E(FormatDuration(TookMs(c, now_ms))) + "</td><td class=\"num\">" +
            std::to_string(c.acked_tasks()) + " / " + std::to_string(c.expected_tasks()) +
            "</td><td class=\"num\">" + E(FormatBytes(bytes)) + "</td><td>" + E(detail) +
            "</td></tr>";
  }
  html += "</tbody></table>";
  if (d.history.checkpoints_size() == 0) html += "<p class=\"muted\">No rounds yet.</p>";
  return html + "</section>";
}

}  // namespace

std::string PipelinePath(const PipelineKey& key) {
  return "/pipelines/" + PercentEncode(key.job_id) + "/" + PercentEncode(key.pipeline_id);
}

std::string CheckpointPath(const PipelineKey& key, int64_t checkpoint_id) {
  return PipelinePath(key) + "/checkpoints/" + std::to_string(checkpoint_id);
}

std::string RenderPipelineListPage(const TablePage& page, const TableQuery& query,
                                   const DaemonBanner& banner, int64_t now_ms) {
  std::string body = "<h1>Pipelines</h1>";
  if (!banner.text.empty()) body += "<p class=\"banner\" id=\"banner\">" + E(banner.text) + "</p>";
  // The filter: a plain GET form, so that every view is a link one can share.
  body +=
      "<form id=\"filter\" method=\"get\" action=\"/\"><label>Job contains<input name=\"job\" "
      "maxlength=\"256\" value=\"" +
      E(query.job) +
      "\"></label><label>State<select name=\"state\"><option value=\"\">any"
      "</option>";
  for (size_t i = 0; i < kPipelineStateCount; ++i) {
    const auto state = static_cast<PipelineState>(i);
    const std::string name = PipelineStateName(state);
    body += "<option value=\"" + name + "\"" + (query.state == state ? " selected" : "") + ">" +
            name + "</option>";
  }
  body += "</select></label><label>Sort by<select name=\"sort\">";
  for (RowOrder order : kRowOrders) {
    body += std::string("<option value=\"") + RowOrderName(order) + "\"" +
            (query.order == order ? " selected" : "") + ">" + RowOrderName(order) + "</option>";
  }
  body += std::string("</select></label><label>Order<select name=\"order\"><option value=\"asc\"") +
          (query.descending ? "" : " selected") + ">ascending</option><option value=\"desc\"" +
          (query.descending ? " selected" : "") +
          ">descending</option></select></label><label>Per page<input name=\"limit\" "
          "type=\"number\" min=\"1\" max=\"" +
          std::to_string(kMaxTableLimit) + "\" value=\"" + std::to_string(query.limit) +
          "\"></label><input type=\"hidden\" name=\"refresh\" value=\"" +
          std::to_string(query.refresh_s) + "\"><button type=\"submit\">Show</button></form>";

  const size_t first = page.rows.empty() ? 0 : query.offset + 1;
  const size_t last = query.offset + page.rows.size();
  body += "<p id=\"summary\">" +
          (page.rows.empty() ? std::string("None shown")
                             : "Showing " + Grouped(first) + "&ndash;" + Grouped(last)) +
          " of " + Grouped(page.matching) + " matching (" + Grouped(page.total) +
          " pipelines in all).</p>";

  // Column headings sort by their column; the current one again flips the order.
  auto heading = [&](const char* title, RowOrder order, bool number) {
    TableQuery q = query;
    q.descending = q.order == order ? !query.descending : false;
    q.order = order;
    q.offset = 0;
    const char* mark = query.order != order ? "" : query.descending ? " &darr;" : " &uarr;";
    return std::string(number ? "<th class=\"num\">" : "<th>") + "<a href=\"/?" +
           E(TableQueryString(q)) + "\">" + title + "</a>" + mark + "</th>";
  };
  body += "<table id=\"pipelines\"><thead><tr>" + heading("Job", RowOrder::kKey, false) +
          "<th>Pipeline</th>" + heading("State", RowOrder::kState, false) + "<th>Round</th>" +
          "<th class=\"num\">Last checkpoint</th>" +
          heading("Completed", RowOrder::kLastCompleted, false) +
          heading("Took", RowOrder::kDuration, true) +
          "<th class=\"num\">Completed since start</th>" +
          heading("Failed or expired", RowOrder::kFailures, true) + "</tr></thead><tbody>";
  for (const PipelineRow& row : page.rows) {
    const std::string state = PipelineStateName(row.state);
    body +=
        "<tr class=\"pipeline\" data-job-id=\"" + E(row.key->job_id) + "\" data-pipeline-id=\"" +
        E(row.key->pipeline_id) + "\" data-state=\"" + state + "\"><td class=\"job\">" +
        E(row.key->job_id) + "</td><td class=\"pipeline\"><a href=\"" + PipelinePath(*row.key) +
        "\">" + E(row.key->pipeline_id) + "</a></td><td>" + StateBadge(state) + "</td><td>" +
        (row.pending ? "pending" : "") + "</td><td class=\"num\">" +
        (row.last_checkpoint_id > 0 ? std::to_string(row.last_checkpoint_id) : "-") + "</td><td>" +
        E(FormatAgo(row.last_completed_at_ms, now_ms)) + "</td><td class=\"num\">" +
        (row.last_duration_ms > 0 ? E(FormatDuration(row.last_duration_ms)) : "-") +
        "</td><td class=\"num\">" + Grouped(row.completed) + "</td><td class=\"num\">" +
        Grouped(row.failed + row.expired) + "</td></tr>";
  }
  body += "</tbody></table>";

  body += "<nav class=\"pages\">";
  if (query.offset > 0 && page.matching > 0) {
    TableQuery prev = query;
    // Past the end (an old link), "previous" is the last page that has rows.
    const size_t last_page = (page.matching - 1) / query.limit * query.limit;
    prev.offset = std::min(query.offset > query.limit ? query.offset - query.limit : 0, last_page);
    body += "<a rel=\"prev\" href=\"/?" + E(TableQueryString(prev)) + "\">&larr; previous</a>";
  }
  if (last < page.matching) {
    TableQuery next = query;
    next.offset = last;
    body += "<a rel=\"next\" href=\"/?" + E(TableQueryString(next)) + "\">next &rarr;</a>";
  }
  body += "</nav>";
  TableQuery still = query;
  still.refresh_s = 0;
  body += "<p class=\"muted\">Counts since this daemon started. " +
          RefreshNote(query.refresh_s, "/?" + E(TableQueryString(still))) +
          " The same as JSON: <a href=\"/api/v1/pipelines?" + E(TableQueryString(query)) +
          "\">/api/v1/pipelines</a>.</p>";
  return Layout("Pipelines", body, query.refresh_s);
}

std::string RenderPipelinePage(const PipelinePageData& d, int refresh_s, int64_t now_ms) {
  const v1::Pipeline& p = d.pipeline;
  const v1::PipelineExplanation& e = d.explanation;
  const PipelineKey key{p.spec().job_id(), p.spec().pipeline_id()};
  const std::string state = ShortName(p.state());
  std::string body = Crumbs(key, E(key.pipeline_id));
  body += "<h1><span id=\"job-id\">" + E(key.job_id) + "</span> / <span id=\"pipeline-id\">" +
          E(key.pipeline_id) + "</span> " + StateBadge(state) + "</h1>";
  body += std::string("<p id=\"why\" class=\"") + HoldupClass(e.holdup()) + "\" data-holdup=\"" +
          E(ShortName(e.holdup())) + "\">" + E(e.summary()) + "</p>";

  body += "<dl class=\"facts\" id=\"facts\">";
  std::string state_text = E(state);
  if (!e.state_reason().empty()) state_text += " (" + E(e.state_reason()) + ")";
  if (e.state_since_ms() > 0) state_text += ", since " + E(FormatAgo(e.state_since_ms(), now_ms));
  body += Fact("State", state_text);
  body += Fact("Interval", E(FormatDuration(p.spec().interval_ms())) + ", timeout " +
                               E(FormatDuration(p.spec().timeout_ms())));
  // The adaptive interval: what the next trigger goes by, and why (the pipeline's `why`).
  const int64_t effective =
      e.effective_interval_ms() > 0 ? e.effective_interval_ms() : p.effective_interval_ms();
  const std::string& reason =
      e.effective_interval_ms() > 0 ? e.effective_interval_reason() : p.effective_interval_reason();
  body += Fact("Effective interval",
               E(FormatDuration(effective)) + (reason.empty() ? "" : " (" + E(reason) + ")"));
  std::string tasks = std::to_string(p.registered_tasks()) + " of " +
                      std::to_string(p.expected_tasks()) + " registered";
  if (p.missing_tasks_total() > 0) {
    tasks += "; missing " + std::to_string(p.missing_tasks_total()) + ": ";
    for (int i = 0; i < p.missing_tasks_size() && i < 20; ++i) {
      tasks += (i ? ", " : "") + E(p.missing_tasks(i));
    }
    if (p.missing_tasks_total() > std::min(p.missing_tasks_size(), 20)) tasks += ", ...";
  }
  body += Fact("Tasks", tasks);
  body += Fact("Last completed", p.last_completed_checkpoint_id() > 0
                                     ? std::to_string(p.last_completed_checkpoint_id()) + ", " +
                                           E(FormatAgo(p.last_completed_at_ms(), now_ms))
                                     : std::string("none yet"));
  body += Fact("Recent rounds", e.recent_rounds() == 0
                                    ? std::string("none completed since the start")
                                    : "p95 " + E(FormatDuration(e.recent_p95_duration_ms())) +
                                          " of the last " + std::to_string(e.recent_rounds()));
  body += Fact("Counts", "completed " + Grouped(static_cast<uint64_t>(p.completed_count())) +
                             ", failed " + Grouped(static_cast<uint64_t>(p.failed_count())) +
                             ", expired " + Grouped(static_cast<uint64_t>(p.expired_count())) +
                             "; consecutive failures " + std::to_string(p.consecutive_failures()) +
                             " (tolerable " + std::to_string(p.spec().tolerable_failures()) + ")");
  body += Fact("Generation", std::to_string(p.generation()));
  if (p.restore().checkpoint_id() > 0) {
    const auto& r = p.restore();
    std::string from = E(ShortName(r.kind())) + " " + std::to_string(r.checkpoint_id());
    if (!r.source_job_id().empty()) {
      from += " of " + E(r.source_job_id()) + "/" + E(r.source_pipeline_id());
    }
    if (r.position() > 0) from += ", at position " + std::to_string(r.position());
    body += Fact("Restores from", from);
  }
  if (p.spec().commit_timeout_ms() > 0) {
    body += Fact("Commit timeout", std::to_string(p.spec().commit_timeout_ms()) + " ms");
    body += Fact("Committing", p.committing_checkpoint_id() > 0
                                   ? std::to_string(p.committing_checkpoint_id())
                                   : std::string("none"));
    body += Fact("Last committed", std::to_string(p.last_committed_checkpoint_id()));
  }
  if (p.spec().position_interval() > 0) {
    body += Fact("Position interval", std::to_string(p.spec().position_interval()));
  }
  body += "</dl>";

  body += "<h2>Pending round</h2>" + PendingSection(d, now_ms);
  body += "<h2>History</h2>" + HistorySection(d, now_ms);
  const std::string path = PipelinePath(key);
  body += "<p class=\"muted\">" + RefreshNote(refresh_s, path + "?refresh=0") +
          " The same as JSON: <a href=\"/api/v1" + path + "\">/api/v1" + E(path) + "</a>.</p>";
  return Layout(key.job_id + "/" + key.pipeline_id, body, refresh_s);
}

std::string RenderCheckpointPage(const PipelineKey& key, const v1::CheckpointInfo& c, int refresh_s,
                                 int64_t now_ms) {
  const bool pending = c.status() == v1::CHECKPOINT_STATUS_PENDING;
  const std::string id = std::to_string(c.checkpoint_id());
  std::string body = Crumbs(
      key, "<a href=\"" + PipelinePath(key) + "\">" + E(key.pipeline_id) + "</a> &rsaquo; " + id);
  body += "<h1>" + E(ShortName(c.kind())) + " " + id + " of " + E(key.job_id) + " / " +
          E(key.pipeline_id) + "</h1>";
  body += "<dl class=\"facts\" id=\"facts\">";
  body +=
      Fact("Status", E(ShortName(c.status())) +
                         (c.unrestorable() ? " (unrestorable: a task failed to restore it)" : ""));
  body += Fact("Triggered", E(FormatAgo(c.triggered_at_ms(), now_ms)));
  body += Fact(pending ? "Pending for" : "Took", E(FormatDuration(TookMs(c, now_ms))));
  body += Fact("Tasks acked",
               std::to_string(c.acked_tasks()) + " of " + std::to_string(c.expected_tasks()));
  if (!c.failure_reason().empty()) body += Fact("Reason", E(c.failure_reason()));
  if (!c.location().empty()) body += Fact("Location", E(c.location()));
  if (c.position() > 0) body += Fact("Position", std::to_string(c.position()));
  body += "</dl>";
  if (c.tasks_size() == 0) {
    body +=
        "<p class=\"muted\">No task figures (an older failed round, or stored before they were "
        "kept).</p>";
  } else {
    body +=
        "<h2>Tasks, slowest first</h2><table id=\"tasks\"><thead><tr><th>Task</th><th>Worker</th>"
        "<th class=\"num\">Ack after</th><th class=\"num\">Sync</th><th class=\"num\">Async</th>"
        "<th class=\"num\">Alignment</th><th class=\"num\">Size</th><th>State URI</th></tr>"
        "</thead><tbody>";
    auto figure = [](int64_t ms) { return ms > 0 ? E(FormatDuration(ms)) : std::string("-"); };
    std::vector<const v1::TaskCheckpointInfo*> rows = TasksSlowestFirst(c);
    const size_t hidden = rows.size() > kMaxTaskRows ? rows.size() - kMaxTaskRows : 0;
    rows.resize(rows.size() - hidden);
    for (const v1::TaskCheckpointInfo* t : rows) {
      std::string after;
      if (t->acked_at_ms() > 0) {
        after = FormatDuration(std::max<int64_t>(t->acked_at_ms() - c.triggered_at_ms(), 0));
      } else {
        after = pending ? "waiting" : "not acked";
      }
      body += "<tr class=\"task\" data-task-id=\"" + E(t->task_id()) + "\"><td>" + E(t->task_id()) +
              "</td><td>" + (t->worker_id().empty() ? "-" : E(t->worker_id())) +
              "</td><td class=\"num\">" + E(after) + "</td><td class=\"num\">" +
              figure(t->sync_duration_ms()) + "</td><td class=\"num\">" +
              figure(t->async_duration_ms()) + "</td><td class=\"num\">" +
              figure(t->alignment_duration_ms()) + "</td><td class=\"num\">" +
              E(FormatBytes(t->state().size_bytes())) + "</td><td>" +
              (t->state().uri().empty() ? "-" : E(t->state().uri())) + "</td></tr>";
    }
    body += "</tbody></table>";
    if (hidden > 0) {
      body += "<p class=\"muted\" id=\"tasks-hidden\">and " + Grouped(hidden) +
              " faster tasks (the JSON has every one).</p>";
    }
  }
  // A finished round does not change: only a pending one reloads itself.
  if (!pending) refresh_s = 0;
  const std::string path = CheckpointPath(key, c.checkpoint_id());
  body += "<p class=\"muted\">" + RefreshNote(refresh_s, path + "?refresh=0") +
          " The same as JSON: <a href=\"/api/v1" + path + "\">/api/v1" + E(path) + "</a>.</p>";
  return Layout("checkpoint " + id + " of " + key.job_id + "/" + key.pipeline_id, body, refresh_s);
}

std::string RenderErrorPage(int status, const std::string& message) {
  return Layout("error " + std::to_string(status),
                "<h1>" + std::to_string(status) + "</h1><p class=\"error\" id=\"error\">" +
                    E(message) + "</p><p><a href=\"/\">All pipelines</a></p>",
                0);
}

}  // namespace ckpt
