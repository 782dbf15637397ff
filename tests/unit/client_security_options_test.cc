#include <gtest/gtest.h>

#include "client_test_files.h"
#include "client_test_pem.h"
#include "common/security_options.h"

namespace ckpt::cli {
namespace {

using client_test::MakeTestKeyPair;
using client_test::ScratchDir;
using client_test::TestKeyPair;
using std::chrono::hours;

constexpr SecurityOptionNames kSdkNames{"ca_file", "cert_file", "key_file", "token_file",
                                        "tls_server_name"};

// Loads with the CLI flags' names; *error gets the reason.
std::optional<ChannelSecurity> Load(const SecurityOptions& options, std::string* error) {
  return LoadChannelSecurity(options, kSecurityFlagNames, error);
}

class ClientSecurityOptions : public ::testing::Test {
 protected:
  ScratchDir dir_;
  const TestKeyPair ca_ = MakeTestKeyPair("test-ca");
  const TestKeyPair client_ = MakeTestKeyPair("worker-1");
};

TEST_F(ClientSecurityOptions, NothingGivenIsPlaintextWithoutAToken) {
  std::string error;
  const std::optional<ChannelSecurity> security = Load({}, &error);
  ASSERT_TRUE(security) << error;
  EXPECT_FALSE(security->tls);
  EXPECT_EQ(security->token, "");
}

TEST_F(ClientSecurityOptions, ACaAloneIsTlsWithThoseRoots) {
  SecurityOptions options;
  options.ca_file = dir_.Write("ca.pem", ca_.cert_pem);
  options.tls_server_name = "ckptd.internal";
  std::string error;
  const std::optional<ChannelSecurity> security = Load(options, &error);
  ASSERT_TRUE(security) << error;
  EXPECT_TRUE(security->tls);
  EXPECT_EQ(security->ca_pem, ca_.cert_pem);
  EXPECT_EQ(security->cert_pem, "");
  EXPECT_EQ(security->tls_server_name, "ckptd.internal");
}

TEST_F(ClientSecurityOptions, ACertificateAndItsKeyAreMutualTlsWithDefaultRoots) {
  SecurityOptions options;
  options.cert_file = dir_.Write("w.pem", client_.cert_pem);
  options.key_file = dir_.Write("w.key", client_.key_pem);
  options.token_file = dir_.Write("token", "s3cr3t\n");
  std::string error;
  const std::optional<ChannelSecurity> security = Load(options, &error);
  ASSERT_TRUE(security) << error;
  EXPECT_TRUE(security->tls);
  EXPECT_EQ(security->ca_pem, "");
  EXPECT_EQ(security->cert_pem, client_.cert_pem);
  EXPECT_EQ(security->key_pem, client_.key_pem);
  EXPECT_EQ(security->token, "s3cr3t");
}

TEST_F(ClientSecurityOptions, AKeyWithoutItsCertificateOrTheReverse) {
  SecurityOptions options;
  options.key_file = dir_.Write("w.key", client_.key_pem);
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--key-file needs --cert-file (the certificate of that key)");
  options.key_file.clear();
  options.cert_file = dir_.Write("w.pem", client_.cert_pem);
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--cert-file needs --key-file (the private key of that certificate)");
  EXPECT_FALSE(LoadChannelSecurity(options, kSdkNames, &error));
  EXPECT_EQ(error, "cert_file needs key_file (the private key of that certificate)");
}

TEST_F(ClientSecurityOptions, AServerNameNeedsTls) {
  SecurityOptions options;
  options.tls_server_name = "ckptd.internal";
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--tls-server-name needs TLS: give --ca-file (or --cert-file and --key-file)");
}

TEST_F(ClientSecurityOptions, FileProblemsNameTheOptionAndTheFile) {
  SecurityOptions options;
  options.ca_file = dir_.path() + "/missing.pem";
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--ca-file " + options.ca_file + ": no such file");

  options.ca_file = dir_.Write("ca.pem", ca_.cert_pem);
  options.token_file = dir_.Write("token", "\n");
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--token-file " + options.token_file + ": empty; the file must hold the token");
}

TEST_F(ClientSecurityOptions, TheCaMustHoldCertificates) {
  SecurityOptions options;
  options.ca_file = dir_.Write("key-as-ca.pem", ca_.key_pem);
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--ca-file " + options.ca_file +
                       ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  options.ca_file = dir_.Write("garbage.pem", "not pem at all\n");
  EXPECT_FALSE(Load(options, &error));
  EXPECT_NE(error.find("holds no PEM certificate"), std::string::npos) << error;
  options.ca_file = dir_.Write("broken.pem", ca_.cert_pem + client_.cert_pem.substr(0, 200) +
                                                 "\n-----END CERTIFICATE-----\n");
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--ca-file " + options.ca_file + ": a certificate in it does not parse");
  // A bundle of several CAs is fine.
  options.ca_file = dir_.Write("bundle.pem", ca_.cert_pem + client_.cert_pem);
  EXPECT_TRUE(Load(options, &error)) << error;
}

TEST_F(ClientSecurityOptions, TheKeyMustBeTheCertificatesAndUnencrypted) {
  SecurityOptions options;
  options.cert_file = dir_.Write("w.pem", client_.cert_pem);
  options.key_file = dir_.Write("other.key", ca_.key_pem);
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--key-file does not hold the private key of the certificate in --cert-file");

  options.key_file = dir_.Write("encrypted.key", client_.encrypted_key_pem);
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--key-file " + options.key_file +
                       ": the key is encrypted; the client needs it without a passphrase");

  options.key_file = dir_.Write("cert-as-key.pem", client_.cert_pem);
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error, "--key-file " + options.key_file +
                       ": holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
}

TEST_F(ClientSecurityOptions, AClientCertificateOutsideItsValidityIsRefused) {
  const TestKeyPair expired = MakeTestKeyPair("old", -hours(48), -hours(24));
  SecurityOptions options;
  options.cert_file = dir_.Write("old.pem", expired.cert_pem);
  options.key_file = dir_.Write("old.key", expired.key_pem);
  std::string error;
  EXPECT_FALSE(Load(options, &error));
  EXPECT_EQ(error.rfind("--cert-file " + options.cert_file + ": the certificate expired on ", 0),
            0u)
      << error;
  EXPECT_NE(error.find(" UTC"), std::string::npos) << error;

  const TestKeyPair future = MakeTestKeyPair("new", hours(24), hours(48));
  options.cert_file = dir_.Write("new.pem", future.cert_pem);
  options.key_file = dir_.Write("new.key", future.key_pem);
  EXPECT_FALSE(Load(options, &error));
  EXPECT_NE(error.find(": the certificate is not valid before "), std::string::npos) << error;
}

TEST_F(ClientSecurityOptions, ATokenTravelsInClearTextOnlyToLoopback) {
  ChannelSecurity plaintext;
  plaintext.token = "s3cr3t";
  EXPECT_EQ(CheckTokenTransport("127.0.0.1:7070", plaintext, kSecurityFlagNames), "");
  EXPECT_EQ(CheckTokenTransport("localhost:7070", plaintext, kSecurityFlagNames), "");
  EXPECT_EQ(CheckTokenTransport("10.0.0.5:7070", plaintext, kSecurityFlagNames),
            "--token-file: a token goes in clear text only to a loopback address, not to "
            "10.0.0.5:7070; give --ca-file to connect with TLS");
  EXPECT_EQ(CheckTokenTransport("10.0.0.5:7070", plaintext, kSdkNames),
            "token_file: a token goes in clear text only to a loopback address, not to "
            "10.0.0.5:7070; give ca_file to connect with TLS");

  ChannelSecurity tls = plaintext;
  tls.tls = true;
  EXPECT_EQ(CheckTokenTransport("10.0.0.5:7070", tls, kSecurityFlagNames), "");
  ChannelSecurity no_token;
  EXPECT_EQ(CheckTokenTransport("10.0.0.5:7070", no_token, kSecurityFlagNames), "");
}

}  // namespace
}  // namespace ckpt::cli
