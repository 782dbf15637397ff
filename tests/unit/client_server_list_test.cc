#include <gtest/gtest.h>

#include "common/server_list.h"

namespace ckpt::cli {
namespace {

using Servers = std::vector<std::string>;

Servers Parse(const std::string& text) {
  std::string error;
  std::optional<Servers> servers = ParseServerList(text, "--server", &error);
  EXPECT_TRUE(servers.has_value()) << text << ": " << error;
  EXPECT_TRUE(!servers || error.empty());
  return servers.value_or(Servers{});
}

// The error for `text`, which must not parse.
std::string ErrorOf(const std::string& text) {
  std::string error;
  EXPECT_FALSE(ParseServerList(text, "--server", &error).has_value()) << text;
  return error;
}

TEST(ClientServerList, OneAddressIsPassedOnAsBefore) {
  for (const char* target : {"127.0.0.1:7070", "ckptd.internal:7070", "[::1]:7070",
                             "unix:/run/ckptd.sock", "dns:///ckptd:7070", "localhost"}) {
    EXPECT_EQ(Parse(target), Servers{target});
  }
  // gRPC's own address lists stay one target.
  EXPECT_EQ(Parse("ipv4:127.0.0.1:1,127.0.0.2:2"), Servers{"ipv4:127.0.0.1:1,127.0.0.2:2"});
  EXPECT_EQ(Parse("  10.0.0.5:7070 "), Servers{"10.0.0.5:7070"});
}

TEST(ClientServerList, ListInOrderWithoutBlanks) {
  EXPECT_EQ(Parse("a:1,b:2,c:3"), (Servers{"a:1", "b:2", "c:3"}));
  EXPECT_EQ(Parse(" a:1 , [::1]:7070,unix:/run/x.sock "),
            (Servers{"a:1", "[::1]:7070", "unix:/run/x.sock"}));
  EXPECT_EQ(Parse("a:65535,b:1"), (Servers{"a:65535", "b:1"}));
}

TEST(ClientServerList, EmptyEntriesAreNamed) {
  EXPECT_EQ(ErrorOf(""), "--server: no address given");
  EXPECT_EQ(ErrorOf("  "), "--server: no address given");
  EXPECT_EQ(ErrorOf("a:1,,b:2"), "--server: entry 2 of \"a:1,,b:2\" is empty");
  EXPECT_EQ(ErrorOf("a:1,"), "--server: entry 2 of \"a:1,\" is empty");
  EXPECT_EQ(ErrorOf(",a:1"), "--server: entry 1 of \",a:1\" is empty");
  EXPECT_EQ(ErrorOf("a:1, ,b:2"), "--server: entry 2 of \"a:1, ,b:2\" is empty");
}

TEST(ClientServerList, EveryListEntryNeedsItsPort) {
  EXPECT_EQ(ErrorOf("a:1,b"), "--server: entry 2 of \"a:1,b\", \"b\": no port (HOST:PORT)");
  EXPECT_EQ(ErrorOf("a:,b:2"), "--server: entry 1 of \"a:,b:2\", \"a:\": no port (HOST:PORT)");
  EXPECT_NE(ErrorOf("a:1,b:http").find("\"b:http\": the port is not a number of 1..65535"),
            std::string::npos);
  EXPECT_NE(ErrorOf("a:1,b:0").find("not a number of 1..65535"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1,b:65536").find("not a number of 1..65535"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1,::1").find("brackets"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1,[::1]").find("no port"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1,[::1:7070").find("closing ']'"), std::string::npos);
  EXPECT_NE(ErrorOf("a:1,:7070").find("no host"), std::string::npos);
}

TEST(ClientServerList, DuplicatesAreRefused) {
  EXPECT_EQ(ErrorOf("a:1,b:2,a:1"),
            "--server: entry 3 of \"a:1,b:2,a:1\", \"a:1\", is listed twice");
  EXPECT_NE(ErrorOf("a:1, a:1").find("listed twice"), std::string::npos);
}

TEST(ClientServerList, TheOptionIsNamedAsTheCallerCallsIt) {
  std::string error;
  EXPECT_FALSE(ParseServerList("a:1,", "server_address", &error));
  EXPECT_EQ(error.rfind("server_address: ", 0), 0u) << error;
}

}  // namespace
}  // namespace ckpt::cli
