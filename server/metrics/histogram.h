#pragma once
// A fixed-bucket latency histogram in the shape Prometheus exports (cumulative buckets, sum,
// count), plus approximate percentiles for logs and benchmarks. Threading: safe for concurrent use
// without external synchronization (relaxed atomics).

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

class LatencyHistogram {
 public:
  // Upper bounds in seconds: 50us .. a week (the longest timeout), roughly x2 per bucket below a
  // minute; one overflow bucket past the last.
  static const std::vector<double>& BucketBoundsSeconds();

  LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  void ObserveMicros(int64_t micros);

  struct Snapshot {
    std::vector<uint64_t> bucket_counts;  // not cumulative; one more than the bounds (overflow)
    uint64_t count = 0;
    double sum_seconds = 0;
    int64_t max_micros = 0;
    // The upper bound of the bucket that holds the q-quantile, in microseconds (q in [0,1]).
    double QuantileMicros(double q) const;
  };
  Snapshot Take() const;

 private:
  static constexpr size_t kBuckets = 31;  // BucketBoundsSeconds().size()
  std::array<std::atomic<uint64_t>, kBuckets + 1> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_micros_{0};
  std::atomic<int64_t> max_micros_{0};
};

}  // namespace ckpt
