#pragma once
// The web view's pipeline list: which pipelines a query asks for (filter by job and state, sort,
// one page of them), over rows read from atomics (PipelineMetrics), never from a strand. A daemon
// of 100,000 pipelines answers a page by filtering them all and sorting only as far as the page
// reaches.
// Threading: pure functions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "web/escape.h"

namespace ckpt {

// One pipeline as the list shows it.
struct PipelineRow {
  const PipelineKey* key = nullptr;  // the runner's; valid while the caller holds the runners
  PipelineState state = PipelineState::kWaitingForTasks;
  bool pending = false;
  int64_t last_checkpoint_id = 0;
  int64_t last_completed_at_ms = 0;  // wall clock; 0: never
  int64_t last_duration_ms = 0;      // 0: not known (completed before this start)
  uint64_t completed = 0;
  uint64_t failed = 0;   // declined or failed rounds, since this start
  uint64_t expired = 0;  // timed out, since this start
};

enum class RowOrder { kKey, kState, kLastCompleted, kDuration, kFailures };
inline constexpr RowOrder kRowOrders[] = {RowOrder::kKey, RowOrder::kState,
                                          RowOrder::kLastCompleted, RowOrder::kDuration,
                                          RowOrder::kFailures};

struct TableQuery {
  std::string job;                     // part of the job id; "" = every job
  std::optional<PipelineState> state;  // only this state
  RowOrder order = RowOrder::kKey;
  bool descending = false;
  size_t offset = 0;
  size_t limit = 100;  // 1..kMaxTableLimit
  int refresh_s = 5;   // the page reloads itself after this many seconds; 0: never
};

inline constexpr size_t kMaxTableLimit = 1000;

// From the query string: job, state (RUNNING, PAUSED, ...), sort (key, state, last_completed,
// duration, failures), order (asc, desc), offset, limit, refresh. INVALID_ARGUMENT names the
// parameter and what it accepts.
Result<TableQuery> ParseTableQuery(const QueryParams& params);
// `refresh` (seconds, 0 = never, at most 3600; default 5), for every page that reloads itself.
Result<int> ParseRefresh(const QueryParams& params);
// The query string that asks for `query` ("job=a&sort=duration&..."), for links.
std::string TableQueryString(const TableQuery& query);
// The names ParseTableQuery accepts for `order`.
const char* RowOrderName(RowOrder order);

struct TablePage {
  size_t total = 0;               // every pipeline
  size_t matching = 0;            // those the filter kept
  std::vector<PipelineRow> rows;  // this page of them, in order
};

// Filters `rows`, sorts (ties by key, so pages never overlap) and cuts out the page.
TablePage SelectPage(std::vector<PipelineRow> rows, const TableQuery& query);

}  // namespace ckpt
