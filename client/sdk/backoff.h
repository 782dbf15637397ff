#pragma once
// Reconnect backoff: exponential growth with jitter, so that thousands of pipelines that lost the
// daemon at the same moment do not all come back at the same moment.

#include <chrono>
#include <cstdint>
#include <random>

namespace ckpt::sdk::internal {

struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{5000};
};

// Makes a policy usable whatever the user passed: initial at least 1 ms, max at least initial.
BackoffPolicy Sanitize(BackoffPolicy policy);

// The delay before retry number `retry` (1 = the first retry after a failure):
// d = min(max, initial * 2^(retry-1)), then "equal jitter": d/2 + unit_random * d/2, where
// unit_random is in [0, 1). Pure, for tests; the policy must be sanitized.
std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int retry, double unit_random);

// The sequence of delays of one pipeline.
// Threading: requires external synchronization (it lives on the pipeline's strand).
class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);

  // The next delay of the growing sequence.
  std::chrono::milliseconds Next();
  // A delay at the ceiling (jittered), without growing the sequence: for errors that are not
  // expected to clear soon.
  std::chrono::milliseconds AtMax();
  // Back to the initial delay (after a session that stayed up).
  void Reset() { retries_ = 0; }

  int retries() const { return retries_; }

 private:
  double UnitRandom();

  const BackoffPolicy policy_;
  int retries_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace ckpt::sdk::internal
