#pragma once
// ckptd's side of systemd's notify protocol (sd_notify(3)), for a unit with Type=notify:
// READY=1 once every port accepts, RELOADING=1 then READY=1 around a SIGHUP reload, STOPPING=1
// at shutdown, STATUS= lines for `systemctl status`, and WATCHDOG=1 pings (Watchdog) when the
// unit sets WatchdogSec. Without NOTIFY_SOCKET (not under systemd) every call does nothing.
// Threading: the free functions are safe from any thread (each sends one datagram).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <optional>
#include <string>

namespace ckpt::systemd {

void NotifyReady(const std::string& status);
// RELOADING=1 with MONOTONIC_USEC=, which systemd 253 and later want with it.
void NotifyReloading(const std::string& status);
void NotifyStopping(const std::string& status);
void NotifyStatus(const std::string& status);

// The interval systemd expects pings within (WATCHDOG_USEC, for this process per WATCHDOG_PID),
// or nothing when the watchdog is off.
std::optional<std::chrono::microseconds> WatchdogInterval();

// Sends WATCHDOG=1 every half of `interval` from a timer on the given io_context, so the pings
// stop when the event loop stops turning and systemd restarts a wedged daemon. (With several io
// threads, one stuck handler leaves the others pinging: the watchdog catches a loop that stops
// entirely, as a deadlock of every thread or a stopped io_context does.)
// Threading: construct and destroy on the controlling thread; the timer lives on its own strand.
// Lifetime: destroy it before the io_context; once the io_context is stopped no ping is sent.
class Watchdog {
 public:
  Watchdog(boost::asio::io_context& io, std::chrono::microseconds interval);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Ping();  // strand_

  const std::chrono::microseconds period_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;  // strand_
};

}  // namespace ckpt::systemd
