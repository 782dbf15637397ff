#pragma once
// RecentDurations: how long a pipeline's last completed rounds took, for "is this round slow?"
// (ExplainPipeline, the stuck notice). Kept in 42 bytes a pipeline: at most kCapacity durations
// in units of 10 ms, saturating at about 11 minutes (a round slower than that is slow whatever
// the exact figure). Threading: a plain value, on its pipeline's strand.

#include <array>
#include <cstdint>

namespace ckpt {

class RecentDurations {
 public:
  static constexpr int kCapacity = 20;

  void Add(int64_t duration_ms);
  int count() const { return count_; }
  // The 95th percentile (nearest rank) of the durations held, in ms; 0 with none.
  int64_t P95Ms() const;

 private:
  static constexpr int64_t kUnitMs = 10;
  std::array<uint16_t, kCapacity> units_{};
  uint8_t count_ = 0;
  uint8_t next_ = 0;  // where the next one goes (the oldest, once full)
};

}  // namespace ckpt
