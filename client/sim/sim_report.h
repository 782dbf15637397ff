#pragma once
// The simulator's end-of-run summary, as text or as one JSON object (the keys
// docs/man/ckpt-worker-sim.1 lists under "OUTPUT").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/latency_summary.h"

namespace ckpt::sim {

struct SimSummary {
  std::string server;
  std::string job;
  int pipelines = 0;
  int tasks = 0;  // over all pipelines
  uint64_t triggers = 0;
  uint64_t acks = 0;
  uint64_t declines = 0;
  uint64_t completes = 0;
  uint64_t commits = 0;        // commits asked for (a commit phase)
  uint64_t all_committed = 0;  // all_committed received
  uint64_t aborts = 0;
  // Of `aborts`, those that came after the run, while the streams said goodbye: a member's
  // goodbye ends its group's pending round for the members still connected.
  uint64_t aborts_at_goodbye = 0;
  uint64_t connects = 0;
  uint64_t reconnects = 0;
  uint64_t disconnects = 0;
  uint64_t dropped_sends = 0;
  uint64_t stale_messages = 0;         // of a deposed leader, dropped by the SDK
  uint64_t leader_redirects = 0;       // streams refused by a standby that went to the leader
  uint64_t restores = 0;               // welcomes naming a restore point
  uint64_t restores_failed = 0;        // restores failed on purpose (--fail-restore)
  uint64_t releases = 0;               // checkpoint ids released to a stream
  uint64_t restore_files_missing = 0;  // --state-dir: handed back, but not there
  // --positions: completed rounds (counted per pipeline) whose tasks snapshotted at a trigger's
  // position, the largest spread of positions acked for one id (over every pipeline completing
  // it: 0 when an alignment group's members agree; ungrouped pipelines number their ids each on
  // their own, so it means something only for one group or one pipeline), and triggers declined
  // as already passed.
  uint64_t aligned_rounds = 0;
  int64_t position_spread_max = 0;
  uint64_t positions_passed = 0;
  int64_t duration_ms = 0;
  LatencySummary checkpoint;   // trigger to complete, as the worker saw it
  LatencySummary trigger_gap;  // between consecutive triggers of a pipeline
  // --group-size: per group round, its latest member's trigger arrival minus its earliest.
  std::optional<LatencySummary> group_trigger_skew;
};

// Keys: pipelines, tasks, triggers, acks, declines, completes, aborts, duration_ms,
// checkpoint_ms {p50, p99, max}, trigger_gap_ms {p50, p99, max}, connects, reconnects,
// disconnects, dropped_sends, stale_messages, leader_redirects, restores, releases,
// restore_files_missing, restores_failed, aligned_rounds, position_spread_max, positions_passed;
// with
// --group-size, trigger_skew_ms {p50, p99, max, rounds}.
nlohmann::ordered_json SummaryToJson(const SimSummary& summary);
// A few human lines, newline-terminated.
std::string SummaryToText(const SimSummary& summary);

}  // namespace ckpt::sim
