#include <gtest/gtest.h>

#include "client_test_files.h"
#include "common/bearer_token.h"

namespace ckpt::cli {
namespace {

std::optional<std::string> Parse(std::string_view text, std::string* error) {
  return ParseBearerToken(text, "--token-file", "t.txt", error);
}

TEST(ClientBearerToken, TrailingWhitespaceAndNewlinesAreNotPartOfIt) {
  std::string error;
  EXPECT_EQ(Parse("s3cr3t", &error), "s3cr3t");
  EXPECT_EQ(Parse("s3cr3t\n", &error), "s3cr3t");
  EXPECT_EQ(Parse("s3cr3t\r\n", &error), "s3cr3t");
  EXPECT_EQ(Parse("s3cr3t \t\n\n", &error), "s3cr3t");
  EXPECT_EQ(Parse("a.b-c_d~e+f/g=", &error), "a.b-c_d~e+f/g=");
  EXPECT_EQ(error, "");
}

TEST(ClientBearerToken, AnEmptyFileIsRefused) {
  std::string error;
  EXPECT_FALSE(Parse("", &error));
  EXPECT_EQ(error, "--token-file t.txt: empty; the file must hold the token");
  EXPECT_FALSE(Parse(" \n\r\n", &error));
  EXPECT_EQ(error, "--token-file t.txt: empty; the file must hold the token");
}

TEST(ClientBearerToken, BytesAHeaderCannotCarryAreRefusedWithoutQuotingTheToken) {
  std::string error;
  EXPECT_FALSE(Parse("first\nsecond\n", &error));
  EXPECT_EQ(error,
            "--token-file t.txt: the token holds a control character at byte 6 (a second "
            "line?); the file must hold the token alone");
  EXPECT_FALSE(Parse("ab\x01", &error));
  EXPECT_NE(error.find("control character at byte 3"), std::string::npos) << error;
  EXPECT_FALSE(Parse("ab\x7f", &error));
  EXPECT_NE(error.find("control character at byte 3"), std::string::npos) << error;
  EXPECT_FALSE(Parse("Bearer abc", &error));  // the prefix belongs to the header, not the file
  EXPECT_EQ(error,
            "--token-file t.txt: the token holds a space or a tab at byte 7; a token is one word");
  EXPECT_FALSE(Parse("\tabc", &error));
  EXPECT_NE(error.find("space or a tab at byte 1"), std::string::npos) << error;
  EXPECT_FALSE(Parse("caf\xc3\xa9", &error));
  EXPECT_EQ(error, "--token-file t.txt: the token holds a byte outside printable ASCII at byte 4");
  EXPECT_EQ(error.find("caf"), std::string::npos);
}

TEST(ClientBearerToken, TheHeaderValue) {
  EXPECT_EQ(BearerMetadataValue("s3cr3t"), "Bearer s3cr3t");
  EXPECT_STREQ(kAuthorizationMetadataKey, "authorization");
}

TEST(ClientBearerToken, ReadFromAFile) {
  client_test::ScratchDir dir;
  std::string error;
  EXPECT_EQ(ReadBearerTokenFile("token_file", dir.Write("t", "tok\n"), &error), "tok");
  const std::string empty = dir.Write("empty", "\n");
  EXPECT_FALSE(ReadBearerTokenFile("token_file", empty, &error));
  EXPECT_EQ(error, "token_file " + empty + ": empty; the file must hold the token");
  EXPECT_FALSE(ReadBearerTokenFile("token_file", dir.path() + "/none", &error));
  EXPECT_EQ(error, "token_file " + dir.path() + "/none: no such file");
}

}  // namespace
}  // namespace ckpt::cli
