#pragma once
// Tests that need a program from outside the tree (etcd, ...). Where it is missing, the test fails
// in CI (CI set in the environment, to anything but "false" or "0"), so that a green run cannot
// hide a skipped test; on a developer's machine it is skipped, saying so.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace ckpt::testing {

inline bool RunningInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string_view(ci) != "false" &&
         std::string_view(ci) != "0";
}

}  // namespace ckpt::testing

// In a test body or a fixture's SetUp: when `present` is false, fails (CI) or skips the test and
// returns from the function.
#define CKPT_NEED_TOOL(present, what)                                                       \
  do {                                                                                      \
    if (!(present)) {                                                                       \
      if (::ckpt::testing::RunningInCi()) GTEST_FAIL() << what << " is not installed (CI)"; \
      GTEST_SKIP() << "SKIPPED: " << what << " is not installed (in CI this test fails)";   \
    }                                                                                       \
  } while (0)

// etcd from Debian's etcd-server, which the etcd tests start themselves.
#define CKPT_NEED_ETCD() \
  CKPT_NEED_TOOL(::ckpt::testing::EtcdCluster::Installed(), "etcd (Debian's etcd-server)")
