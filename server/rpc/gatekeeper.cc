#include "rpc/gatekeeper.h"

#include <spdlog/spdlog.h>

#include "core/printable.h"
#include "rpc/caller_credentials.h"

namespace ckpt {

const std::string_view kLeaderMetadataKey = "ckpt-leader";

Gatekeeper::Gatekeeper(AuthSpec spec, DaemonMetrics& metrics, const Leadership& leadership)
    : metrics_(metrics), leadership_(leadership) {
  // Under the lock: made on the controlling thread, read on gRPC's.
  MutexLock lock(policy_mu_);
  policy_ = std::make_shared<const AccessPolicy>(std::move(spec));
}

void Gatekeeper::SetPolicy(AuthSpec spec) {
  auto next = std::make_shared<const AccessPolicy>(std::move(spec));
  MutexLock lock(policy_mu_);
  policy_ = std::move(next);
}

std::shared_ptr<const AccessPolicy> Gatekeeper::policy() const {
  MutexLock lock(policy_mu_);
  return policy_;
}

Status Gatekeeper::CheckServing(grpc::ServerContextBase& context, std::string_view method) const {
  if (leadership_.serving() || method == "GetDaemonStatus") return Status::Ok();
  const Leadership::View view = leadership_.view();
  // Only a legal address goes into the header (gRPC aborts the process on an illegal header
  // value): Leadership keeps nothing else, and says when the leader's was not one.
  if (view.leader_address_unusable || !CheckLeaderAddress(view.leader_address).ok()) {
    if (!view.leader_address.empty() || view.leader_address_unusable) {
      return Status::Unavailable(
          "this ckptd is a standby; the leader advertises an address no client can be sent to "
          "(fix its `advertise`); try its address from your configuration");
    }
    context.AddTrailingMetadata(std::string(kLeaderMetadataKey), "");
    return Status::Unavailable(
        "this ckptd is a standby; no leader is known yet, try again "
        "shortly (trailing metadata " +
        std::string(kLeaderMetadataKey) + ")");
  }
  context.AddTrailingMetadata(std::string(kLeaderMetadataKey), view.leader_address);
  return Status::Unavailable("this ckptd is a standby; the leader is " + view.leader_address +
                             " (trailing metadata " + std::string(kLeaderMetadataKey) + ")");
}

Result<Caller> Gatekeeper::Admit(const grpc::ServerContextBase& context, Access access,
                                 std::string_view method) const {
  const auto current = policy();
  Caller caller;
  if (!current->enabled()) {
    current->Identify({}, &caller);  // nameless, every right
    return caller;
  }
  if (auto refusal = current->Identify(CredentialsOf(context), &caller)) {
    return Refused(*refusal, context.peer());
  }
  if (auto refusal = current->Check(caller, access, method)) {
    return Refused(*refusal, context.peer());
  }
  return caller;
}

std::optional<std::string> Gatekeeper::PrincipalOf(const grpc::ServerContextBase& context) const {
  Caller caller;
  if (policy()->Identify(CredentialsOf(context), &caller)) return std::nullopt;
  return caller.principal.empty() ? "anonymous" : caller.principal;
}

Status Gatekeeper::CheckJob(const Caller& caller, std::string_view job) const {
  if (auto refusal = policy()->Check(caller, Access::kWorkerStream, "hello", job)) {
    return Refused(*refusal, {});
  }
  return Status::Ok();
}

Status Gatekeeper::Refused(const Refusal& refusal, std::string_view peer) const {
  ++metrics_.auth_denied_total[static_cast<size_t>(refusal.reason)];
  uint64_t held_back = 0;
  bool log = false;
  {
    MutexLock lock(log_mu_);
    log = refusal_log_.Allow(LogThrottle::Clock::now(), &held_back);
  }
  if (log) {
    spdlog::warn("refused a call{}{}: {} ({}; {} more refusal(s) since the last line)",
                 peer.empty() ? "" : " from ", Printable(peer), Printable(refusal.status.message()),
                 DenyReasonLabel(refusal.reason), held_back);
  }
  return refusal.status;
}

}  // namespace ckpt
