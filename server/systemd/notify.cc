#include "systemd/notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <boost/asio/post.hpp>

namespace ckpt::systemd {
namespace {

void Send(const std::string& state) {
  // 0: keep NOTIFY_SOCKET in the environment, the later messages need it too.
  const int rc = sd_notify(0, state.c_str());
  if (rc < 0) spdlog::debug("sd_notify failed: {}", rc);
}

std::string WithStatus(std::string state, const std::string& status) {
  if (!status.empty()) state += "\nSTATUS=" + status;
  return state;
}

}  // namespace

void NotifyReady(const std::string& status) { Send(WithStatus("READY=1", status)); }

void NotifyReloading(const std::string& status) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const long long usec = static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
  Send(WithStatus("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec), status));
}

void NotifyStopping(const std::string& status) { Send(WithStatus("STOPPING=1", status)); }

void NotifyStatus(const std::string& status) { Send("STATUS=" + status); }

std::optional<std::chrono::microseconds> WatchdogInterval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

Watchdog::Watchdog(boost::asio::io_context& io, std::chrono::microseconds interval)
    : period_(interval / 2), strand_(boost::asio::make_strand(io)), timer_(strand_) {
  boost::asio::post(strand_, [this] { Ping(); });
}

Watchdog::~Watchdog() {
  // The io_context is stopped by now (Daemon::Shutdown); a wait still queued is destroyed
  // unrun with it.
  timer_.cancel();
}

void Watchdog::Ping() {
  Send("WATCHDOG=1");
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Ping();
  });
}

}  // namespace ckpt::systemd
