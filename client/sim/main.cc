// ckpt-worker-sim: simulated workers for a ckptd daemon (see docs/man/ckpt-worker-sim.1, and
// docs/CLI.md, "ckpt-worker-sim").
// Exit codes: 0 normal end (duration, SIGINT, SIGTERM); 1 could not connect / every pipeline
// refused / --create failed; 2 bad flags, or a credential file that cannot be used.

#include <pthread.h>
#include <unistd.h>

#include <absl/synchronization/mutex.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/security_options.h"
#include "sim/create_pipelines.h"
#include "sim/event_log.h"
#include "sim/sim_options.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"

int main(int argc, char** argv) {
  using namespace ckpt::sim;
  // Debian's Abseil is built without NDEBUG: every absl::Mutex lock (gRPC's, all of them) also
  // checks the process's lock order for cycles, up to 2 percent of a busy process's CPU. Those are
  // gRPC's locks to check, not ours, and only in gRPC's debug builds.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  ParsedCommandLine parsed = ParseCommandLine(argc, argv);
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }

  // The credential files, checked before anything connects: a missing CA file is reported as such,
  // not as refused streams.
  std::string error;
  std::optional<ckpt::cli::ChannelSecurity> security = ckpt::cli::LoadChannelSecurity(
      parsed.options.security, ckpt::cli::kSecurityFlagNames, &error);
  for (size_t i = 0; security && error.empty() && i < parsed.options.servers.size(); ++i) {
    error = ckpt::cli::CheckTokenTransport(parsed.options.servers[i], *security,
                                           ckpt::cli::kSecurityFlagNames);
  }
  if (!error.empty()) {
    std::fprintf(stderr, "ckpt-worker-sim: %s\n", error.c_str());
    return 2;
  }

  // Blocked before any thread exists, so every thread (the runtime's, gRPC's) inherits the mask and
  // only the main thread takes SIGINT/SIGTERM, synchronously.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<EventLog> event_log;
  if (!parsed.options.event_log.empty()) {
    event_log = EventLog::Open(parsed.options.event_log, &error);
    if (!event_log) {
      std::fprintf(stderr, "ckpt-worker-sim: %s\n", error.c_str());
      return 2;
    }
  }

  if (parsed.options.create) {
    error = CreatePipelines(parsed.options, *security);
    if (!error.empty()) {
      std::fprintf(stderr, "ckpt-worker-sim: %s\n", error.c_str());
      return 1;
    }
  }

  const bool progress = parsed.options.progress || ::isatty(STDERR_FILENO) == 1;
  const bool json = parsed.options.json;
  Simulation simulation(std::move(parsed.options), event_log.get(), progress);
  SimOutcome outcome;
  try {
    outcome = simulation.Run(signals);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ckpt-worker-sim: %s\n", e.what());
    return 2;
  }

  if (json) {
    std::printf("%s\n", SummaryToJson(outcome.summary).dump().c_str());
  } else {
    std::fputs(SummaryToText(outcome.summary).c_str(), stdout);
  }
  std::fflush(stdout);
  if (outcome.exit_code != 0) std::fprintf(stderr, "ckpt-worker-sim: %s\n", outcome.reason.c_str());
  return outcome.exit_code;
}
