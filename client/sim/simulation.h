#pragma once
// One run of the simulator: starts the pipelines, waits for the end (duration, signal or failure),
// says goodbye on every stream and summarizes.

#include <csignal>
#include <string>

#include "sim/event_log.h"
#include "sim/sim_options.h"
#include "sim/sim_report.h"

namespace ckpt::sim {

struct SimOutcome {
  int exit_code = 0;
  std::string reason;  // one line for stderr when exit_code != 0
  SimSummary summary;
};

// Threading: Run is called once, from the main thread, with `signals` (SIGINT, SIGTERM) blocked in
// every thread; it waits for them with sigtimedwait.
class Simulation {
 public:
  // How long the goodbyes may take at the end, for every stream together.
  static constexpr std::chrono::milliseconds kGoodbyeWait{2000};
  static constexpr std::chrono::milliseconds kProgressEvery{5000};

  Simulation(SimOptions options, EventLog* event_log, bool progress)
      : options_(std::move(options)), event_log_(event_log), progress_(progress) {}

  // Throws std::invalid_argument when the worker runtime refuses options_.security's files (main
  // checked them already: only if they changed since).
  SimOutcome Run(const sigset_t& signals);

 private:
  const SimOptions options_;
  EventLog* const event_log_;  // may be null
  const bool progress_;
};

}  // namespace ckpt::sim
