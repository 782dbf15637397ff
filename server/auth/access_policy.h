#pragma once
// AccessPolicy: who a caller is and what it may do (docs/SECURITY.md, "Threat model" and
// "Identities"). One object decides for every handler: the worker stream at Connect and hello,
// every AdminService method, and the coordinator's takeover rule through the principal it is
// handed. Nothing else compares roles.
//
// Pure logic over what the transport reports (CallerCredentials): no gRPC here, so it is tested
// without a server. The rpc layer turns a call's AuthContext and metadata into credentials.
//
// Threading: immutable once made; shared by every gRPC thread (a reload swaps in a new one).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ckpt {

enum class Role { kAdmin, kViewer, kWorker };
const char* RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);

// One entry of the config's auth.principals.
struct PrincipalSpec {
  std::string name;
  // Exactly one of the two: the identity of a client certificate, or the SHA-256 of a bearer
  // token (64 hex digits; never the token). A cert_identity may be typed, to match one field of
  // the certificate only: "spiffe://..." its SPIFFE id, "uri:VALUE" a URI SAN, "dns:VALUE" a DNS
  // SAN, "cn:VALUE" its subject CN. Untyped, it is compared with the certificate's identity
  // (CallerCredentials::cert_identity).
  std::string cert_identity;
  std::string token_sha256;
  Role role = Role::kViewer;
  // Worker principals only: globs (fnmatch: *, ?, [..]) of the jobs whose pipelines it may serve.
  std::vector<std::string> jobs;

  bool operator==(const PrincipalSpec&) const = default;
};

// The config's `auth` section. Without it (enabled false) every caller may do everything, as on
// loopback before this existed.
struct AuthSpec {
  bool enabled = false;
  std::vector<PrincipalSpec> principals;

  bool operator==(const AuthSpec&) const = default;
};

// OK, or INVALID_ARGUMENT naming the entry and the rule: a name, a role, exactly one of
// cert_identity and token_sha256 (the latter 64 hex digits), jobs on worker principals only and
// at least one there, no name or credential twice. `path` prefixes the messages ("auth").
Status ValidateAuthSpec(const AuthSpec& spec, const std::string& path);

// The fields of a verified client certificate, for typed cert_identity entries.
struct CertFields {
  std::string spiffe_id;          // "" unless it has exactly one URI SAN, a spiffe:// one
  std::vector<std::string> uris;  // URI SANs
  std::vector<std::string> dns;   // DNS SANs
  std::string cn;                 // subject CN
  bool operator==(const CertFields&) const = default;
};

// What the transport knows of a caller.
struct CallerCredentials {
  // The client certificate's identity, "" without a verified one: its SPIFFE id, else its first
  // URI SAN, else its first DNS SAN, else its subject CN.
  std::string cert_identity;
  CertFields cert;  // every field of that certificate
  // `authorization` headers the call carried: more than one is refused (which one would count
  // is a guess an attacker could play on).
  int authorization_headers = 0;
  bool has_token = false;  // an `authorization: Bearer <token>` header came with the call
  std::string token;
  bool secure_channel = false;  // TLS
  bool loopback_peer = false;   // the peer's address is loopback
};

// Whether a principal's `cert_identity` (typed or not) matches the certificate.
bool CertIdentityMatches(const std::string& cert_identity, const CallerCredentials& credentials);

// Who is calling, once identified. Without auth every caller is the same nameless principal ("")
// with every right.
struct Caller {
  std::string principal;
  Role role = Role::kAdmin;
  std::vector<std::string> jobs;  // a worker's job globs
};

// What a call asks for, by the role it needs.
enum class Access {
  kWorkerStream,  // WorkerService.Connect: role worker, for the job it names in hello
  kRead,          // Get*, List*, GetDaemonStatus: admin or viewer
  kMutate,        // every other AdminService method: admin
};

// Why a call was refused: the `reason` label of ckptd_auth_denied_total.
enum class DenyReason {
  kNoCredentials,    // auth is on and the call carried none
  kUnknownIdentity,  // a certificate identity no principal has
  kUnknownToken,     // a token no principal has
  kPlaintextToken,   // a token over plaintext from a peer that is not loopback
  kRole,             // the principal's role does not allow the method
  kJob,              // a worker principal, another job
  kTakeover,         // a worker principal taking over another principal's task
  kCount,
};
inline constexpr size_t kDenyReasonCount = static_cast<size_t>(DenyReason::kCount);
const char* DenyReasonLabel(DenyReason reason);

// A refusal: the status for the caller (UNAUTHENTICATED or PERMISSION_DENIED, naming what was
// refused, never the secret) and the reason to count.
struct Refusal {
  Status status;
  DenyReason reason = DenyReason::kNoCredentials;
};

class AccessPolicy {
 public:
  // A policy that lets everyone do everything (no `auth` section).
  AccessPolicy() = default;
  // `spec` must have passed ValidateAuthSpec.
  explicit AccessPolicy(AuthSpec spec);

  bool enabled() const { return spec_.enabled; }
  const AuthSpec& spec() const { return spec_; }

  // Who the caller is. A token, when sent, decides (and must be known); else the certificate's
  // identity. Tokens are compared by their SHA-256 in constant time.
  std::optional<Refusal> Identify(const CallerCredentials& credentials, Caller* caller) const;

  // May `caller` make the call `method` (its name, for the message) of kind `access`? For
  // kWorkerStream, `job` is the job of the hello.
  std::optional<Refusal> Check(const Caller& caller, Access access, std::string_view method,
                               std::string_view job = {}) const;

  // Whether a worker stream already registered as `principal` for `job` may go on under this
  // policy (after a reload): the principal still exists, is a worker, and has the job.
  std::optional<Refusal> CheckRegistered(std::string_view principal, std::string_view job) const;

 private:
  AuthSpec spec_;
  std::vector<std::string> token_digests_;  // raw 32-byte SHA-256 per principal ("" for certs)
};

}  // namespace ckpt
