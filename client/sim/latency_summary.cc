#include "sim/latency_summary.h"

#include <algorithm>
#include <cmath>

namespace ckpt::sim {
namespace {

// The smallest sample with at least q of all samples at or below it. `sorted` is not empty.
int64_t NearestRank(const std::vector<int64_t>& sorted, double q) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

double ToMillis(int64_t micros) { return static_cast<double>(micros) / 1000.0; }

}  // namespace

LatencySummary Summarize(std::vector<int64_t> micros) {
  LatencySummary summary;
  if (micros.empty()) return summary;
  std::sort(micros.begin(), micros.end());
  summary.count = micros.size();
  summary.p50_ms = ToMillis(NearestRank(micros, 0.50));
  summary.p99_ms = ToMillis(NearestRank(micros, 0.99));
  summary.max_ms = ToMillis(micros.back());
  return summary;
}

}  // namespace ckpt::sim
