#pragma once
// Gatekeeper: where every handler asks the access policy (auth/access_policy.h) about a call. It
// holds the policy in force (swapped whole by a SIGHUP reload), counts refusals in
// ckptd_auth_denied_total{reason}, and logs them (rate-limited: a client cannot flood the log).
//
// Threading: every method is safe from any thread. The policy is read under a mutex held for a
// shared_ptr copy only; a refusal's log throttle has its own mutex.

#include <grpcpp/server_context.h>

#include <memory>
#include <optional>
#include <string_view>

#include "auth/access_policy.h"
#include "common/mutex.h"
#include "ha/leadership.h"
#include "logging/log_throttle.h"
#include "runtime/daemon_metrics.h"

namespace ckpt {

// The trailing metadata key a standby names the leader's HOST:PORT in (docs/PROTOCOL.md, "High
// availability").
extern const std::string_view kLeaderMetadataKey;

class Gatekeeper {
 public:
  // `leadership` says whether this daemon serves (SINGLE, LEADER) or stands by; it must outlive
  // the gatekeeper.
  Gatekeeper(AuthSpec spec, DaemonMetrics& metrics, const Leadership& leadership);

  // The policy from now on (a reload). Calls already admitted keep what they were allowed.
  void SetPolicy(AuthSpec spec);
  std::shared_ptr<const AccessPolicy> policy() const;

  // Identifies the caller of `context` and checks that it may make the call `method` of kind
  // `access` (for worker streams `job` is checked later, at hello, with CheckJob). The caller, or
  // UNAUTHENTICATED / PERMISSION_DENIED naming what was refused.
  Result<Caller> Admit(const grpc::ServerContextBase& context, Access access,
                       std::string_view method) const;
  // Who the caller is ("anonymous" without auth), without checking a method or counting a
  // refusal (for audit lines); nothing when no principal matches.
  std::optional<std::string> PrincipalOf(const grpc::ServerContextBase& context) const;

  // A standby answers only GetDaemonStatus (and gRPC health, which is not ours): any other call
  // gets UNAVAILABLE, with the leader's address in the trailing metadata `ckpt-leader` ("" while
  // none is known) so that clients go there. OK while this daemon serves.
  Status CheckServing(grpc::ServerContextBase& context, std::string_view method) const;

  // A worker stream's hello: may `caller` serve pipelines of `job`?
  Status CheckJob(const Caller& caller, std::string_view job) const;

 private:
  Status Refused(const Refusal& refusal, std::string_view peer) const;

  DaemonMetrics& metrics_;
  const Leadership& leadership_;
  mutable Mutex policy_mu_;
  std::shared_ptr<const AccessPolicy> policy_ CKPT_GUARDED_BY(policy_mu_);
  mutable Mutex log_mu_;
  mutable LogThrottle refusal_log_ CKPT_GUARDED_BY(log_mu_){std::chrono::seconds(10)};
};

}  // namespace ckpt
