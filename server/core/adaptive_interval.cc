#include "core/adaptive_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/explanation.h"

namespace ckpt {
namespace {

enum class Why { kInterval, kBacklog, kOverhead, kCapped };

std::pair<int64_t, Why> Compute(const IntervalInputs& in) {
  if (in.backlog && in.max_interval_ms > 0) {
    return {std::max(in.max_interval_ms, in.interval_ms), Why::kBacklog};
  }
  if (in.max_overhead <= 0 || in.recent_rounds < kMinRecentRounds) {
    return {in.interval_ms, Why::kInterval};
  }
  // p95 / overhead, in double: a p95 of 11 minutes over an overhead of 1e-9 must not overflow.
  const double wanted = std::ceil(static_cast<double>(in.recent_p95_ms) / in.max_overhead);
  if (in.max_interval_ms > 0 && wanted > static_cast<double>(in.max_interval_ms)) {
    return {std::max(in.max_interval_ms, in.interval_ms), Why::kCapped};
  }
  if (wanted <= static_cast<double>(in.interval_ms)) return {in.interval_ms, Why::kInterval};
  constexpr double kMaxMs = 7.0 * 24 * 3600 * 1000;  // a week: beyond any sane schedule
  return {static_cast<int64_t>(std::min(wanted, kMaxMs)), Why::kOverhead};
}

}  // namespace

int64_t EffectiveIntervalMs(const IntervalInputs& in) { return Compute(in).first; }

EffectiveInterval DescribeEffectiveInterval(const IntervalInputs& in) {
  const auto [ms, why] = Compute(in);
  char overhead[32];
  std::snprintf(overhead, sizeof overhead, "%g", in.max_overhead);
  const std::string p95 = "p95 " + ShortDuration(in.recent_p95_ms) + " of the last " +
                          std::to_string(in.recent_rounds) + " rounds / max_overhead " + overhead;
  switch (why) {
    case Why::kBacklog: return {ms, "backlog reported: max_interval_ms " + ShortDuration(ms)};
    case Why::kCapped: return {ms, p95 + ", capped at max_interval_ms " + ShortDuration(ms)};
    case Why::kOverhead: return {ms, p95};
    case Why::kInterval: break;
  }
  return {ms, "interval_ms " + ShortDuration(ms)};
}

std::string InForceReason(int64_t in_force_ms, const IntervalInputs& now) {
  EffectiveInterval next = DescribeEffectiveInterval(now);
  if (next.ms == in_force_ms) return std::move(next.reason);
  return ShortDuration(in_force_ms) + " until the next round ends, then " + next.reason;
}

}  // namespace ckpt
