#pragma once
// LeaseDeadline: the one rule of the local lease deadline (docs/DESIGN.md "High availability"):
// the send time of the last keepalive etcd answered, plus the TTL it answered, less a margin.
// Until then this daemon's lease surely stands in etcd; from then on nothing may rely on it.
// Written by the election (every answered keepalive moves it forward; a clean stop clears it);
// read by everything that acts under the leadership: a worker session before it sends
// (Leadership::MaySendToWorkers) and the etcd store before it writes (Confirmed). Nobody derives
// the deadline again.
//
// Measured on LeaseClock (CLOCK_BOOTTIME): a daemon suspended past its lease finds the deadline
// passed on waking.
//
// Threading: any thread; one atomic.

#include <atomic>
#include <cstdint>

#include "common/lease_clock.h"

namespace ckpt {

class LeaseDeadline {
 public:
  // The lease stands until `until` (the election's thread only).
  void Set(LeaseClock::time_point until) { ns_.store(until.time_since_epoch().count()); }
  // Nothing stands from now on (a clean stop, before the lease is revoked).
  void Clear() { ns_.store(0); }

  // Whether the lease is confirmed now.
  bool Confirmed() const { return LeaseClock::now().time_since_epoch().count() < ns_.load(); }
  // The deadline as set (the epoch of LeaseClock when none).
  LeaseClock::time_point until() const {
    return LeaseClock::time_point(LeaseClock::duration(ns_.load()));
  }

 private:
  std::atomic<int64_t> ns_{0};
};

}  // namespace ckpt
