#pragma once
// The adaptive interval (docs/PROTOCOL.md, "Adaptive interval"): the interval a pipeline's (or an
// alignment group's) next periodic trigger is scheduled by. An interval fixed by hand is wrong
// both ways: too short while rounds are slow (the pipeline spends its time checkpointing), and
// too short while the job catches up on a backlog (each round slows the catching up). So:
//   - with max_overhead > 0, at least the recent p95 round duration / max_overhead (a round then
//     takes at most that share of the time), once there are kMinRecentRounds rounds to go by;
//   - with max_interval_ms > 0, at most max_interval_ms; and exactly that while any task reports
//     backlog (heartbeat.backlog), whatever max_overhead says;
//   - never below interval_ms.
// It is fixed when a round ends and applies to the next trigger.
//
// Threading: pure functions.

#include <cstdint>
#include <string>

namespace ckpt {

// What the interval is computed from.
struct IntervalInputs {
  int64_t interval_ms = 0;
  double max_overhead = 0;
  int64_t max_interval_ms = 0;
  int recent_rounds = 0;      // completed rounds the p95 is of (at most RecentDurations' 20)
  int64_t recent_p95_ms = 0;  // of those rounds
  bool backlog = false;       // a task reports backlog now
};

// Fewer completed rounds than this say nothing of a p95.
inline constexpr int kMinRecentRounds = 3;

struct EffectiveInterval {
  int64_t ms = 0;
  // Why, for `pipeline why` and GetPipeline: "interval_ms", "backlog (max_interval_ms)", "p95
  // 1.2s / max_overhead 0.1", "... capped at max_interval_ms".
  std::string reason;
};

int64_t EffectiveIntervalMs(const IntervalInputs& in);
EffectiveInterval DescribeEffectiveInterval(const IntervalInputs& in);
// Why the interval in force (fixed when the last round ended) is what it is, worded from `now`'s
// inputs: when they give another figure (a backlog reported since, say), that applies from the
// next round's end, and the text says so.
std::string InForceReason(int64_t in_force_ms, const IntervalInputs& now);

}  // namespace ckpt
