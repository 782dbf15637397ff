#include "auth/access_policy.h"

#include <fnmatch.h>

#include <set>

#include "auth/token_digest.h"

namespace ckpt {
namespace {

constexpr const char* kRoleNames[] = {"admin", "viewer", "worker"};
constexpr const char* kDenyLabels[] = {
    "no_credentials", "unknown_identity", "unknown_token", "plaintext_token", "role", "job",
    "takeover"};
static_assert(std::size(kDenyLabels) == kDenyReasonCount);

bool JobMatches(const std::vector<std::string>& globs, std::string_view job) {
  const std::string subject(job);
  for (const std::string& glob : globs) {
    if (::fnmatch(glob.c_str(), subject.c_str(), 0) == 0) return true;
  }
  return false;
}

Refusal Refuse(DenyReason reason, Status status) { return Refusal{std::move(status), reason}; }

// The typed forms of cert_identity: the prefix and what it matches.
constexpr std::string_view kUriPrefix = "uri:";
constexpr std::string_view kDnsPrefix = "dns:";
constexpr std::string_view kCnPrefix = "cn:";
constexpr std::string_view kSpiffePrefix = "spiffe://";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool AnyEquals(const std::vector<std::string>& values, std::string_view wanted) {
  for (const std::string& v : values) {
    if (v == wanted) return true;
  }
  return false;
}

}  // namespace

bool CertIdentityMatches(const std::string& cert_identity, const CallerCredentials& credentials) {
  if (credentials.cert_identity.empty()) return false;  // no verified certificate
  const std::string_view id = cert_identity;
  if (StartsWith(id, kSpiffePrefix)) return credentials.cert.spiffe_id == id;
  if (StartsWith(id, kUriPrefix)) return AnyEquals(credentials.cert.uris, id.substr(4));
  if (StartsWith(id, kDnsPrefix)) return AnyEquals(credentials.cert.dns, id.substr(4));
  if (StartsWith(id, kCnPrefix)) return credentials.cert.cn == id.substr(3);
  return credentials.cert_identity == cert_identity;
}

const char* RoleName(Role role) { return kRoleNames[static_cast<int>(role)]; }

std::optional<Role> ParseRole(std::string_view name) {
  for (int i = 0; i < 3; ++i) {
    if (name == kRoleNames[i]) return static_cast<Role>(i);
  }
  return std::nullopt;
}

const char* DenyReasonLabel(DenyReason reason) {
  const auto index = static_cast<size_t>(reason);
  return index < kDenyReasonCount ? kDenyLabels[index] : "unknown";
}

Status ValidateAuthSpec(const AuthSpec& spec, const std::string& path) {
  if (!spec.enabled) return Status::Ok();
  if (spec.principals.empty()) {
    return Status::InvalidArgument(path +
                                   ".principals: names no principal; without one nobody "
                                   "could call the daemon");
  }
  std::set<std::string> names;
  std::set<std::string> identities;
  std::set<std::string> digests;
  for (size_t i = 0; i < spec.principals.size(); ++i) {
    const PrincipalSpec& p = spec.principals[i];
    const std::string where = path + ".principals[" + std::to_string(i) + "]";
    if (p.name.empty()) return Status::InvalidArgument(where + ": missing required key 'name'");
    if (!names.insert(p.name).second) {
      return Status::InvalidArgument(where + ": principal name '" + p.name + "' is used twice");
    }
    if (p.cert_identity.empty() == p.token_sha256.empty()) {
      return Status::InvalidArgument(where + " (" + p.name +
                                     "): give exactly one of cert_identity and token_sha256");
    }
    if (!p.token_sha256.empty()) {
      const std::string raw = DecodeSha256Hex(p.token_sha256);
      if (raw.empty()) {
        return Status::InvalidArgument(
            where + " (" + p.name +
            "): token_sha256 must be 64 hex digits, the SHA-256 of the token "
            "(printf %s \"$TOKEN\" | sha256sum), never the token itself");
      }
      if (raw == Sha256("")) {
        return Status::InvalidArgument(where + " (" + p.name +
                                       "): token_sha256 is the SHA-256 of an empty token (was "
                                       "$TOKEN unset when it was computed?)");
      }
      if (!digests.insert(raw).second) {
        return Status::InvalidArgument(where + " (" + p.name +
                                       "): the same token_sha256 is given to another principal");
      }
    } else if (const std::string_view id = p.cert_identity;
               (StartsWith(id, kUriPrefix) && id.size() == kUriPrefix.size()) ||
               (StartsWith(id, kDnsPrefix) && id.size() == kDnsPrefix.size()) ||
               (StartsWith(id, kCnPrefix) && id.size() == kCnPrefix.size()) ||
               id == kSpiffePrefix) {
      return Status::InvalidArgument(where + " (" + p.name + "): cert_identity '" +
                                     p.cert_identity + "' names a field but no value");
    } else if (!identities.insert(p.cert_identity).second) {
      return Status::InvalidArgument(where + " (" + p.name + "): cert_identity '" +
                                     p.cert_identity + "' is given to another principal");
    }
    if (p.role == Role::kWorker && p.jobs.empty()) {
      return Status::InvalidArgument(where + " (" + p.name +
                                     "): a worker principal needs 'jobs', the globs of the jobs "
                                     "it may serve (\"*\" for every job)");
    }
    if (p.role != Role::kWorker && !p.jobs.empty()) {
      return Status::InvalidArgument(where + " (" + p.name +
                                     "): 'jobs' applies to worker "
                                     "principals only");
    }
    for (const std::string& glob : p.jobs) {
      if (glob.empty()) return Status::InvalidArgument(where + ": a job glob is empty");
    }
  }
  return Status::Ok();
}

AccessPolicy::AccessPolicy(AuthSpec spec) : spec_(std::move(spec)) {
  token_digests_.reserve(spec_.principals.size());
  for (const PrincipalSpec& p : spec_.principals) {
    token_digests_.push_back(DecodeSha256Hex(p.token_sha256));
  }
}

std::optional<Refusal> AccessPolicy::Identify(const CallerCredentials& credentials,
                                              Caller* caller) const {
  if (!spec_.enabled) {
    *caller = Caller{"", Role::kAdmin, {}};
    return std::nullopt;
  }
  const PrincipalSpec* found = nullptr;
  if (credentials.authorization_headers > 1) {
    return Refuse(DenyReason::kUnknownToken,
                  Status::Unauthenticated("the call carries " +
                                          std::to_string(credentials.authorization_headers) +
                                          " authorization headers; send one"));
  }
  if (credentials.has_token) {
    if (!credentials.secure_channel && !credentials.loopback_peer) {
      return Refuse(DenyReason::kPlaintextToken,
                    Status::Unauthenticated("a bearer token is accepted over plaintext only from "
                                            "loopback; connect with TLS"));
    }
    if (credentials.token.empty()) {
      return Refuse(DenyReason::kUnknownToken,
                    Status::Unauthenticated("the authorization header is not 'Bearer <token>'"));
    }
    // Every principal is compared, found or not, so that the time says nothing of which matched.
    const std::string digest = Sha256(credentials.token);
    for (size_t i = 0; i < spec_.principals.size(); ++i) {
      const bool match =
          !token_digests_[i].empty() && ConstantTimeEquals(digest, token_digests_[i]);
      if (match) found = &spec_.principals[i];
    }
    if (!found) {
      return Refuse(DenyReason::kUnknownToken,
                    Status::Unauthenticated("token refused: it belongs to no principal"));
    }
  } else if (!credentials.cert_identity.empty()) {
    for (const PrincipalSpec& p : spec_.principals) {
      if (!p.token_sha256.empty() || !CertIdentityMatches(p.cert_identity, credentials)) continue;
      if (found) {
        // Two entries (a typed and an untyped one, or two typed ones on different fields) name
        // the same certificate: which role it gets must not depend on the order of the file.
        return Refuse(DenyReason::kUnknownIdentity,
                      Status::Unauthenticated(
                          "client certificate identity '" + credentials.cert_identity +
                          "' matches both principal '" + found->name + "' and '" + p.name + "'"));
      }
      found = &p;
    }
    if (!found) {
      return Refuse(
          DenyReason::kUnknownIdentity,
          Status::Unauthenticated("client certificate identity '" + credentials.cert_identity +
                                  "' belongs to no principal"));
    }
  } else {
    return Refuse(DenyReason::kNoCredentials,
                  Status::Unauthenticated(credentials.secure_channel
                                              ? "no credentials: send a client certificate or "
                                                "an authorization: Bearer token"
                                              : "no credentials: connect with TLS and a client "
                                                "certificate, or send a bearer token"));
  }
  *caller = Caller{found->name, found->role, found->jobs};
  return std::nullopt;
}

std::optional<Refusal> AccessPolicy::Check(const Caller& caller, Access access,
                                           std::string_view method, std::string_view job) const {
  if (!spec_.enabled) return std::nullopt;
  const std::string who = "principal '" + caller.principal + "' (" + RoleName(caller.role) + ")";
  switch (access) {
    case Access::kWorkerStream:
      if (caller.role != Role::kWorker) {
        return Refuse(DenyReason::kRole,
                      Status::PermissionDenied(who + " may not call " + std::string(method) +
                                               ": WorkerService is for worker principals"));
      }
      if (!job.empty() && !JobMatches(caller.jobs, job)) {
        return Refuse(DenyReason::kJob,
                      Status::PermissionDenied(who + " may not serve job '" + std::string(job) +
                                               "': not one of its jobs"));
      }
      return std::nullopt;
    case Access::kRead:
      if (caller.role == Role::kAdmin || caller.role == Role::kViewer) return std::nullopt;
      break;
    case Access::kMutate:
      if (caller.role == Role::kAdmin) return std::nullopt;
      break;
  }
  return Refuse(DenyReason::kRole,
                Status::PermissionDenied(who + " may not call " + std::string(method) +
                                         (caller.role == Role::kWorker
                                              ? ": worker principals may use WorkerService only"
                                              : ": it needs the admin role")));
}

std::optional<Refusal> AccessPolicy::CheckRegistered(std::string_view principal,
                                                     std::string_view job) const {
  if (!spec_.enabled) return std::nullopt;
  for (const PrincipalSpec& p : spec_.principals) {
    if (p.name == principal) {
      return Check(Caller{p.name, p.role, p.jobs}, Access::kWorkerStream, "WorkerService", job);
    }
  }
  return Refuse(DenyReason::kUnknownIdentity,
                Status::PermissionDenied("principal '" + std::string(principal) +
                                         "' is no longer in the auth policy"));
}

}  // namespace ckpt
