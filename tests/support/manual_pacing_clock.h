#pragma once
// ManualPacingClock: a PacingClock (store/pacing_clock.h) that moves only when a test says so, so
// that tests of group-commit pacing need no sleeps: the test waits until the writer sleeps in
// WaitUntil (WaitForSleeper), checks what was applied meanwhile, and Advances the clock.
//
// Threading: any thread. The clock's own state is guarded by mu_. The waiter's mutex and condition
// variable (the store's) are remembered so that Advance can wake the waiter without a lost
// wake-up: it takes and releases the waiter's mutex before notifying, so the waiter is either
// already waiting or has yet to look at the time. Lock order: the store's mutex, then mu_; Advance
// never holds both.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>

#include "store/pacing_clock.h"

namespace ckpt {

class ManualPacingClock final : public PacingClock {
 public:
  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }

  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& stop) override {
    if (stop() || Now() >= deadline) return;  // no sleep at all
    {
      std::lock_guard own(mu_);
      waiter_mu_ = lock.mutex();
      waiter_cv_ = &cv;
      sleeping_until_ = deadline;
      ++sleeps_;
    }
    sleepers_.notify_all();
    while (!stop() && Now() < deadline) cv.wait(lock);
    std::lock_guard own(mu_);
    sleeping_until_.reset();
  }

  // Moves the clock on and wakes a sleeper.
  void Advance(std::chrono::steady_clock::duration by) {
    std::mutex* waiter_mu;
    std::condition_variable* waiter_cv;
    {
      std::lock_guard own(mu_);
      now_ += by;
      waiter_mu = waiter_mu_;
      waiter_cv = waiter_cv_;
    }
    if (!waiter_cv) return;
    { std::lock_guard passed(*waiter_mu); }
    waiter_cv->notify_all();
  }

  // Waits (real time, up to `timeout`) until someone sleeps in WaitUntil; the time it sleeps
  // until, or nullopt if no one did.
  std::optional<TimePoint> WaitForSleeper(std::chrono::milliseconds timeout) {
    std::unique_lock own(mu_);
    sleepers_.wait_for(own, timeout, [this] { return sleeping_until_.has_value(); });
    return sleeping_until_;
  }

  // How many times WaitUntil was entered.
  int sleeps() const {
    std::lock_guard own(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable sleepers_;
  TimePoint now_{std::chrono::hours(1)};          // guarded by mu_
  std::optional<TimePoint> sleeping_until_;       // guarded by mu_
  std::mutex* waiter_mu_ = nullptr;               // guarded by mu_
  std::condition_variable* waiter_cv_ = nullptr;  // guarded by mu_
  int sleeps_ = 0;                                // guarded by mu_
};

}  // namespace ckpt
