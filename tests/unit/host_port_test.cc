// The one HOST:PORT parser: what the config accepts is what a listener binds.
#include <gtest/gtest.h>

#include <string>

#include "common/host_port.h"

namespace ckpt {
namespace {

TEST(ParseHostPortTest, AcceptsNamesAddressesAndBracketedIpv6) {
  auto v4 = ParseHostPort("0.0.0.0:7070");
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, "7070");
  auto name = ParseHostPort("localhost:0");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->host, "localhost");
  EXPECT_EQ(name->port, "0");
  auto v6 = ParseHostPort("[::1]:65535");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1") << "the brackets are not part of the host";
  EXPECT_EQ(v6->port, "65535");
}

TEST(ParseHostPortTest, RefusesWhatNoListenerCouldBindAndSaysWhy) {
  const std::pair<std::string, std::string> cases[] = {
      {"7070", "expected HOST:PORT"},
      {":7070", "the host is empty"},
      {"[]:7070", "the host is empty"},
      {"::1:7070", "needs brackets"},
      {"local host:7070", "whitespace"},
      {"localhost:", "the port must be a number"},
      {"localhost:http", "the port must be a number"},
      {"localhost:65536", "the port must be a number"},
      {"localhost:123456", "the port must be a number"},
      {"localhost:-1", "the port must be a number"},
  };
  for (const auto& [address, reason] : cases) {
    auto parsed = ParseHostPort(address);
    ASSERT_FALSE(parsed.ok()) << address;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << address;
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos)
        << address << ": " << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(address), std::string::npos)
        << "the message names the address: " << parsed.status().message();
  }
}

}  // namespace
}  // namespace ckpt

namespace ckpt {
namespace {

TEST(IsLoopbackHost, OnlyAddressesThisMachineAloneCanReach) {
  for (const char* host : {"127.0.0.1", "127.8.9.10", "::1", "localhost", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.7", "128.0.0.1", "example.org",
                           "localhost.example.org", "::ffff:10.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace ckpt

namespace ckpt {
namespace {

// Where standbys send clients (advertise, a leader's address read from etcd, the ckpt-leader
// trailer): what gRPC can put in a header and any client can dial.
TEST(CheckLeaderAddress, TakesDnsNamesIpv4AndBracketedIpv6) {
  for (const char* address :
       {"ckptd-1.example:7070", "10.0.0.7:7070", "[::1]:7070", "[2001:db8::7]:1", "localhost:65535",
        "xn--bcher-kva.example:7070", "node_7.internal:7070", "a.example.:7070"}) {
    EXPECT_TRUE(CheckLeaderAddress(address).ok())
        << address << ": " << CheckLeaderAddress(address).message();
  }
}

TEST(CheckLeaderAddress, RefusesWhatCouldNotGoInAHeaderOrBeDialled) {
  const std::pair<std::string, std::string> cases[] = {
      {"b\xc3\xbc"
       "cher.example:7070",
       "ASCII"},
      {"a.example:7070\nx-evil: 1", "ASCII"},
      {"a.example :7070", "ASCII"},
      {"a.example:0", "port 0"},
      {"a.example", "HOST:PORT"},
      {"a..example:7070", "not a host name"},
      {"a/b:7070", "not a host name"},
      {"[fe80::zz]:7070", "not an IPv6 address"},
      {std::string(64, 'a') + ".example:7070", "not a host name"},
      {std::string(300, 'a') + ":7070", "longer than"},
  };
  for (const auto& [address, reason] : cases) {
    const Status s = CheckLeaderAddress(address);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << address;
    EXPECT_NE(s.message().find(reason), std::string::npos) << address << ": " << s.message();
  }
}

}  // namespace
}  // namespace ckpt
