#pragma once
// Percentiles of latency samples, as the simulator reports them.

#include <cstdint>
#include <vector>

namespace ckpt::sim {

struct LatencySummary {
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  uint64_t count = 0;
};

// Nearest-rank percentiles of samples in microseconds, reported in milliseconds. All zero when
// there are no samples.
LatencySummary Summarize(std::vector<int64_t> micros);

}  // namespace ckpt::sim
