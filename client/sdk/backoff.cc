#include "sdk/backoff.h"

#include <algorithm>

namespace ckpt::sdk::internal {

using std::chrono::milliseconds;

BackoffPolicy Sanitize(BackoffPolicy policy) {
  policy.initial = std::max(policy.initial, milliseconds(1));
  policy.max = std::max(policy.max, policy.initial);
  return policy;
}

milliseconds BackoffDelay(const BackoffPolicy& policy, int retry, double unit_random) {
  const int64_t initial = policy.initial.count();
  const int64_t max = policy.max.count();
  int64_t delay = initial;
  // Doubling stops at max, so this never overflows however many retries there were.
  for (int i = 1; i < retry && delay < max; ++i) delay *= 2;
  delay = std::min(delay, max);
  unit_random = std::clamp(unit_random, 0.0, 1.0);
  const int64_t half = delay / 2;
  return milliseconds(delay - half + static_cast<int64_t>(unit_random * static_cast<double>(half)));
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(Sanitize(policy)), rng_(seed) {}

double Backoff::UnitRandom() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

milliseconds Backoff::Next() {
  if (retries_ < 1'000'000) ++retries_;
  return BackoffDelay(policy_, retries_, UnitRandom());
}

milliseconds Backoff::AtMax() {
  // 64 doublings exceed any max: the delay is the ceiling.
  return BackoffDelay(policy_, 64, UnitRandom());
}

}  // namespace ckpt::sdk::internal
