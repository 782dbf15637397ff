#pragma once
// Shell completion for ckptctl (`ckptctl completion bash|zsh|fish`): the command tree read from
// the CLI11 app itself, so the scripts cannot drift from the commands and flags that exist, and
// written out as each shell's script. Commands and flags are completed; a flag's value when it is
// one of a fixed set (-o table|json) or a file's path. Positional values (job and pipeline ids)
// are not: they would need the daemon.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ckpt::ctl {

struct CompletionFlag {
  std::vector<std::string> names;  // as typed: "-o", "--output"
  std::string description;         // one line
  bool takes_value = false;
  bool value_is_path = false;        // the shell completes file names
  std::vector<std::string> choices;  // the values a {a,b} check allows
};

struct CompletionCommand {
  std::string name;
  std::string description;  // one line
  std::vector<CompletionFlag> flags;
  std::vector<CompletionCommand> subcommands;
  std::vector<std::string> argument_choices;  // a positional's fixed values (completion SHELL)
};

// `app` and its subcommands, without what the help hides (CLI11's empty group).
CompletionCommand DescribeForCompletion(const CLI::App& app);

// The scripts for `root` (its name is the program's). Empty for a shell not known.
std::string CompletionScript(const CompletionCommand& root, const std::string& shell);

inline const std::vector<std::string>& CompletionShells() {
  static const std::vector<std::string> shells = {"bash", "zsh", "fish"};
  return shells;
}

}  // namespace ckpt::ctl
