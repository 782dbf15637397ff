#pragma once
// What every ckptctl command shares: the global flags, its result, and how a subcommand hands its
// work to main (an Action recorded while parsing, run once parsing is over, so global flags given
// after the subcommand are known).

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/security_options.h"

namespace ckpt::ctl {

struct GlobalOptions {
  // --server, else $CKPTCTL_SERVER: one address, or the daemons of an HA group, comma-separated.
  std::string server = "127.0.0.1:7070";
  std::vector<std::string> servers;  // `server` parsed by main (common/server_list.h)
  std::string output = "table";      // -o table|json
  // --ca-file, --cert-file, --key-file, --token-file, --tls-server-name, else $CKPTCTL_CA_FILE,
  // ... (none: plaintext, no token).
  cli::SecurityOptions security;
  // What those files hold, read and checked by main once the flags are parsed, before the
  // command runs.
  cli::ChannelSecurity channel_security;
  bool json() const { return output == "json"; }
};

// Exit codes: 0 success, 1 the request failed (or a savepoint FAILED), 2 bad flags or values.
struct CommandResult {
  int exit_code = 0;
  std::string error;  // one line for stderr, without "ckptctl: "

  static CommandResult Ok() { return {}; }
  static CommandResult Failed(std::string why) { return {1, std::move(why)}; }
  static CommandResult BadUsage(std::string why) { return {2, std::move(why)}; }
};

using Action = std::function<CommandResult()>;

struct CommandContext {
  GlobalOptions global;
  Action action;  // set by the subcommand that was chosen
  // Set by a command that never calls the daemon (completion): the --server list and the
  // credential files are then not checked, so a stale $CKPTCTL_CA_FILE does not break it.
  bool offline = false;
};

// Each adds its subcommand(s) to `app`; `context` must outlive the app.
void AddStatusCommand(CLI::App& app, CommandContext& context);
void AddPipelineCommands(CLI::App& app, CommandContext& context);
void AddCheckpointCommands(CLI::App& app, CommandContext& context);
void AddSavepointCommand(CLI::App& app, CommandContext& context);
void AddGroupCommands(CLI::App& app, CommandContext& context);
void AddCompletionCommand(CLI::App& app, CommandContext& context);

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace ckpt::ctl
