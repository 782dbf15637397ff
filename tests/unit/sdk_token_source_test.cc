#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "ckpt/worker.h"
#include "client_test_files.h"
#include "sdk/token_source.h"

namespace ckpt::sdk {
namespace {

using client_test::ScratchDir;
using internal::TokenSource;

TEST(SdkTokenSource, NoFileNoToken) {
  TokenSource source("token_file", "", "");
  EXPECT_EQ(source.Current(), "");
}

TEST(SdkTokenSource, ARotatedTokenIsSentFromTheNextAttemptOn) {
  ScratchDir dir;
  const std::string path = dir.Write("token", "first\n");
  TokenSource source("token_file", path, "first");
  EXPECT_EQ(source.Current(), "first");

  // Rotation by rename: another file takes the name.
  const std::string next = dir.Write("token.new", "second\n");
  ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
  EXPECT_EQ(source.Current(), "second");

  // Rewritten in place at the same size, within the same clock tick as likely as not.
  dir.Write("token", "third!\n");
  EXPECT_EQ(source.Current(), "third!");
}

TEST(SdkTokenSource, AFileWithoutAValidTokenKeepsTheLastGoodOne) {
  ScratchDir dir;
  const std::string path = dir.Write("token", "good\n");
  TokenSource source("token_file", path, "good");
  EXPECT_EQ(source.Current(), "good");

  dir.Write("token", "");  // half way through a rotation that does not rename
  EXPECT_EQ(source.Current(), "good");
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_EQ(source.Current(), "good");
  EXPECT_EQ(source.Current(), "good");

  dir.Write("token", "better\n");
  EXPECT_EQ(source.Current(), "better");
}

TEST(SdkTokenSource, TheFirstAttemptReadsTheFileAgain) {
  ScratchDir dir;
  const std::string path = dir.Write("token", "changed-since\n");
  TokenSource source("token_file", path, "read-by-the-constructor");
  EXPECT_EQ(source.Current(), "changed-since");
}

// The runtime refuses unusable files in its constructor, before any thread or channel exists.
TEST(SdkRuntimeOptions, AnUnusableFileThrowsNamingTheOptionAndTheFile) {
  ScratchDir dir;
  WorkerRuntimeOptions options;
  options.server_address = "127.0.0.1:7070";
  options.ca_file = dir.path() + "/missing-ca.pem";
  try {
    WorkerRuntime runtime(options);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ckpt::sdk::WorkerRuntime: ca_file " + options.ca_file + ": no such file");
  }

  options.ca_file.clear();
  options.token_file = dir.Write("token", "\n");
  EXPECT_THROW(WorkerRuntime{options}, std::invalid_argument);

  options.token_file.clear();
  options.key_file = dir.Write("w.key", "key");
  try {
    WorkerRuntime runtime(options);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ckpt::sdk::WorkerRuntime: key_file needs cert_file (the certificate of that key)");
  }
}

TEST(SdkRuntimeOptions, ATokenWithoutTlsOnlyToLoopback) {
  ScratchDir dir;
  WorkerRuntimeOptions options;
  options.server_address = "ckptd.internal:7070";
  options.token_file = dir.Write("token", "s3cr3t\n");
  try {
    WorkerRuntime runtime(options);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ckpt::sdk::WorkerRuntime: token_file: a token goes in clear text only to a "
              "loopback address, not to ckptd.internal:7070; give ca_file to connect with TLS");
  }
}

}  // namespace
}  // namespace ckpt::sdk
