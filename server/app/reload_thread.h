#pragma once
// Reloads (SIGHUP) on a thread of their own, so that the signal loop keeps handling signals while
// a reload reads the file and waits for the pipelines: a SIGTERM during a reload is acted on at
// once. A SIGHUP during a reload is folded into one more reload after it.
// Threading: Request and Stop from the signal loop's thread; the reloads on thread_.

#include <string>
#include <thread>

#include "app/daemon.h"
#include "common/mutex.h"

namespace ckpt {

class ReloadThread {
 public:
  // `daemon` must outlive this; `path` is the config file, `serving` the READY status to restore.
  ReloadThread(Daemon& daemon, std::string path, std::string serving);
  ~ReloadThread() { Stop(); }
  ReloadThread(const ReloadThread&) = delete;
  ReloadThread& operator=(const ReloadThread&) = delete;

  void Request();
  // Ends a reload's wait and joins; no reload starts after it.
  void Stop();

 private:
  void Run();

  Daemon& daemon_;
  const std::string path_;
  const std::string serving_;
  Mutex mu_;
  CondVar cv_;
  bool requested_ CKPT_GUARDED_BY(mu_) = false;
  bool stopping_ CKPT_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace ckpt
