#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_test_files.h"
#include "common/credential_file.h"

namespace ckpt::cli {
namespace {

using client_test::ScratchDir;

TEST(ClientCredentialFile, ReadsARegularFile) {
  ScratchDir dir;
  const std::string path = dir.Write("ca.pem", "pem text\n");
  std::string error;
  EXPECT_EQ(ReadCredentialFile("--ca-file", path, &error), "pem text\n");
  EXPECT_EQ(error, "");
}

TEST(ClientCredentialFile, AMissingFileIsNamedWithItsOption) {
  ScratchDir dir;
  const std::string path = dir.path() + "/nope.pem";
  std::string error;
  EXPECT_FALSE(ReadCredentialFile("--ca-file", path, &error));
  EXPECT_EQ(error, "--ca-file " + path + ": no such file");
  EXPECT_FALSE(ReadCredentialFile("ca_file", path, &error));
  EXPECT_EQ(error, "ca_file " + path + ": no such file");
}

TEST(ClientCredentialFile, ADirectoryIsNotAFile) {
  ScratchDir dir;
  std::string error;
  EXPECT_FALSE(ReadCredentialFile("--key-file", dir.path(), &error));
  EXPECT_EQ(error, "--key-file " + dir.path() + ": is a directory, not a file");
}

TEST(ClientCredentialFile, AFifoOrADeviceIsRefusedWithoutBlocking) {
  ScratchDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string error;
  EXPECT_FALSE(ReadCredentialFile("--token-file", fifo, &error));  // would block if opened plainly
  EXPECT_EQ(error, "--token-file " + fifo + ": not a regular file (a FIFO, a device?)");
  EXPECT_FALSE(ReadCredentialFile("--token-file", "/dev/zero", &error));
  EXPECT_EQ(error, "--token-file /dev/zero: not a regular file (a FIFO, a device?)");
}

TEST(ClientCredentialFile, MoreThanOneMebibyteIsTheWrongFile) {
  ScratchDir dir;
  std::string error;
  const std::string limit = dir.Write("limit.pem", std::string(kMaxCredentialFileBytes, 'x'));
  EXPECT_TRUE(ReadCredentialFile("--ca-file", limit, &error)) << error;
  const std::string big = dir.Write("big.pem", std::string(kMaxCredentialFileBytes + 1, 'x'));
  EXPECT_FALSE(ReadCredentialFile("--ca-file", big, &error));
  EXPECT_EQ(error, "--ca-file " + big + ": larger than 1 MiB; that is not a credential file");
}

TEST(ClientCredentialFile, AnUnreadableFileSaysWhy) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  ScratchDir dir;
  const std::string path = dir.Write("key.pem", "secret");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  std::string error;
  EXPECT_FALSE(ReadCredentialFile("--key-file", path, &error));
  EXPECT_EQ(error, "--key-file " + path + ": cannot read it: Permission denied");
}

}  // namespace
}  // namespace ckpt::cli
