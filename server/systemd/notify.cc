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

Watchdog::Watchdog(std::vector<boost::asio::io_context*> loops, std::chrono::microseconds interval)
    : period_(interval / 2),
      loops_(std::move(loops)),
      answered_(std::make_shared<std::vector<std::atomic<bool>>>(loops_.size())),
      strand_(boost::asio::make_strand(*loops_.at(0))),
      timer_(strand_) {
  for (auto& a : *answered_) a.store(true);  // the first tick pings: start-up was the proof
  boost::asio::post(strand_, [this] { Tick(); });
}

Watchdog::~Watchdog() {
  // The loops are stopped by now (Daemon::Shutdown); a wait or probe still queued is destroyed
  // unrun with them.
  timer_.cancel();
}

void Watchdog::Tick() {
  bool all = true;
  for (const auto& a : *answered_) all = all && a.load();
  if (all) Send("WATCHDOG=1");
  for (size_t i = 0; i < loops_.size(); ++i) {
    (*answered_)[i].store(false);
    boost::asio::post(*loops_[i], [answered = answered_, i] { (*answered)[i].store(true); });
  }
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

}  // namespace ckpt::systemd
