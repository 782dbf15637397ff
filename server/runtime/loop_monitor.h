#pragma once
// LoopMonitor: whether every event loop keeps turning, for /healthz. Every `interval` a tick on
// the first loop of `loops` posts a probe to each loop, and each loop's probe notes when it ran.
// A loop whose probe has not run for a while (a handler that never returns, a deadlock) makes
// the daemon unhealthy, so that a liveness probe restarts it.
//
// Threading: AllTurning is safe from any thread (atomics). The timer lives on a strand of
// loops[0].
// Lifetime: the state is shared with the probes in flight; the timer holds the state, never the
// monitor. Destroy the monitor before its loops; a queued probe or tick dropped with them touches
// only the shared state.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <vector>

namespace ckpt {

class LoopMonitor {
 public:
  LoopMonitor(std::vector<boost::asio::io_context*> loops, std::chrono::milliseconds interval);
  ~LoopMonitor();
  LoopMonitor(const LoopMonitor&) = delete;
  LoopMonitor& operator=(const LoopMonitor&) = delete;

  // True while every loop ran a probe within `stall_after` (counted from now).
  bool AllTurning(std::chrono::steady_clock::duration stall_after) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ckpt
