// ckptd: the checkpoint-coordination daemon.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "config/daemon_config.h"
#include "runtime/daemon.h"

namespace {

constexpr const char* kDescription =
    "ckptd hosts the checkpoint coordinators of many streaming pipelines.\n"
    "Workers connect over gRPC (WorkerService), operators use ckptctl.\n\n"
    "Examples:\n"
    "  ckptd                               run on defaults (127.0.0.1:7070, ./ckptd-data)\n"
    "  ckptd --config /etc/ckptd/ckptd.yaml\n"
    "  ckptd --check-config ckptd.yaml     validate a file and exit";

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "ckptd"};
  std::string config_path;
  std::string check_path;
  bool version = false;
  app.add_option("-c,--config", config_path, "YAML configuration file (default: built-in defaults)")
      ->check(CLI::ExistingFile);
  app.add_option("--check-config", check_path, "validate FILE and exit (0 when valid)");
  app.add_flag("--version", version, "print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (version) {
    std::printf("ckptd %s\n", CKPT_VERSION);
    return 0;
  }
  if (!check_path.empty()) {
    auto config = ckpt::LoadDaemonConfig(check_path);
    if (!config.ok()) {
      std::fprintf(stderr, "ckptd: %s\n", config.status().message().c_str());
      return 1;
    }
    std::printf("%s: valid (%zu pipeline(s))\n", check_path.c_str(), config->pipelines.size());
    return 0;
  }

  ckpt::DaemonConfig config;
  if (!config_path.empty()) {
    auto loaded = ckpt::LoadDaemonConfig(config_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ckptd: %s\n", loaded.status().message().c_str());
      return 1;
    }
    config = std::move(*loaded);
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  const sigset_t signals = BlockDaemonSignals();
  ckpt::Daemon daemon(config);
  if (auto status = daemon.Start(); !status.ok()) {
    spdlog::critical("cannot start: {}", status.message());
    return 1;
  }
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      spdlog::info("SIGHUP: reloading the log level from {}",
                   config_path.empty() ? "(no config file)" : config_path);
      if (!config_path.empty()) {
        auto reloaded = ckpt::LoadDaemonConfig(config_path);
        if (!reloaded.ok()) {
          spdlog::error("reload refused, keeping the running config: {}",
                        reloaded.status().message());
        } else {
          spdlog::set_level(spdlog::level::from_str(reloaded->log_level));
        }
      }
      continue;
    }
    spdlog::info("{}: graceful shutdown", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    break;
  }
  daemon.Shutdown();
  return 0;
}
