#pragma once
// ckptd's side of systemd's notify protocol (sd_notify(3)), for a unit with Type=notify:
// READY=1 once every port accepts, RELOADING=1 then READY=1 around a SIGHUP reload, STOPPING=1
// at shutdown, STATUS= lines for `systemctl status`, and WATCHDOG=1 pings (Watchdog) when the
// unit sets WatchdogSec. Without NOTIFY_SOCKET (not under systemd) every call does nothing.
// Threading: the free functions are safe from any thread (each sends one datagram).

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::systemd {

void NotifyReady(const std::string& status);
// RELOADING=1 with MONOTONIC_USEC=, which systemd 253 and later want with it.
void NotifyReloading(const std::string& status);
void NotifyStopping(const std::string& status);
void NotifyStatus(const std::string& status);

// The interval systemd expects pings within (WATCHDOG_USEC, for this process per WATCHDOG_PID),
// or nothing when the watchdog is off.
std::optional<std::chrono::microseconds> WatchdogInterval();

// Sends WATCHDOG=1 every half of `interval` while every one of `loops` keeps turning: each tick
// posts a probe to every loop and pings only if each loop ran the previous tick's probe. One
// wedged loop (a handler that never returns, a deadlock) stops the pings as surely as a stopped
// process does, and systemd restarts the daemon within about one interval.
// Threading: construct and destroy on the controlling thread; the timer lives on a strand of
// loops[0]; probes set an atomic each, which the timer reads.
// Lifetime: destroy it after the loops are stopped (a queued probe holds only shared state); once
// they are stopped no ping is sent.
class Watchdog {
 public:
  Watchdog(std::vector<boost::asio::io_context*> loops, std::chrono::microseconds interval);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Tick();  // strand_

  const std::chrono::microseconds period_;
  const std::vector<boost::asio::io_context*> loops_;
  // answered[i]: loop i ran the probe of the last tick. Shared with the probes in flight.
  const std::shared_ptr<std::vector<std::atomic<bool>>> answered_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;  // strand_
};

}  // namespace ckpt::systemd
