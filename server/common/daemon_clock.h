#pragma once
// DaemonClock: the steady clock every daemon timer and every SteadyNow() reads (pipeline wakeups
// and timeouts, leases, hello timeouts, store probes). It is std::chrono::steady_clock plus an
// offset that only tests move, forward (AdvanceForTest), so that an integration test can let a
// lease or a timeout run out without waiting for it in real time.
//
// DaemonWaitTraits makes the timers notice a move: once a test has moved the clock, no timer
// waits longer than kMovedClockMaxWait in one go before it looks at the clock again. Until then
// (always, in the daemon) a wait is exactly what it was with std::chrono::steady_clock.
//
// Threading: any thread. The offset is one atomic; time_point is steady_clock's, so values mix
// with the rest of the code's SteadyTime.

#include <atomic>
#include <chrono>

namespace ckpt {

struct DaemonClock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    return std::chrono::steady_clock::now() + duration(offset_.load(std::memory_order_relaxed));
  }
  // Tests only: time jumps forward by `by` (never back), for every timer of the process.
  static void AdvanceForTest(duration by) {
    moved_.store(true);
    offset_.fetch_add(by.count());
  }
  static bool moved() noexcept { return moved_.load(std::memory_order_relaxed); }

 private:
  static inline std::atomic<rep> offset_{0};
  static inline std::atomic<bool> moved_{false};
};

// Asio's WaitTraits for DaemonClock (see above).
struct DaemonWaitTraits {
  static constexpr std::chrono::milliseconds kMovedClockMaxWait{5};

  static DaemonClock::duration to_wait_duration(const DaemonClock::duration& d) {
    if (!DaemonClock::moved() || d < kMovedClockMaxWait) return d;
    return kMovedClockMaxWait;
  }
  static DaemonClock::duration to_wait_duration(const DaemonClock::time_point& t) {
    return to_wait_duration(t - DaemonClock::now());
  }
};

}  // namespace ckpt
