#pragma once
// Clock: the coordinator's only source of time, injected so that tests drive time by hand.

#include <chrono>
#include <cstdint>

#include "common/daemon_clock.h"
#include "core/types.h"

namespace ckpt {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time: what timers and intervals are measured in.
  virtual SteadyTime SteadyNow() const = 0;
  // Wall-clock milliseconds since the Unix epoch: what is stored and shown to people.
  virtual int64_t WallMs() const = 0;
};

// Threading: safe for concurrent use (stateless).
class SystemClock final : public Clock {
 public:
  // DaemonClock: the steady clock that tests may move forward (common/daemon_clock.h).
  SteadyTime SteadyNow() const override { return DaemonClock::now(); }
  int64_t WallMs() const override {
    return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace ckpt
