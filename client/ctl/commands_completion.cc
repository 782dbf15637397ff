// ckptctl completion bash|zsh|fish: prints the shell's completion script (ctl/completion.h).

#include <cstdio>
#include <memory>
#include <string>

#include "ctl/command.h"
#include "ctl/completion.h"

namespace ckpt::ctl {

void AddCompletionCommand(CLI::App& app, CommandContext& context) {
  CLI::App* cmd = app.add_subcommand(
      "completion", "Print a shell completion script: bash, zsh or fish (see the examples below)");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("SHELL", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember(CompletionShells()));
  cmd->footer(R"(Examples:
  source <(ckptctl completion bash)                        # this bash session; or save it as
  ckptctl completion bash > /etc/bash_completion.d/ckptctl  # every bash session
  ckptctl completion zsh > "${fpath[1]}/_ckptctl"           # zsh (then start a new shell)
  ckptctl completion fish > ~/.config/fish/completions/ckptctl.fish)");
  cmd->callback([&app, &context, shell] {
    context.offline = true;
    context.action = [&app, shell] {
      const std::string script = CompletionScript(DescribeForCompletion(app), *shell);
      std::fwrite(script.data(), 1, script.size(), stdout);
      return CommandResult::Ok();
    };
  });
}

}  // namespace ckpt::ctl
