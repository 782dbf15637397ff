#include <gtest/gtest.h>

#include "common/loopback_target.h"

namespace ckpt::cli {
namespace {

TEST(ClientLoopbackTarget, LoopbackAddressesAndLocalSockets) {
  for (const char* target :
       {"localhost:7070", "localhost", "127.0.0.1:7070", "127.1.2.3:7070", "[::1]:7070", "::1",
        "[::ffff:127.0.0.1]:7070", "dns:localhost:7070", "dns:///127.0.0.1:7070",
        "dns://8.8.8.8/localhost:7070", "ipv4:127.0.0.1:7070,127.0.0.2:7071", "ipv6:[::1]:7070",
        "unix:/run/ckptd.sock", "unix:///run/ckptd.sock", "unix-abstract:ckptd"}) {
    EXPECT_TRUE(IsLoopbackTarget(target)) << target;
  }
}

TEST(ClientLoopbackTarget, AnythingElseIsRemote) {
  for (const char* target :
       {"10.0.0.5:7070", "ckptd.internal:7070", "dns:///ckptd.internal:7070",
        "dns://127.0.0.1/ckptd.internal:7070", "ipv4:127.0.0.1:7070,10.0.0.5:7070",
        "[2001:db8::1]:7070", "128.0.0.1:7070", "localhost.example.com:7070",
        "xds:///localhost:7070", "", "[::1", "ipv4:"}) {
    EXPECT_FALSE(IsLoopbackTarget(target)) << target;
  }
}

}  // namespace
}  // namespace ckpt::cli
