#pragma once
// The credentials of the gRPC port: plaintext, or TLS from a `tls` section. gRPC's file-watching
// certificate provider reads the daemon's own copies of the files (auth/live_tls_dir.h), which
// TlsReloader rewrites only with a set that passed every check (auth/tls_files.h): a file that
// does not load at a refresh is refused, logged once naming it, counted in
// ckptd_tls_reload_failures_total, and the last good set stays in use. A swapped certificate
// serves new connections from then on; live ones keep the session they negotiated.

#include <grpcpp/security/server_credentials.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "auth/live_tls_dir.h"
#include "auth/tls_files.h"
#include "auth/tls_settings.h"
#include "common/mutex.h"
#include "common/status.h"

namespace ckpt {

// Reads the section's files anew every refresh_interval_s and publishes each good set that
// differs from the one in use. Threading: Start and Stop from the controlling thread; the
// refreshes run on a thread of its own (file reads may block: never on a loop).
class TlsReloader {
 public:
  // `live` holds `in_use` already (published by MakeListenCredentials). `failures`: counts the
  // refused refreshes (ckptd_tls_reload_failures_total); must outlive the reloader.
  TlsReloader(TlsSettings tls, LiveTlsDir live, TlsMaterial in_use,
              std::atomic<uint64_t>& failures);
  ~TlsReloader();
  TlsReloader(const TlsReloader&) = delete;
  TlsReloader& operator=(const TlsReloader&) = delete;

  void Start();
  void Stop();
  // One refresh now, on the calling thread (tests; the reloader's thread between its waits).
  void RefreshNow();
  // The set in use (tests).
  int64_t generation() const;

 private:
  void Run();

  const TlsSettings tls_;
  std::atomic<uint64_t>& failures_;
  mutable Mutex mu_;  // one refresh at a time; guards what follows
  LiveTlsDir live_ CKPT_GUARDED_BY(mu_);
  TlsMaterial in_use_ CKPT_GUARDED_BY(mu_);
  // The refusal said last, and the warnings: each is logged once, not at every refresh.
  std::string last_refusal_ CKPT_GUARDED_BY(mu_);
  std::string last_warnings_ CKPT_GUARDED_BY(mu_);
  Mutex stop_mu_;
  CondVar stop_cv_;
  bool stopping_ CKPT_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;
};

struct ListenCredentials {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<TlsReloader> reloader;  // null without TLS; not started yet
};

// Plaintext without TLS. With TLS: checks the files (INVALID_ARGUMENT naming the one that is
// unusable), writes them to `live_dir` (made or emptied; the daemon's data_dir/tls) and builds
// the credentials over those copies, with the reloader that keeps them. `reload_failures`: the
// reloader's counter.
Result<ListenCredentials> MakeListenCredentials(const TlsSettings& tls, const std::string& live_dir,
                                                std::atomic<uint64_t>& reload_failures);

}  // namespace ckpt
