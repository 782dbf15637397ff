#include "auth/access_policy.h"

#include <gtest/gtest.h>

#include "auth/token_digest.h"

namespace ckpt {
namespace {

AuthSpec TeamSpec() {
  AuthSpec spec;
  spec.enabled = true;
  spec.principals = {
      {"ops", "spiffe://example.org/ops", "", Role::kAdmin, {}},
      {"grafana", "", Sha256Hex("viewer-token"), Role::kViewer, {}},
      {"etl-workers", "etl-worker.example.org", "", Role::kWorker, {"etl", "etl-*"}},
      {"billing-workers", "", Sha256Hex("billing-token"), Role::kWorker, {"billing"}},
  };
  return spec;
}

// A verified certificate whose identity (the first of SPIFFE id, URI SAN, DNS SAN, CN) is
// `identity`: a SPIFFE id when it is a spiffe:// URI, else its only field, the CN.
CallerCredentials Cert(const std::string& identity) {
  CallerCredentials c;
  c.secure_channel = true;
  c.cert_identity = identity;
  if (identity.rfind("spiffe://", 0) == 0) {
    c.cert.spiffe_id = identity;
    c.cert.uris = {identity};
  } else {
    c.cert.cn = identity;
  }
  return c;
}

// A verified certificate with these fields; its identity as CredentialsOf orders them.
CallerCredentials CertWith(CertFields fields) {
  CallerCredentials c;
  c.secure_channel = true;
  c.cert = std::move(fields);
  c.cert_identity = !c.cert.spiffe_id.empty() ? c.cert.spiffe_id
                    : !c.cert.uris.empty()    ? c.cert.uris.front()
                    : !c.cert.dns.empty()     ? c.cert.dns.front()
                                              : c.cert.cn;
  return c;
}

CallerCredentials Token(const std::string& token, bool tls = true, bool loopback = false) {
  CallerCredentials c;
  c.secure_channel = tls;
  c.loopback_peer = loopback;
  c.has_token = true;
  c.token = token;
  return c;
}

TEST(TokenDigest, MatchesTheKnownSha256OfAbc) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(DecodeSha256Hex(Sha256Hex("abc")), Sha256("abc"));
  EXPECT_EQ(DecodeSha256Hex("zz"), "");
  EXPECT_EQ(DecodeSha256Hex(std::string(64, 'g')), "");
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

TEST(AccessPolicy, WithoutAuthEveryCallerMayDoEverything) {
  AccessPolicy open;
  Caller caller;
  ASSERT_FALSE(open.Identify({}, &caller));
  EXPECT_EQ(caller.principal, "");
  EXPECT_FALSE(open.Check(caller, Access::kMutate, "DeletePipeline"));
  EXPECT_FALSE(open.Check(caller, Access::kWorkerStream, "hello", "anything"));
}

TEST(AccessPolicy, IdentifiesByCertificateOrToken) {
  AccessPolicy policy(TeamSpec());
  Caller caller;
  ASSERT_FALSE(policy.Identify(Cert("spiffe://example.org/ops"), &caller));
  EXPECT_EQ(caller.principal, "ops");
  EXPECT_EQ(caller.role, Role::kAdmin);
  ASSERT_FALSE(policy.Identify(Token("viewer-token"), &caller));
  EXPECT_EQ(caller.principal, "grafana");
  EXPECT_EQ(caller.role, Role::kViewer);
  // A token decides even beside a certificate.
  CallerCredentials both = Token("billing-token");
  both.cert_identity = "spiffe://example.org/ops";
  ASSERT_FALSE(policy.Identify(both, &caller));
  EXPECT_EQ(caller.principal, "billing-workers");
}

TEST(AccessPolicy, RefusesUnknownOrMissingCredentialsAsUnauthenticated) {
  AccessPolicy policy(TeamSpec());
  Caller caller;
  auto none = policy.Identify(CallerCredentials{}, &caller);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(none->reason, DenyReason::kNoCredentials);

  auto stranger = policy.Identify(Cert("CN=mallory"), &caller);
  ASSERT_TRUE(stranger);
  EXPECT_EQ(stranger->status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(stranger->reason, DenyReason::kUnknownIdentity);

  auto wrong = policy.Identify(Token("guess"), &caller);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->reason, DenyReason::kUnknownToken);
  EXPECT_EQ(wrong->status.message().find("guess"), std::string::npos) << "never the secret";
}

TEST(AccessPolicy, ATokenOverPlaintextCountsOnlyFromLoopback) {
  AccessPolicy policy(TeamSpec());
  Caller caller;
  auto remote = policy.Identify(Token("viewer-token", /*tls=*/false, /*loopback=*/false), &caller);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->reason, DenyReason::kPlaintextToken);
  EXPECT_FALSE(policy.Identify(Token("viewer-token", false, /*loopback=*/true), &caller));
  EXPECT_EQ(caller.principal, "grafana");
}

TEST(AccessPolicy, RolesDecideWhatACallerMayCall) {
  AccessPolicy policy(TeamSpec());
  const Caller ops{"ops", Role::kAdmin, {}};
  const Caller viewer{"grafana", Role::kViewer, {}};
  const Caller worker{"etl-workers", Role::kWorker, {"etl", "etl-*"}};
  EXPECT_FALSE(policy.Check(ops, Access::kMutate, "DeletePipeline"));
  EXPECT_FALSE(policy.Check(viewer, Access::kRead, "ListPipelines"));
  auto viewer_delete = policy.Check(viewer, Access::kMutate, "DeletePipeline");
  ASSERT_TRUE(viewer_delete);
  EXPECT_EQ(viewer_delete->status.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(viewer_delete->status.message().find("DeletePipeline"), std::string::npos);
  EXPECT_EQ(viewer_delete->reason, DenyReason::kRole);
  EXPECT_TRUE(policy.Check(worker, Access::kRead, "GetPipeline")) << "workers: WorkerService only";
  EXPECT_TRUE(policy.Check(ops, Access::kWorkerStream, "WorkerService.Connect"))
      << "operators do not serve tasks";
  EXPECT_FALSE(policy.Check(worker, Access::kWorkerStream, "WorkerService.Connect"));
}

TEST(AccessPolicy, AWorkerServesOnlyJobsMatchingItsGlobs) {
  AccessPolicy policy(TeamSpec());
  const Caller worker{"etl-workers", Role::kWorker, {"etl", "etl-*"}};
  EXPECT_FALSE(policy.Check(worker, Access::kWorkerStream, "hello", "etl"));
  EXPECT_FALSE(policy.Check(worker, Access::kWorkerStream, "hello", "etl-eu"));
  auto other = policy.Check(worker, Access::kWorkerStream, "hello", "billing");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(other->reason, DenyReason::kJob);
  EXPECT_NE(other->status.message().find("billing"), std::string::npos);
  EXPECT_TRUE(policy.Check(worker, Access::kWorkerStream, "hello", "etlx"));
}

TEST(AccessPolicy, ATokenDecidesEvenBesideAGoodCertificateAndMustBeABearerToken) {
  AccessPolicy policy(TeamSpec());
  Caller caller;
  CallerCredentials wrong_token = Token("guess");
  wrong_token.cert_identity = "spiffe://example.org/ops";
  auto refused = policy.Identify(wrong_token, &caller);
  ASSERT_TRUE(refused) << "an unknown token is refused, whatever the certificate";
  EXPECT_EQ(refused->reason, DenyReason::kUnknownToken);
  // "Basic ..." or a bare "Bearer" reach the policy as a token-less authorization header.
  auto empty = policy.Identify(Token(""), &caller);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(empty->status.message().find("Bearer"), std::string::npos);
}

TEST(AccessPolicy, AReloadedPolicyJudgesRegisteredStreamsByPrincipalAndJob) {
  AccessPolicy policy(TeamSpec());
  EXPECT_FALSE(policy.CheckRegistered("etl-workers", "etl"));
  auto other_job = policy.CheckRegistered("etl-workers", "billing");
  ASSERT_TRUE(other_job);
  EXPECT_EQ(other_job->status.code(), StatusCode::kPermissionDenied);
  auto removed = policy.CheckRegistered("gone", "etl");
  ASSERT_TRUE(removed);
  EXPECT_NE(removed->status.message().find("no longer"), std::string::npos);
  EXPECT_TRUE(policy.CheckRegistered("ops", "etl")) << "an admin is no worker";
  EXPECT_FALSE(AccessPolicy().CheckRegistered("", "etl")) << "without auth nothing is refused";
}

TEST(AccessPolicy, ViewersDoNotServeTasks) {
  AccessPolicy policy(TeamSpec());
  auto refused = policy.Check(Caller{"grafana", Role::kViewer, {}}, Access::kWorkerStream,
                              "WorkerService.Connect");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, DenyReason::kRole);
  EXPECT_STREQ(DenyReasonLabel(DenyReason::kNoCredentials), "no_credentials");
  EXPECT_STREQ(DenyReasonLabel(DenyReason::kTakeover), "takeover");
}

TEST(AccessPolicy, ValidationNamesTheBrokenPrincipal) {
  auto expect_error = [](AuthSpec spec, const std::string& part) {
    Status s = ValidateAuthSpec(spec, "auth");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << part;
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  };
  EXPECT_TRUE(ValidateAuthSpec(TeamSpec(), "auth").ok());
  AuthSpec empty;
  empty.enabled = true;
  expect_error(empty, "names no principal");
  AuthSpec spec = TeamSpec();
  spec.principals[1].token_sha256 = "plain-token";
  expect_error(spec, "64 hex digits");
  spec = TeamSpec();
  spec.principals[0].token_sha256 = Sha256Hex("x");
  expect_error(spec, "exactly one of cert_identity and token_sha256");
  spec = TeamSpec();
  spec.principals[2].jobs.clear();
  expect_error(spec, "needs 'jobs'");
  spec = TeamSpec();
  spec.principals[0].jobs = {"etl"};
  expect_error(spec, "worker principals only");
  spec = TeamSpec();
  spec.principals[3].name = "ops";
  expect_error(spec, "used twice");
  spec = TeamSpec();
  spec.principals[3].token_sha256 = spec.principals[1].token_sha256;
  expect_error(spec, "another principal");
  spec = TeamSpec();
  spec.principals[1].token_sha256 = Sha256Hex("");
  expect_error(spec, "empty token");
}

TEST(AccessPolicy, ATypedCertIdentityMatchesOnlyItsField) {
  AuthSpec spec;
  spec.enabled = true;
  spec.principals = {
      {"by-cn", "cn:ops", "", Role::kAdmin, {}},
      {"by-dns", "dns:worker.example.org", "", Role::kWorker, {"etl"}},
      {"by-uri", "uri:urn:example:viewer", "", Role::kViewer, {}},
      {"by-spiffe", "spiffe://example.org/etl", "", Role::kWorker, {"etl"}},
  };
  ASSERT_TRUE(ValidateAuthSpec(spec, "auth").ok());
  AccessPolicy policy(spec);
  Caller caller;
  // CN=ops with a DNS SAN: its untyped identity is the DNS name, but cn:ops matches its CN.
  ASSERT_FALSE(policy.Identify(CertWith({"", {}, {"host.example.org"}, "ops"}), &caller));
  EXPECT_EQ(caller.principal, "by-cn");
  // A DNS SAN "ops" is not a CN "ops".
  EXPECT_TRUE(policy.Identify(CertWith({"", {}, {"ops"}, ""}), &caller));
  // dns: matches any of the DNS SANs, never the CN.
  ASSERT_FALSE(
      policy.Identify(CertWith({"", {}, {"a.example.org", "worker.example.org"}, ""}), &caller));
  EXPECT_EQ(caller.principal, "by-dns");
  EXPECT_TRUE(policy.Identify(CertWith({"", {}, {}, "worker.example.org"}), &caller));
  // uri: a URI SAN; spiffe:// the SPIFFE id only (a URI SAN among several is no SPIFFE id).
  ASSERT_FALSE(policy.Identify(CertWith({"", {"urn:example:viewer"}, {}, ""}), &caller));
  EXPECT_EQ(caller.principal, "by-uri");
  ASSERT_FALSE(policy.Identify(
      CertWith({"spiffe://example.org/etl", {"spiffe://example.org/etl"}, {}, ""}), &caller));
  EXPECT_EQ(caller.principal, "by-spiffe");
  EXPECT_TRUE(
      policy.Identify(CertWith({"", {"spiffe://example.org/etl", "urn:other"}, {}, ""}), &caller));
  // No typed prefix without a value.
  for (const char* empty : {"cn:", "dns:", "uri:", "spiffe://"}) {
    AuthSpec bad = spec;
    bad.principals[0].cert_identity = empty;
    EXPECT_FALSE(ValidateAuthSpec(bad, "auth").ok()) << empty;
  }
}

TEST(AccessPolicy, ACertificateThatTwoPrincipalsNameIsRefusedNotGuessed) {
  AuthSpec spec;
  spec.enabled = true;
  spec.principals = {{"admin", "cn:ops", "", Role::kAdmin, {}},
                     {"viewer", "dns:ops.example.org", "", Role::kViewer, {}}};
  AccessPolicy policy(spec);
  Caller caller;
  auto refusal = policy.Identify(CertWith({"", {}, {"ops.example.org"}, "ops"}), &caller);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(refusal->status.message().find("both"), std::string::npos);
}

TEST(AccessPolicy, TwoAuthorizationHeadersAreUnauthenticated) {
  AccessPolicy policy(TeamSpec());
  Caller caller;
  CallerCredentials two = Token("viewer-token");
  two.authorization_headers = 2;
  auto refusal = policy.Identify(two, &caller);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(refusal->status.message().find("2 authorization headers"), std::string::npos);
  CallerCredentials one = Token("viewer-token");
  one.authorization_headers = 1;
  EXPECT_FALSE(policy.Identify(one, &caller));
}

}  // namespace
}  // namespace ckpt
