#include "ctl/completion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace ckpt::ctl {
namespace {

// What a description becomes in a completion menu: its first line, up to its first sentence's end,
// at most 80 characters.
std::string OneLineDescription(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (const size_t stop = line.find(". "); stop != std::string::npos) line.resize(stop);
  if (!line.empty() && line.back() == '.') line.pop_back();
  if (line.size() > 80) line = line.substr(0, 77) + "...";
  return line;
}

// The values of a CLI::IsMember check, as CLI11 names it in the type: "TEXT:{table,json}".
std::vector<std::string> ChoicesOf(const std::string& type_name) {
  const size_t open = type_name.find(":{");
  const size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> choices;
  std::stringstream list(type_name.substr(open + 2, close - open - 2));
  for (std::string choice; std::getline(list, choice, ',');) {
    if (!choice.empty()) choices.push_back(choice);
  }
  return choices;
}

bool IsPathType(const CLI::Option& option) {
  const std::string type = option.get_type_name().substr(0, option.get_type_name().find(':'));
  if (type == "PATH" || type == "FILE" || type == "DIR") return true;
  for (const std::string& name : option.get_lnames()) {
    if (name.ends_with("-file") || name.ends_with("-dir")) return true;
  }
  return false;
}

// A word the scripts may hold unquoted: commands, flags and choices are such words. Anything else
// is left out rather than quoted for three shells.
bool IsPlainWord(const std::string& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// Every command of the tree by its path ("ckptctl pipeline create"), root first.
void ForEachCommand(const CompletionCommand& command, const std::string& path,
                    const std::function<void(const std::string&, const CompletionCommand&)>& fn) {
  fn(path, command);
  for (const CompletionCommand& sub : command.subcommands) {
    ForEachCommand(sub, path + " " + sub.name, fn);
  }
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string SingleQuotedForShell(const std::string& text) {  // bash and zsh
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string SingleQuotedForFish(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// The tables both bash and zsh scripts look up, keyed by command path: its subcommands, its flags
// (the root's included), those of them that take a value, those whose value is a path, a flag's
// choices (keyed "PATH FLAG"), and for zsh a subcommand's description. `prefix` names the arrays.
std::string ShellTables(const CompletionCommand& root, const std::string& prefix, bool for_zsh) {
  std::map<std::string, std::string> subs, flags, valued, paths, choices, descriptions, args;
  ForEachCommand(root, root.name, [&](const std::string& path, const CompletionCommand& command) {
    std::vector<std::string> sub_names, flag_names, valued_names, path_names;
    for (const CompletionCommand& sub : command.subcommands) {
      sub_names.push_back(sub.name);
      descriptions[path + " " + sub.name] = sub.description;
    }
    // A flag of the root applies at every level (CLI11's fallthrough), listed once.
    std::vector<const CompletionFlag*> effective;
    std::set<std::string> seen;
    for (const CompletionCommand* owner : {&command, &root}) {
      for (const CompletionFlag& flag : owner->flags) {
        if (seen.insert(flag.names.back()).second) effective.push_back(&flag);
      }
    }
    for (const CompletionFlag* flag : effective) {
      for (const std::string& name : flag->names) {
        flag_names.push_back(name);
        if (flag->takes_value) valued_names.push_back(name);
        if (flag->value_is_path) path_names.push_back(name);
        if (!flag->choices.empty()) choices[path + " " + name] = Join(flag->choices);
      }
    }
    subs[path] = Join(sub_names);
    args[path] = Join(command.argument_choices);
    flags[path] = Join(flag_names);
    valued[path] = Join(valued_names);
    paths[path] = Join(path_names);
  });
  std::string out;
  auto table = [&](const std::string& name, const std::map<std::string, std::string>& entries) {
    out += "typeset -gA " + prefix + name + "\n" + prefix + name + "=(\n";
    for (const auto& [key, value] : entries) {
      // bash: [key]=value (bash 4); zsh: key value pairs.
      out += for_zsh
                 ? "  " + SingleQuotedForShell(key) + " " + SingleQuotedForShell(value) + "\n"
                 : "  [" + SingleQuotedForShell(key) + "]=" + SingleQuotedForShell(value) + "\n";
    }
    out += ")\n";
  };
  table("subs", subs);
  table("flags", flags);
  table("valued", valued);
  table("paths", paths);
  table("choices", choices);
  table("args", args);
  if (for_zsh) table("descriptions", descriptions);
  return out;
}

// The walk both scripts share: the command path the words before the cursor name (flags and the
// values of flags that take one are skipped).
constexpr char kWalk[] = R"(  local cmdpath=@ROOT@ w i skip=0
  for ((i = @FIRST@; i < @CURRENT@; i++)); do
    w=${@WORDS@[i]}
    if ((skip)); then skip=0; continue; fi
    case $w in
      --*=*) ;;
      -*) [[ " ${@P@valued[$cmdpath]} " == *" $w "* ]] && skip=1 ;;
      *) [[ " ${@P@subs[$cmdpath]} " == *" $w "* ]] && cmdpath="$cmdpath $w" ;;
    esac
  done
)";

std::string Replace(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    for (size_t at = text.find(key); at != std::string::npos;
         at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

std::string BashScript(const CompletionCommand& root) {
  const std::string p = "_" + root.name + "_";
  const std::map<std::string, std::string> names = {{"@ROOT@", root.name},
                                                    {"@P@", p},
                                                    {"@FIRST@", "1"},
                                                    {"@CURRENT@", "COMP_CWORD"},
                                                    {"@WORDS@", "COMP_WORDS"}};
  std::string out = "# bash completion for " + root.name + " (`" + root.name +
                    " completion bash`). Load it with:\n#   source <(" + root.name +
                    " completion bash)\n# or save it as /etc/bash_completion.d/" + root.name +
                    ".\n";
  out += ShellTables(root, p, false);
  out += Replace(R"(
_@ROOT@() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
)" + std::string(kWalk) +
                     R"(  COMPREPLY=()
  if [[ " ${@P@valued[$cmdpath]} " == *" $prev "* ]]; then
    local choices=${@P@choices[$cmdpath $prev]}
    if [[ -n $choices ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$choices" -- "$cur")
    elif [[ " ${@P@paths[$cmdpath]} " == *" $prev "* ]]; then
      compopt -o filenames 2>/dev/null  # a slash after directories, names quoted
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${@P@flags[$cmdpath]}" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "${@P@subs[$cmdpath]} ${@P@args[$cmdpath]}" -- "$cur")
  fi
  return 0
}
complete -F _@ROOT@ @ROOT@
)",
                 names);
  return out;
}

std::string ZshScript(const CompletionCommand& root) {
  const std::string p = "_" + root.name + "_";
  const std::map<std::string, std::string> names = {{"@ROOT@", root.name},
                                                    {"@P@", p},
                                                    {"@FIRST@", "2"},
                                                    {"@CURRENT@", "CURRENT"},
                                                    {"@WORDS@", "words"}};
  std::string out = "#compdef " + root.name + "\n# zsh completion for " + root.name + " (`" +
                    root.name + " completion zsh`). Install it with:\n#   " + root.name +
                    " completion zsh > \"${fpath[1]}/_" + root.name +
                    "\"\n# or load it with: source <(" + root.name + " completion zsh)\n";
  out += ShellTables(root, p, true);
  out += Replace(R"(
_@ROOT@() {
)" + std::string(kWalk) +
                     R"(  local prev=${words[CURRENT-1]} cur=${words[CURRENT]} ret=1
  if [[ " ${@P@valued[$cmdpath]} " == *" $prev "* ]]; then
    local choices=${@P@choices[$cmdpath $prev]}
    if [[ -n $choices ]]; then
      compadd -- ${=choices} && ret=0
    elif [[ " ${@P@paths[$cmdpath]} " == *" $prev "* ]]; then
      _files && ret=0
    fi
    return ret
  fi
  if [[ $cur == -* ]]; then
    compadd -- ${=@P@flags[$cmdpath]} && ret=0
  else
    local -a described
    local s
    for s in ${=@P@subs[$cmdpath]}; do
      described+=("$s:${@P@descriptions[$cmdpath $s]//:/\\:}")
    done
    _describe -t commands '@ROOT@ command' described && ret=0
    compadd -- ${=@P@args[$cmdpath]} && ret=0
  fi
  return ret
}

if [[ $funcstack[1] == _@ROOT@ ]]; then
  _@ROOT@ "$@"
else
  compdef _@ROOT@ @ROOT@
fi
)",
                 names);
  return out;
}

std::string FishScript(const CompletionCommand& root) {
  const std::string fn = "__" + root.name + "_cmdpath";
  std::set<std::string> valued;
  std::vector<std::string> paths;
  ForEachCommand(root, root.name, [&](const std::string& path, const CompletionCommand& command) {
    paths.push_back(SingleQuotedForFish(path));
    for (const CompletionFlag& flag : command.flags) {
      if (flag.takes_value) valued.insert(flag.names.begin(), flag.names.end());
    }
  });
  std::string out = "# fish completion for " + root.name + " (`" + root.name +
                    " completion fish`). Install it with:\n#   " + root.name +
                    " completion fish > ~/.config/fish/completions/" + root.name + ".fish\n";
  out += "set -g __" + root.name + "_valued " + Join({valued.begin(), valued.end()}) + "\n";
  out += "set -g __" + root.name + "_commands " + Join(paths) + "\n";
  out += Replace(R"(
# The command path the words before the cursor name: flags and their values skipped.
function @FN@
    set -l cmdpath @ROOT@
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '--*=*'
            case '-*'
                if contains -- $w $__@ROOT@_valued
                    set skip 1
                end
            case '*'
                if contains -- "$cmdpath $w" $__@ROOT@_commands
                    set cmdpath "$cmdpath $w"
                end
        end
    end
    echo $cmdpath
end

complete -c @ROOT@ -f
)",
                 {{"@FN@", fn}, {"@ROOT@", root.name}});
  ForEachCommand(root, root.name, [&](const std::string& path, const CompletionCommand& command) {
    // The root's flags apply at every level: no condition.
    const std::string here = " -n " + SingleQuotedForFish("test (" + fn + ") = \"" + path + "\"");
    const std::string when = path == root.name ? "" : here;
    for (const CompletionCommand& sub : command.subcommands) {
      out += "complete -c " + root.name + here + " -a " + sub.name + " -d " +
             SingleQuotedForFish(sub.description) + "\n";
    }
    if (!command.argument_choices.empty()) {
      out += "complete -c " + root.name + here + " -a " +
             SingleQuotedForFish(Join(command.argument_choices)) + "\n";
    }
    for (const CompletionFlag& flag : command.flags) {
      std::string line = "complete -c " + root.name + when;
      for (const std::string& name : flag.names) {
        line += name.starts_with("--") ? " -l " + name.substr(2) : " -s " + name.substr(1);
      }
      if (!flag.choices.empty()) {
        line += " -x -a " + SingleQuotedForFish(Join(flag.choices));
      } else if (flag.value_is_path) {
        line += " -r -F";
      } else if (flag.takes_value) {
        line += " -x";
      }
      out += line + " -d " + SingleQuotedForFish(flag.description) + "\n";
    }
  });
  return out;
}

}  // namespace

CompletionCommand DescribeForCompletion(const CLI::App& app) {
  CompletionCommand command{app.get_name(), OneLineDescription(app.get_description()), {}, {}, {}};
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) {
      for (const std::string& choice : ChoicesOf(option->get_type_name())) {
        if (IsPlainWord(choice)) command.argument_choices.push_back(choice);
      }
      continue;
    }
    if (option->get_group().empty()) continue;
    CompletionFlag flag;
    for (const std::string& name : option->get_snames()) flag.names.push_back("-" + name);
    for (const std::string& name : option->get_lnames()) flag.names.push_back("--" + name);
    std::erase_if(flag.names, [](const std::string& name) { return !IsPlainWord(name); });
    if (flag.names.empty()) continue;
    flag.description = OneLineDescription(option->get_description());
    flag.takes_value = option->get_items_expected_max() > 0;  // a flag expects none
    flag.value_is_path = flag.takes_value && IsPathType(*option);
    if (flag.takes_value) {
      flag.choices = ChoicesOf(option->get_type_name());
      std::erase_if(flag.choices, [](const std::string& choice) { return !IsPlainWord(choice); });
    }
    command.flags.push_back(std::move(flag));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty() || !IsPlainWord(sub->get_name())) continue;
    command.subcommands.push_back(DescribeForCompletion(*sub));
  }
  return command;
}

std::string CompletionScript(const CompletionCommand& root, const std::string& shell) {
  if (shell == "bash") return BashScript(root);
  if (shell == "zsh") return ZshScript(root);
  if (shell == "fish") return FishScript(root);
  return "";
}

}  // namespace ckpt::ctl
