#include <grpcpp/test/client_context_test_peer.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

#include "common/channel_security.h"
#include "common/security_flags.h"

namespace ckpt::cli {
namespace {

TEST(ClientChannelSecurity, TheTokenIsAnAuthorizationHeaderOnTheCall) {
  grpc::ClientContext context;
  AttachBearerToken("s3cr3t", &context);
  const grpc::testing::ClientContextTestPeer peer(&context);
  const std::multimap<std::string, std::string> metadata = peer.GetSendInitialMetadata();
  ASSERT_EQ(metadata.size(), 1u);
  EXPECT_EQ(metadata.begin()->first, "authorization");
  EXPECT_EQ(metadata.begin()->second, "Bearer s3cr3t");
}

TEST(ClientChannelSecurity, NoTokenNoHeader) {
  grpc::ClientContext context;
  AttachBearerToken("", &context);
  EXPECT_TRUE(grpc::testing::ClientContextTestPeer(&context).GetSendInitialMetadata().empty());
}

TEST(ClientChannelSecurity, CredentialsForEitherKindOfChannel) {
  ChannelSecurity plaintext;
  EXPECT_NE(MakeChannelCredentials(plaintext), nullptr);
  ChannelSecurity tls;
  tls.tls = true;  // gRPC's default roots
  EXPECT_NE(MakeChannelCredentials(tls), nullptr);
}

// Parses `args` (after the program name) with only the security flags.
SecurityOptions ParseFlags(std::vector<const char*> args, const std::string& env_prefix) {
  args.insert(args.begin(), "prog");
  CLI::App app;
  SecurityOptions options;
  AddSecurityFlags(&app, &options, env_prefix);
  app.parse(static_cast<int>(args.size()), args.data());
  return options;
}

TEST(ClientSecurityFlags, EveryFlag) {
  const SecurityOptions options =
      ParseFlags({"--ca-file", "ca.pem", "--cert-file", "w.pem", "--key-file", "w.key",
                  "--token-file", "token", "--tls-server-name", "ckptd.internal"},
                 "");
  EXPECT_EQ(options.ca_file, "ca.pem");
  EXPECT_EQ(options.cert_file, "w.pem");
  EXPECT_EQ(options.key_file, "w.key");
  EXPECT_EQ(options.token_file, "token");
  EXPECT_EQ(options.tls_server_name, "ckptd.internal");
}

TEST(ClientSecurityFlags, EnvironmentVariablesAndAFlagWins) {
  ::setenv("CKPTTEST_CA_FILE", "env-ca.pem", 1);
  ::setenv("CKPTTEST_CERT_FILE", "env-w.pem", 1);
  ::setenv("CKPTTEST_KEY_FILE", "env-w.key", 1);
  ::setenv("CKPTTEST_TOKEN_FILE", "env-token", 1);
  ::setenv("CKPTTEST_TLS_SERVER_NAME", "env-name", 1);
  const SecurityOptions from_env = ParseFlags({}, "CKPTTEST_");
  const SecurityOptions flag_wins = ParseFlags({"--token-file", "flag-token"}, "CKPTTEST_");
  const SecurityOptions without_prefix = ParseFlags({}, "");
  for (const char* name : {"CKPTTEST_CA_FILE", "CKPTTEST_CERT_FILE", "CKPTTEST_KEY_FILE",
                           "CKPTTEST_TOKEN_FILE", "CKPTTEST_TLS_SERVER_NAME"}) {
    ::unsetenv(name);
  }
  EXPECT_EQ(from_env.ca_file, "env-ca.pem");
  EXPECT_EQ(from_env.cert_file, "env-w.pem");
  EXPECT_EQ(from_env.key_file, "env-w.key");
  EXPECT_EQ(from_env.token_file, "env-token");
  EXPECT_EQ(from_env.tls_server_name, "env-name");
  EXPECT_EQ(flag_wins.token_file, "flag-token");
  EXPECT_EQ(flag_wins.ca_file, "env-ca.pem");
  EXPECT_EQ(without_prefix.ca_file, "");
}

}  // namespace
}  // namespace ckpt::cli
