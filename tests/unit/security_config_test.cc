// The config's security sections: tls, auth, limits, insecure, and the refusal by default.
#include <gtest/gtest.h>

#include "config/daemon_config.h"

namespace ckpt {
namespace {

constexpr const char* kHash = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

Result<DaemonConfig> ParseSecurity(const std::string& yaml) {
  return ParseDaemonConfig(yaml, "c.yaml");
}

void ExpectError(const std::string& yaml, const std::string& part) {
  auto result = ParseSecurity(yaml);
  ASSERT_FALSE(result.ok()) << yaml;
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find(part), std::string::npos)
      << result.status().message() << "\nexpected: " << part;
}

const std::string kTls =
    "tls:\n"
    "  cert_file: /etc/ckptd/server.crt\n"
    "  key_file: /etc/ckptd/server.key\n"
    "  client_ca_file: /etc/ckptd/ca.crt\n"
    "  client_auth: require\n"
    "  refresh_interval_s: 5\n"
    "  crl_dir: /etc/ckptd/crl\n";
const std::string kAuth = std::string(
                              "auth:\n"
                              "  principals:\n"
                              "    - {name: ops, cert_identity: 'spiffe://x/ops', role: admin}\n"
                              "    - {name: graf, token_sha256: ") +
                          kHash +
                          ", role: viewer}\n"
                          "    - name: etl\n"
                          "      cert_identity: etl.example.org\n"
                          "      role: worker\n"
                          "      jobs: [etl, 'etl-*']\n";

TEST(SecurityConfig, ReadsTlsAuthAndLimits) {
  auto config = ParseSecurity("listen: 0.0.0.0:7070\n" + kTls + kAuth +
                              "limits:\n"
                              "  max_pipelines: 10\n"
                              "  max_tasks_per_pipeline: 50\n"
                              "  max_id_length: 64\n"
                              "  max_streams: 100\n"
                              "  max_streams_per_peer: 20\n"
                              "  max_message_bytes: 1048576\n"
                              "  max_session_queue_bytes: 65536\n"
                              "  savepoint_requests_per_minute: 2\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->tls.enabled);
  EXPECT_EQ(config->tls.client_auth, ClientAuth::kRequire);
  EXPECT_EQ(config->tls.refresh_interval_s, 5);
  EXPECT_EQ(config->tls.crl_dir, "/etc/ckptd/crl");
  ASSERT_TRUE(config->auth.enabled);
  ASSERT_EQ(config->auth.principals.size(), 3u);
  EXPECT_EQ(config->auth.principals[2].role, Role::kWorker);
  EXPECT_EQ(config->auth.principals[2].jobs, (std::vector<std::string>{"etl", "etl-*"}));
  EXPECT_EQ(config->limits.max_pipelines, 10);
  EXPECT_EQ(config->limits.max_id_length, 64);
  EXPECT_EQ(config->limits.max_session_queue_bytes, 65536);
  EXPECT_EQ(config->limits.savepoint_requests_per_minute, 2);
}

TEST(SecurityConfig, DefaultsAreContractsAndLoopbackNeedsNothing) {
  auto config = ParseSecurity("listen: 127.0.0.1:7070\n");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->tls.enabled);
  EXPECT_FALSE(config->auth.enabled);
  EXPECT_EQ(config->limits.max_pipelines, 1000000);
  EXPECT_EQ(config->limits.max_tasks_per_pipeline, 100000);
  EXPECT_EQ(config->limits.max_id_length, 256);
  EXPECT_EQ(config->limits.max_streams, 500000);
  EXPECT_EQ(config->limits.max_streams_per_peer, 200000);
  EXPECT_EQ(config->limits.max_message_bytes, 4 << 20);
  EXPECT_EQ(config->limits.max_session_queue_bytes, 4 << 20);
  EXPECT_EQ(config->limits.savepoint_requests_per_minute, 6);
  EXPECT_TRUE(ParseSecurity("listen: '[::1]:7070'\n").ok());
  EXPECT_TRUE(ParseSecurity("listen: localhost:7070\n").ok());
}

TEST(SecurityConfig, AListenOffLoopbackNeedsTlsAndAuthOrInsecure) {
  ExpectError("listen: 0.0.0.0:7070\n", "needs 'tls' and 'auth'");
  ExpectError("listen: 10.0.0.7:7070\n" + kTls, "needs 'auth'");
  ExpectError("listen: 10.0.0.7:7070\n" + kAuth, "needs 'tls'");
  ExpectError("listen: 0.0.0.0:7070\n", "c.yaml:1:9:");  // points at the listen value
  EXPECT_TRUE(ParseSecurity("listen: 0.0.0.0:7070\ninsecure: true\n").ok());
  EXPECT_TRUE(ParseSecurity("listen: 0.0.0.0:7070\n" + kTls + kAuth).ok());
}

TEST(SecurityConfig, BrokenSectionsAreNamed) {
  ExpectError("tls:\n  key_file: k\n", "missing required key 'cert_file'");
  ExpectError("tls:\n  cert_file: c\n  key_file: k\n  client_auth: require\n",
              "needs client_ca_file");
  ExpectError("tls:\n  cert_file: c\n  key_file: k\n  client_auth: mutual\n",
              "not one of none, request, require");
  ExpectError("tls:\n  cert_file: c\n  key_file: k\n  crl_dir: /x\n", "crl_dir");
  ExpectError("tls:\n  cert_file: c\n  key_file: k\n  refresh_interval_s: 0\n",
              "refresh_interval_s");
  ExpectError("tls:\n  cert_fil: c\n", "did you mean 'cert_file'");
  ExpectError("auth:\n  principals:\n    - {name: a, role: root, cert_identity: x}\n",
              "not one of admin, viewer, worker");
  ExpectError("auth:\n  principals:\n    - {name: a, cert_identity: x}\n",
              "missing required key 'role'");
  ExpectError("auth:\n  principals:\n    - {name: a, role: viewer, token_sha256: abc}\n",
              "64 hex digits");
  ExpectError("auth:\n  principals: []\n", "names no principal");
  ExpectError("limits:\n  max_id_length: 300\n", "max_id_length");
  ExpectError("limits:\n  max_tasks_per_pipeline: 100001\n", "max_tasks_per_pipeline");
  ExpectError("limits:\n  max_pipeline: 3\n", "did you mean 'max_pipelines'");
}

TEST(SecurityConfig, DeclaredPipelinesAreHeldToTheLimits) {
  ExpectError(
      "limits: {max_pipelines: 1}\n"
      "pipelines:\n"
      "  - {job_id: j, pipeline_id: a, parallelism: 1}\n"
      "  - {job_id: j, pipeline_id: b, parallelism: 1}\n",
      "limits.max_pipelines (1)");
  ExpectError(
      "limits: {max_tasks_per_pipeline: 2}\n"
      "pipelines:\n"
      "  - {job_id: j, pipeline_id: a, parallelism: 3}\n",
      "limits.max_tasks_per_pipeline (2)");
  ExpectError(
      "limits: {max_id_length: 4}\n"
      "pipelines:\n"
      "  - {job_id: j, pipeline_id: long-name, parallelism: 1}\n",
      "pipeline_id is 9 bytes, longer than limits.max_id_length (4)");
}

}  // namespace
}  // namespace ckpt
