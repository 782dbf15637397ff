#include "metrics/histogram.h"

#include <algorithm>
#include <cassert>

namespace ckpt {

const std::vector<double>& LatencyHistogram::BucketBoundsSeconds() {
  // Up to a week, the longest timeout a pipeline may have: a checkpoint that takes 9 minutes of
  // its default 10-minute timeout must land in a bucket that says so, not in +Inf.
  static const std::vector<double> bounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,  0.025, 0.05, 0.1,
      0.25,    0.5,    1,       2.5,    5,     10,     15,    20,    30,    45,   60,
      120,     300,    600,     1800,   3600,  7200,   21600, 86400, 604800};
  return bounds;
}

LatencyHistogram::LatencyHistogram() {
  assert(BucketBoundsSeconds().size() == kBuckets);
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
}

void LatencyHistogram::ObserveMicros(int64_t micros) {
  if (micros < 0) micros = 0;
  const auto& bounds = BucketBoundsSeconds();
  const double seconds = static_cast<double>(micros) / 1e6;
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(micros, std::memory_order_relaxed);
  int64_t prev = max_micros_.load(std::memory_order_relaxed);
  while (micros > prev && !max_micros_.compare_exchange_weak(prev, micros)) {
  }
}

LatencyHistogram::Snapshot LatencyHistogram::Take() const {
  Snapshot s;
  for (const auto& b : buckets_) s.bucket_counts.push_back(b.load(std::memory_order_relaxed));
  s.count = count_.load(std::memory_order_relaxed);
  s.sum_seconds = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  s.max_micros = max_micros_.load(std::memory_order_relaxed);
  return s;
}

double LatencyHistogram::Snapshot::QuantileMicros(double q) const {
  uint64_t total = 0;
  for (auto c : bucket_counts) total += c;
  if (total == 0) return 0;
  const auto& bounds = BucketBoundsSeconds();
  const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total - 1)) + 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < bucket_counts.size(); ++i) {
    seen += bucket_counts[i];
    if (seen >= rank) {
      if (i >= bounds.size()) return static_cast<double>(max_micros);
      return std::min(bounds[i] * 1e6, static_cast<double>(max_micros));
    }
  }
  return static_cast<double>(max_micros);
}

}  // namespace ckpt
