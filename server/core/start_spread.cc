#include "core/start_spread.h"

#include <algorithm>

namespace ckpt {

double StartSlotFraction(uint64_t slot) {
  // The golden ratio's fractional part: the irrational whose multiples spread most evenly (each
  // new point falls into the largest gap left), in integer arithmetic so no rounding drifts.
  constexpr uint64_t kGoldenFraction = 0x9e3779b97f4a7c15ULL;  // 2^64 / phi
  return static_cast<double>((slot * kGoldenFraction) >> 11) * 0x1.0p-53;
}

double StartKeyFraction(const PipelineKey& key) {
  // The splitmix64 finalizer over the stable key hash: the hash's low bits also pick the
  // pipeline's event loop, and the offset must not follow them.
  uint64_t z = StableKeyHash(key);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
}

std::chrono::microseconds StartOffset(double fraction, std::optional<Millis> spread,
                                      int64_t interval_ms) {
  const int64_t span_ms = spread ? std::min<int64_t>(spread->count(), interval_ms) : interval_ms;
  if (span_ms <= 0) return std::chrono::microseconds{0};
  return std::chrono::microseconds{static_cast<int64_t>(fraction * span_ms * 1000.0)};
}

std::optional<SteadyTime> NewStartHold(SteadyTime now, std::optional<SteadyTime> hold,
                                       std::optional<SteadyTime> last_trigger, int64_t interval_ms,
                                       double fraction, std::optional<Millis> spread) {
  if (hold && *hold > now) return std::nullopt;
  if (last_trigger && *last_trigger + Millis(interval_ms) > now) return std::nullopt;
  return now + StartOffset(fraction, spread, interval_ms);
}

}  // namespace ckpt
