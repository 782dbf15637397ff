#include "web/pipeline_table.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "core/spec_validation.h"

namespace ckpt {

namespace {

// A whole decimal number within [min, max], or nullopt.
std::optional<int64_t> Number(const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

bool Matches(const PipelineRow& row, const TableQuery& q) {
  if (q.state && row.state != *q.state) return false;
  return q.job.empty() || row.key->job_id.find(q.job) != std::string::npos;
}

// Whether a comes before b in ascending order; ties go by key.
bool Before(const PipelineRow& a, const PipelineRow& b, RowOrder order) {
  auto by = [&](auto x, auto y) {
    if (x != y) return x < y;
    return *a.key < *b.key;
  };
  switch (order) {
    case RowOrder::kKey: return *a.key < *b.key;
    case RowOrder::kState: return by(static_cast<int>(a.state), static_cast<int>(b.state));
    case RowOrder::kLastCompleted: return by(a.last_completed_at_ms, b.last_completed_at_ms);
    case RowOrder::kDuration: return by(a.last_duration_ms, b.last_duration_ms);
    case RowOrder::kFailures: return by(a.failed + a.expired, b.failed + b.expired);
  }
  return false;
}

}  // namespace

const char* RowOrderName(RowOrder order) {
  switch (order) {
    case RowOrder::kKey: return "key";
    case RowOrder::kState: return "state";
    case RowOrder::kLastCompleted: return "last_completed";
    case RowOrder::kDuration: return "duration";
    case RowOrder::kFailures: return "failures";
  }
  return "key";
}

Result<TableQuery> ParseTableQuery(const QueryParams& params) {
  TableQuery q;
  if (auto job = QueryValue(params, "job")) {
    if (job->size() > kMaxIdBytes) {
      return Status::InvalidArgument("job: at most " + std::to_string(kMaxIdBytes) + " bytes");
    }
    q.job = *job;
  }
  if (auto state = QueryValue(params, "state"); state && !state->empty()) {
    for (size_t i = 0; i < kPipelineStateCount; ++i) {
      if (*state == PipelineStateName(static_cast<PipelineState>(i))) {
        q.state = static_cast<PipelineState>(i);
      }
    }
    if (!q.state) {
      return Status::InvalidArgument(
          "state: one of WAITING_FOR_TASKS, RUNNING, PAUSED, FAILED, STOPPED (or empty for all)");
    }
  }
  if (auto sort = QueryValue(params, "sort"); sort && !sort->empty()) {
    bool known = false;
    for (RowOrder order : kRowOrders) {
      if (*sort == RowOrderName(order)) {
        q.order = order;
        known = true;
      }
    }
    if (!known) {
      return Status::InvalidArgument("sort: one of key, state, last_completed, duration, failures");
    }
  }
  if (auto order = QueryValue(params, "order"); order && !order->empty()) {
    if (*order != "asc" && *order != "desc") {
      return Status::InvalidArgument("order: asc or desc");
    }
    q.descending = *order == "desc";
  }
  if (auto offset = QueryValue(params, "offset"); offset && !offset->empty()) {
    auto n = Number(*offset, 0, std::numeric_limits<int32_t>::max());
    if (!n) return Status::InvalidArgument("offset: a whole number from 0");
    q.offset = static_cast<size_t>(*n);
  }
  if (auto limit = QueryValue(params, "limit"); limit && !limit->empty()) {
    auto n = Number(*limit, 1, kMaxTableLimit);
    if (!n) {
      return Status::InvalidArgument("limit: from 1 to " + std::to_string(kMaxTableLimit));
    }
    q.limit = static_cast<size_t>(*n);
  }
  auto refresh = ParseRefresh(params);
  if (!refresh.ok()) return refresh.status();
  q.refresh_s = *refresh;
  return q;
}

Result<int> ParseRefresh(const QueryParams& params) {
  auto refresh = QueryValue(params, "refresh");
  if (!refresh || refresh->empty()) return 5;
  auto n = Number(*refresh, 0, 3600);
  if (!n) return Status::InvalidArgument("refresh: seconds from 0 (never) to 3600");
  return static_cast<int>(*n);
}

std::string TableQueryString(const TableQuery& q) {
  std::string s = "job=" + PercentEncode(q.job);
  s += "&state=";
  if (q.state) s += PipelineStateName(*q.state);
  s += std::string("&sort=") + RowOrderName(q.order);
  s += q.descending ? "&order=desc" : "&order=asc";
  s += "&offset=" + std::to_string(q.offset);
  s += "&limit=" + std::to_string(q.limit);
  s += "&refresh=" + std::to_string(q.refresh_s);
  return s;
}

TablePage SelectPage(std::vector<PipelineRow> rows, const TableQuery& query) {
  TablePage page;
  page.total = rows.size();
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const PipelineRow& row) { return !Matches(row, query); }),
             rows.end());
  page.matching = rows.size();
  if (query.offset >= rows.size()) return page;
  const size_t end = std::min(rows.size(), query.offset + query.limit);
  auto less = [&](const PipelineRow& a, const PipelineRow& b) {
    return query.descending ? Before(b, a, query.order) : Before(a, b, query.order);
  };
  // Only the page is sorted: the rows before it are only put before it (linear), so that any
  // page of 100,000 pipelines costs about the same.
  const auto first = rows.begin() + static_cast<std::ptrdiff_t>(query.offset);
  if (query.offset > 0) std::nth_element(rows.begin(), first, rows.end(), less);
  std::partial_sort(first, rows.begin() + static_cast<std::ptrdiff_t>(end), rows.end(), less);
  page.rows.assign(rows.begin() + static_cast<std::ptrdiff_t>(query.offset),
                   rows.begin() + static_cast<std::ptrdiff_t>(end));
  return page;
}

}  // namespace ckpt
