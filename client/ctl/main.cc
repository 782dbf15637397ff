// ckptctl: the operator CLI of ckptd (docs/man/ckptctl.1, and docs/CLI.md, "ckptctl").
// Exit codes: 0 success; 1 the request failed, the daemon could not be reached, or a savepoint
// FAILED; 2 bad flags or values, or a credential file that cannot be used. Every failure is one
// line on stderr: "ckptctl: <reason>".

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "ckpt_version.h"
#include "common/security_flags.h"
#include "common/server_list.h"
#include "ctl/command.h"
#include "ctl/connection.h"

namespace {

constexpr char kExamples[] = R"(Examples:
  ckptctl status
  ckptctl pipeline create --job etl --pipeline p0 --parallelism 4 --interval 30s
  ckptctl pipeline list -o json
  ckptctl checkpoint list etl p0
  ckptctl savepoint --job etl --stop
  CKPTCTL_SERVER=ckptd.internal:7070 ckptctl pipeline get etl p0
  ckptctl --server ckptd.internal:7070 --ca-file ca.pem --token-file ~/.ckpt/token status
  ckptctl --server ckptd-a:7070,ckptd-b:7070,ckptd-c:7070 pipeline list
  source <(ckptctl completion bash)

Global flags may come before or after the command.)";

constexpr char kGlobalFlags[] =
    "\n\nGlobal flags (before or after the command): --server HOST:PORT[,HOST:PORT...] (default: "
    "$CKPTCTL_SERVER, else 127.0.0.1:7070), -o/--output table|json; security (see ckptctl "
    "--help): --ca-file, --cert-file, --key-file, --token-file, --tls-server-name (default: "
    "$CKPTCTL_CA_FILE, $CKPTCTL_CERT_FILE, ...).";

// Subcommands' help does not list the app's options: say them in every footer.
void AddGlobalFlagsNote(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    sub->footer(sub->get_footer() + kGlobalFlags);
    AddGlobalFlagsNote(sub);
  }
}

// Reads and checks the credential files into global->channel_security before any call: a
// missing CA file is reported as such, not as a failed handshake. "" when they can be used.
std::string ReadCredentialFiles(ckpt::ctl::GlobalOptions* global) {
  std::string error;
  std::optional<ckpt::cli::ChannelSecurity> security =
      ckpt::cli::LoadChannelSecurity(global->security, ckpt::cli::kSecurityFlagNames, &error);
  if (!security) return error;
  for (const std::string& server : global->servers) {
    error = ckpt::cli::CheckTokenTransport(server, *security, ckpt::cli::kSecurityFlagNames);
    if (!error.empty()) return error;
  }
  global->channel_security = std::move(*security);
  return "";
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ckpt::ctl;
  CommandContext context;
  CLI::App app{"Operates a ckptd daemon: pipelines, checkpoints and savepoints.", "ckptctl"};
  app.add_option("--server", context.global.server,
                 "Daemon address HOST:PORT, or the daemons of an HA group as HOST:PORT,HOST:PORT "
                 "(the leader is followed) (default: $CKPTCTL_SERVER, else 127.0.0.1:7070)")
      ->envname("CKPTCTL_SERVER")
      ->type_name("HOST:PORT[,...]");
  app.add_option("-o,--output", context.global.output, "Output format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  ckpt::cli::AddSecurityFlags(&app, &context.global.security, "CKPTCTL_");
  app.set_version_flag("--version", std::string("ckptctl ") + ckpt::kCkptVersion);
  app.require_subcommand(1);
  app.footer(kExamples);
  AddStatusCommand(app, context);
  AddPipelineCommands(app, context);
  AddCheckpointCommands(app, context);
  AddGroupCommands(app, context);
  AddSavepointCommand(app, context);
  AddCompletionCommand(app, context);
  AddGlobalFlagsNote(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string why = OneLine(e.what());
    // "ckptctl bogus" and "ckptctl pipeline bogus": the word is left over, and CLI11 only says
    // that a subcommand is required.
    const std::vector<std::string> left = app.remaining();
    if (why.find("subcommand is required") != std::string::npos && !left.empty()) {
      why = "unknown command \"" + left.front() + "\"";
    }
    std::fprintf(stderr, "ckptctl: %s (see --help)\n", why.c_str());
    return 2;
  }
  if (!context.action) {  // require_subcommand makes this unreachable; stay safe anyway
    std::fputs("ckptctl: no command given (see --help)\n", stderr);
    return 2;
  }

  if (context.offline) {  // completion: its output is a script a shell will source
    const int code = context.action().exit_code;
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      // A full disk under `ckptctl completion bash > FILE` must not leave a truncated script
      // behind looking like success.
      std::fputs("ckptctl: cannot write the output\n", stderr);
      return 1;
    }
    return code;
  }

  std::string server_error;
  std::optional<std::vector<std::string>> servers =
      ckpt::cli::ParseServerList(context.global.server, "--server", &server_error);
  if (!servers) {
    std::fprintf(stderr, "ckptctl: %s\n", OneLine(server_error).c_str());
    return 2;
  }
  context.global.servers = std::move(*servers);

  if (const std::string error = ReadCredentialFiles(&context.global); !error.empty()) {
    std::fprintf(stderr, "ckptctl: %s\n", OneLine(error).c_str());
    return 2;
  }

  SilenceGrpcLogging();
  const CommandResult result = context.action();
  std::fflush(stdout);
  if (result.exit_code != 0) {
    std::fprintf(stderr, "ckptctl: %s\n",
                 OneLine(result.error.empty() ? "failed" : result.error).c_str());
  }
  return result.exit_code;
}
