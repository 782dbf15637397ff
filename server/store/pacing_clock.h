#pragma once
// PacingClock: the time GroupCommitStore paces its batches by, injected so that tests of pacing
// move time by hand instead of sleeping (tests/support/manual_pacing_clock.h).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace ckpt {

class PacingClock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~PacingClock() = default;
  virtual TimePoint Now() const = 0;
  // Waits on `cv` (whose mutex `lock` holds, on entry and on return) until `deadline` by this
  // clock has passed or `stop()` is true, whichever is first. `stop` is evaluated under `lock`.
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline, const std::function<bool()>& stop) = 0;
};

// The steady clock. Threading: stateless, safe from any thread.
class SteadyPacingClock final : public PacingClock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& stop) override {
    cv.wait_until(lock, deadline, stop);
  }
};

}  // namespace ckpt
