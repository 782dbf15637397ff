#pragma once
// LeaseClock: what a leadership's local lease deadline is measured on (etcd/etcd_election.h,
// ha/leadership.h). CLOCK_BOOTTIME, which, unlike steady_clock (CLOCK_MONOTONIC), goes on
// counting while the machine is suspended: a leader suspended past its lease must find its
// deadline passed when it wakes, because etcd's clocks went on and a standby may lead by then.
// Monotonic otherwise, and cheap (a vDSO call, like steady_clock's).

#include <time.h>

#include <chrono>

namespace ckpt {

struct LeaseClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<LeaseClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
};

}  // namespace ckpt
