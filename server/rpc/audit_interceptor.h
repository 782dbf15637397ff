#pragma once
// The audit log: one line per AdminService mutation (docs/SECURITY.md, "Audit"), with the
// principal, the method, the job and pipeline, and the outcome the caller was sent. A gRPC server
// interceptor, so that every path out of a handler (a refusal, an early error, the strand's answer,
// a savepoint stream's last message) is logged by one piece of code with the status that really
// went out. Reads are not audited. Refusals of known principals are logged at most once a second,
// with a count of the rest; a caller no principal matches is not audited at all: its refusals are
// counted and logged (rate-limited) by the Gatekeeper, so that no client can flood the log.
//
// Threading: gRPC creates one interceptor per audited call; its hooks run one at a time.

#include <grpcpp/support/server_interceptor.h>

#include "common/mutex.h"
#include "logging/log_throttle.h"
#include "rpc/gatekeeper.h"

namespace ckpt {

// A LogThrottle shared by the interceptors of every call.
class SharedThrottle {
 public:
  explicit SharedThrottle(LogThrottle::Clock::duration interval) : throttle_(interval) {}
  bool Allow(uint64_t* held_back) CKPT_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return throttle_.Allow(LogThrottle::Clock::now(), held_back);
  }

 private:
  Mutex mu_;
  LogThrottle throttle_ CKPT_GUARDED_BY(mu_);
};

// gRPC makes a call's objects (the batch the interceptor is handed) on the thread that runs the
// handler, and calls the interceptor's later hooks on another thread, handing the objects over
// through its own locks, which ThreadSanitizer cannot see (Debian's gRPC is not instrumented).
// Every AdminService handler calls PublishCallObjects first (AdminServiceImpl::Admit): its
// thread made the objects before it; each hook calls AcquireCallObjects before it touches them.
// Both are read-modify-writes of one atomic, so the releases of all handlers accumulate and no
// later one hides an earlier one. On x86 each is one locked add.
void PublishCallObjects();
void AcquireCallObjects();

class AuditInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `gatekeeper` must outlive the server.
  explicit AuditInterceptorFactory(const Gatekeeper& gatekeeper) : gatekeeper_(gatekeeper) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const Gatekeeper& gatekeeper_;
  SharedThrottle refusals_{std::chrono::seconds(1)};
};

}  // namespace ckpt
