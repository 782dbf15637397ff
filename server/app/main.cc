// ckptd: the checkpoint-coordination daemon.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <absl/synchronization/mutex.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "app/daemon.h"
#include "app/reload_thread.h"
#include "auth/tls_files.h"
#include "ckpt_version.h"
#include "common/exit_codes.h"
#include "config/daemon_config.h"
#include "logging/log_setup.h"
#include "rpc/grpc_log_bridge.h"
#include "systemd/notify.h"

namespace {

constexpr const char* kDescription =
    "ckptd hosts the checkpoint coordinators of many streaming pipelines.\n"
    "Workers connect over gRPC (WorkerService), operators use ckptctl.\n\n"
    "Examples:\n"
    "  ckptd                               run on defaults (127.0.0.1:7070, ./ckptd-data)\n"
    "  ckptd --config /etc/ckptd/ckptd.yaml\n"
    "  ckptd --check-config ckptd.yaml     validate a file and exit\n\n"
    "Signals: SIGTERM/SIGINT shut down gracefully, SIGHUP reloads the --config file.\n"
    "Exit status: 0 after a clean shutdown or a valid --check-config; 2 for bad command-line\n"
    "arguments; 78 for a config error\n"
    "and 65 for damaged or missing stored data (the unit restarts on neither); 75 when a\n"
    "store write's outcome is unknown (restarted: the restart reads what is durable); 1 when\n"
    "the daemon cannot start for another reason (a port in use, ...).";

using ckpt::kExitConfig;

// Blocks SIGINT, SIGTERM and SIGHUP in every thread; main waits for them with sigwait, so no
// handler runs at an arbitrary point of another thread.
sigset_t BlockDaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Every worker stream is a socket: raise the soft limit on open files to the hard limit, so that
// the daemon is not the first to run out (systemd's LimitNOFILE sets the hard one).
void RaiseFileLimit() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::info("open files limit raised from {} to {}", before, limit.rlim_cur);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil is built without NDEBUG: every absl::Mutex lock (gRPC's, all of them) also
  // checks the process's lock order for cycles, up to 2 percent of a busy process's CPU. Those are
  // gRPC's locks to check, not ours, and only in gRPC's debug builds.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{kDescription, "ckptd"};
  std::string config_path;
  std::string check_path;
  bool version = false;
  // Not CLI11's ExistingFile check: every config error, a missing file or a directory included,
  // is reported by the loader and exits 78.
  app.add_option("-c,--config", config_path, "YAML configuration file (default: built-in defaults)")
      ->type_name("FILE");
  app.add_option("--check-config", check_path, "Validate FILE and exit (0 when valid)")
      ->type_name("FILE");
  app.add_flag("--version", version, "Print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line and exit 2, as ckptctl and ckpt-worker-sim do (CLI11's own codes are 100 and up).
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');
    std::fprintf(stderr, "ckptd: %s (see --help)\n", why.c_str());
    return 2;
  }
  if (version) {
    const std::string sanitizers = ckpt::kCkptSanitizers;
    std::printf("ckptd %s%s\n", ckpt::kCkptVersion,
                sanitizers.empty() ? "" : (" (sanitizers: " + sanitizers + ")").c_str());
    return 0;
  }
  if (!check_path.empty()) {
    auto config = ckpt::LoadDaemonConfig(check_path);
    if (!config.ok()) {
      std::fprintf(stderr, "ckptd: %s\n", config.status().message().c_str());
      return kExitConfig;
    }
    if (auto tls = ckpt::CheckTlsFiles(config->tls); config->tls.enabled && !tls.ok()) {
      std::fprintf(stderr, "ckptd: %s: %s\n", check_path.c_str(), tls.message().c_str());
      return kExitConfig;
    }
    std::printf("%s: valid (%zu pipeline(s))\n", check_path.c_str(), config->pipelines.size());
    return 0;
  }

  ckpt::DaemonConfig config;
  if (!config_path.empty()) {
    auto loaded = ckpt::LoadDaemonConfig(config_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ckptd: %s\n", loaded.status().message().c_str());
      return kExitConfig;
    }
    config = std::move(*loaded);
  }
  // The TLS files are part of the config: unusable ones are a config error (exit 78), found
  // before anything starts.
  if (config.tls.enabled) {
    if (auto tls = ckpt::CheckTlsFiles(config.tls); !tls.ok()) {
      std::fprintf(stderr, "ckptd: %s: %s\n", config_path.c_str(), tls.message().c_str());
      return kExitConfig;
    }
  }
  const ckpt::LogStyle log_style = ckpt::ChooseLogStyle(config.log_format);
  ckpt::SetUpLogging(log_style, config.log_level);
  ckpt::RouteGrpcLogsToSpdlog();

  // Files the daemon creates (the store, its lock) are for its own user and group only.
  ::umask(027);
  RaiseFileLimit();
  const sigset_t signals = BlockDaemonSignals();
  ckpt::Daemon daemon(config);
  ckpt::systemd::NotifyStatus("starting: opening the store, loading pipelines");
  if (auto status = daemon.Start(); !status.ok()) {
    spdlog::critical("cannot start: {}", status.message());
    ckpt::systemd::NotifyStatus("failed to start: " + status.message());
    return status.code() == ckpt::StatusCode::kDataLoss ? ckpt::kExitDataLoss
                                                        : ckpt::kExitStartFailed;
  }
  // Only now: the store is open, the pipelines are loaded and every port accepts.
  const std::string serving = "serving gRPC on port " + std::to_string(daemon.grpc_port()) + ", " +
                              std::to_string(daemon.pipelines().registry().size()) + " pipeline(s)";
  ckpt::systemd::NotifyReady(serving);
  spdlog::info("log format: {}", ckpt::LogStyleName(log_style));
  std::unique_ptr<ckpt::systemd::Watchdog> watchdog;
  if (auto interval = ckpt::systemd::WatchdogInterval()) {
    std::vector<boost::asio::io_context*> loops = daemon.shards().AllLoops();
    spdlog::info("systemd watchdog: {} ms; pinging every {} ms while all {} event loop(s) turn",
                 interval->count() / 1000, interval->count() / 2000, loops.size());
    watchdog = std::make_unique<ckpt::systemd::Watchdog>(std::move(loops), *interval);
  }
  ckpt::ReloadThread reloads(daemon, config_path, serving);
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      if (config_path.empty()) {
        spdlog::info("SIGHUP: no config file (started on built-in defaults); nothing to reload");
      } else {
        reloads.Request();
      }
      continue;
    }
    spdlog::info("{}: graceful shutdown", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    break;
  }
  reloads.Stop();
  ckpt::systemd::NotifyStopping("shutting down: pending checkpoints may finish");
  daemon.Shutdown();
  watchdog.reset();  // the loops are stopped: no handler of theirs is running
  return 0;
}
