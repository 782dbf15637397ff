#include "app/reload_thread.h"

#include <spdlog/spdlog.h>

#include "config/daemon_config.h"
#include "systemd/notify.h"

namespace ckpt {

ReloadThread::ReloadThread(Daemon& daemon, std::string path, std::string serving)
    : daemon_(daemon),
      path_(std::move(path)),
      serving_(std::move(serving)),
      thread_([this] { Run(); }) {}

void ReloadThread::Request() {
  MutexLock lock(mu_);
  requested_ = true;
  cv_.NotifyOne();
}

void ReloadThread::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.NotifyOne();
  }
  daemon_.CancelReload();
  thread_.join();
}

void ReloadThread::Run() {
  for (;;) {
    {
      MutexLock lock(mu_);
      cv_.Wait(lock, [this]() CKPT_REQUIRES(mu_) { return requested_ || stopping_; });
      if (stopping_) return;
      requested_ = false;
    }
    systemd::NotifyReloading("reloading " + path_);
    spdlog::info("SIGHUP: reloading {}", path_);
    auto reloaded = LoadDaemonConfig(path_);
    if (!reloaded.ok()) {
      spdlog::error("reload refused, keeping the running config: {}", reloaded.status().message());
    } else {
      daemon_.Reload(*reloaded);
    }
    systemd::NotifyReady(serving_ + "; reloaded");
  }
}

}  // namespace ckpt
