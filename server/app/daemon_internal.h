#pragma once
// What the files of Daemon share and nothing else includes: how long a load or a reload of the
// declared pipelines waits (Start, Reload, TakeOver). daemon.h lists the files.

#include <chrono>

namespace ckpt::daemon_internal {

// A reload waits this long for its pipeline changes (store writes, strands) before reporting
// the ones not done as failed; they may still finish later.
inline constexpr auto kReloadWait = std::chrono::seconds(10);

}  // namespace ckpt::daemon_internal
