// ckptctl group put | get | list | delete: alignment groups (docs/man/ckptctl-group.1;
// docs/ALIGNMENT.md).

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>

#include "ctl/command.h"
#include "ctl/connection.h"
#include "ctl/output_views.h"
#include "ctl/spec_flags.h"
#include "views/admin_json.h"

namespace ckpt::ctl {
namespace {

struct GroupFlags {
  std::string name;
  std::string interval, timeout, min_pause, commit_timeout, max_interval;  // durations as typed
  int64_t position_interval = 0;
  double max_overhead = 0;
  CLI::Option *interval_option = nullptr, *timeout_option = nullptr, *min_pause_option = nullptr,
              *position_interval_option = nullptr, *commit_timeout_option = nullptr,
              *max_overhead_option = nullptr, *max_interval_option = nullptr;
};

std::optional<std::string> Given(const CLI::Option* option, const std::string& value) {
  return option->count() > 0 ? std::optional<std::string>(value) : std::nullopt;
}

CommandResult PrintGroup(const GlobalOptions& global, const v1::AlignmentGroup& group) {
  const std::string text =
      global.json() ? Dump(AlignmentGroupJson(group)) : AlignmentGroupDetail(group, NowMs());
  std::fputs(text.c_str(), stdout);
  return CommandResult::Ok();
}

CommandResult RunPut(const GlobalOptions& global, const GroupFlags& flags) {
  v1::AlignmentGroupSpec spec;
  spec.set_name(flags.name);
  std::string error;
  if (!SetDuration("--interval", Given(flags.interval_option, flags.interval),
                   &v1::AlignmentGroupSpec::set_interval_ms, &spec, &error) ||
      !SetDuration("--timeout", Given(flags.timeout_option, flags.timeout),
                   &v1::AlignmentGroupSpec::set_timeout_ms, &spec, &error) ||
      !SetDuration("--min-pause", Given(flags.min_pause_option, flags.min_pause),
                   &v1::AlignmentGroupSpec::set_min_pause_ms, &spec, &error) ||
      !SetDuration("--commit-timeout", Given(flags.commit_timeout_option, flags.commit_timeout),
                   &v1::AlignmentGroupSpec::set_commit_timeout_ms, &spec, &error) ||
      !SetDuration("--max-interval", Given(flags.max_interval_option, flags.max_interval),
                   &v1::AlignmentGroupSpec::set_max_interval_ms, &spec, &error) ||
      !SetMaxOverhead(flags.max_overhead_option->count() > 0
                          ? std::optional<double>(flags.max_overhead)
                          : std::nullopt,
                      &v1::AlignmentGroupSpec::set_max_overhead, &spec, &error)) {
    return CommandResult::BadUsage(error);
  }
  if (flags.position_interval_option->count() > 0) {
    if (flags.position_interval < 0) {
      return CommandResult::BadUsage(
          "--position-interval: must be 0 (time alone) or a positive number of positions, got " +
          std::to_string(flags.position_interval));
    }
    spec.set_position_interval(flags.position_interval);
  }
  Connection connection(global);
  v1::AlignmentGroup group;
  error = connection.Call(&v1::AdminService::Stub::PutAlignmentGroup, spec, &group);
  if (!error.empty()) return CommandResult::Failed(error);
  return PrintGroup(global, group);
}

CommandResult RunGet(const GlobalOptions& global, const GroupFlags& flags) {
  v1::AlignmentGroupRef ref;
  ref.set_name(flags.name);
  Connection connection(global);
  v1::AlignmentGroup group;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::GetAlignmentGroup, ref, &group);
  if (!error.empty()) return CommandResult::Failed(error);
  return PrintGroup(global, group);
}

CommandResult RunList(const GlobalOptions& global) {
  Connection connection(global);
  v1::ListAlignmentGroupsResponse response;
  const std::string error = connection.Call(&v1::AdminService::Stub::ListAlignmentGroups,
                                            v1::ListAlignmentGroupsRequest(), &response);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    Json array = Json::array();
    for (const v1::AlignmentGroup& g : response.groups()) array.push_back(AlignmentGroupJson(g));
    std::fputs(Dump(array).c_str(), stdout);
  } else {
    std::fputs(AlignmentGroupsView(response).c_str(), stdout);
  }
  return CommandResult::Ok();
}

CommandResult RunDelete(const GlobalOptions& global, const GroupFlags& flags) {
  v1::AlignmentGroupRef ref;
  ref.set_name(flags.name);
  Connection connection(global);
  v1::DeleteAlignmentGroupResponse response;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::DeleteAlignmentGroup, ref, &response);
  if (!error.empty()) return CommandResult::Failed(error);
  std::fputs(global.json() ? Dump(Json{{"name", flags.name}, {"deleted", true}}).c_str()
                           : ("Deleted alignment group " + flags.name + ".\n").c_str(),
             stdout);
  return CommandResult::Ok();
}

}  // namespace

void AddGroupCommands(CLI::App& app, CommandContext& context) {
  CLI::App* group = app.add_subcommand(
      "group", "Alignment groups: pipelines that checkpoint together, at one id and position");
  group->fallthrough();
  group->require_subcommand(1);
  group->footer(R"(Examples:
  ckptctl group put ledger --interval 5s --position-interval 1000
  ckptctl group list
  ckptctl group get ledger -o json
  ckptctl group delete ledger)");
  {
    auto flags = std::make_shared<GroupFlags>();
    CLI::App* cmd = group->add_subcommand(
        "put", "Create an alignment group, or change its policy (flags left out keep theirs)");
    cmd->fallthrough();
    cmd->footer(R"(While a pipeline is a member, the group's interval, timeout, min pause and
position interval replace its own. A new group takes the daemon's defaults for the flags left out
(position interval 0: time alone). A group declared in the config file is changed there.

Examples:
  ckptctl group put ledger
  ckptctl group put ledger --interval 10s --timeout 2m --position-interval 100)");
    cmd->add_option("name", flags->name, "Group name")->required();
    flags->interval_option =
        cmd->add_option("--interval", flags->interval, "Time between the group's rounds, e.g. 10s")
            ->type_name("DURATION");
    flags->timeout_option = cmd->add_option("--timeout", flags->timeout,
                                            "A round not acked by every member in this time "
                                            "expires, e.g. 10m")
                                ->type_name("DURATION");
    flags->min_pause_option =
        cmd->add_option("--min-pause", flags->min_pause,
                        "Least time from the end of one round to the next periodic one")
            ->type_name("DURATION");
    flags->position_interval_option =
        cmd->add_option("--position-interval", flags->position_interval,
                        "Positions every task of every member must pass between rounds "
                        "(heartbeat positions); 0: time alone")
            ->type_name("N");
    flags->commit_timeout_option =
        cmd->add_option("--commit-timeout", flags->commit_timeout,
                        "A commit phase for every member (replacing theirs): each round is "
                        "COMMITTING until every task of every member committed it, overdue "
                        "after this long, e.g. 30s; 0s: none")
            ->type_name("DURATION");
    flags->max_overhead_option =
        cmd->add_option("--max-overhead", flags->max_overhead,
                        "Adaptive interval: the share of time the group's rounds may take; the "
                        "interval stretches to their recent p95 duration / this; 0: off")
            ->type_name("FRACTION");
    flags->max_interval_option =
        cmd->add_option("--max-interval", flags->max_interval,
                        "Adaptive interval: the longest the interval stretches to, and the "
                        "interval while a member's worker reports backlog, e.g. 10m; 0: no cap")
            ->type_name("DURATION");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunPut(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<GroupFlags>();
    CLI::App* cmd = group->add_subcommand("get", "One group: its policy, members and last round");
    cmd->fallthrough();
    cmd->add_option("name", flags->name, "Group name")->required();
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunGet(context.global, *flags); };
    });
  }
  {
    CLI::App* cmd = group->add_subcommand("list", "Every alignment group, in name order");
    cmd->fallthrough();
    cmd->callback([&context] { context.action = [&context] { return RunList(context.global); }; });
  }
  {
    auto flags = std::make_shared<GroupFlags>();
    CLI::App* cmd = group->add_subcommand(
        "delete", "Remove a group (refused while a pipeline is in it or the config declares it)");
    cmd->fallthrough();
    cmd->add_option("name", flags->name, "Group name")->required();
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunDelete(context.global, *flags); };
    });
  }
}

}  // namespace ckpt::ctl
