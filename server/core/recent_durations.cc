#include "core/recent_durations.h"

#include <algorithm>
#include <limits>

namespace ckpt {

void RecentDurations::Add(int64_t duration_ms) {
  constexpr int64_t kMaxUnits = std::numeric_limits<uint16_t>::max();
  // Rounded up: a 3 ms round counts as one unit, not as nothing.
  const int64_t units = std::clamp<int64_t>((duration_ms + kUnitMs - 1) / kUnitMs, 0, kMaxUnits);
  units_[next_] = static_cast<uint16_t>(units);
  next_ = static_cast<uint8_t>((next_ + 1) % kCapacity);
  if (count_ < kCapacity) ++count_;
}

int64_t RecentDurations::P95Ms() const {
  if (count_ == 0) return 0;
  std::array<uint16_t, kCapacity> sorted = units_;
  std::sort(sorted.begin(), sorted.begin() + count_);
  // Nearest rank: ceil(0.95 n), 1-based.
  const int rank = (95 * count_ + 99) / 100;
  return static_cast<int64_t>(sorted[rank - 1]) * kUnitMs;
}

}  // namespace ckpt
