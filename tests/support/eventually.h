#pragma once
// Eventually: polls a condition until it holds or a deadline passes, for state that has no event
// to wait on.

#include <chrono>
#include <thread>

namespace ckpt::testing {

template <typename F>
bool Eventually(F cond, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

}  // namespace ckpt::testing
