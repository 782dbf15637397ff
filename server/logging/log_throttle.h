#pragma once
// LogThrottle: lets a repeated message through at most once per interval and counts the ones it
// held back, so that a failure repeating a hundred times a second (accept on a full descriptor
// table, a worker sending the same bad ack in a loop) writes one line every few seconds, which
// says how many it stands for.
// Threading: not thread-safe; its owner's strand or lock serialises it.

#include <chrono>
#include <cstdint>

namespace ckpt {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Whether this occurrence is to be logged. When it is, `*held_back` (if given) is the number of
  // occurrences not logged since the last one that was.
  bool Allow(Clock::time_point now, uint64_t* held_back = nullptr) {
    if (logged_once_ && now - last_logged_ < interval_) {
      ++held_back_;
      return false;
    }
    if (held_back) *held_back = held_back_;
    held_back_ = 0;
    last_logged_ = now;
    logged_once_ = true;
    return true;
  }

 private:
  const Clock::duration interval_;
  Clock::time_point last_logged_{};
  bool logged_once_ = false;
  uint64_t held_back_ = 0;
};

}  // namespace ckpt
