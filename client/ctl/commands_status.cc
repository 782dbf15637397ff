// ckptctl status: daemon health, then the pipelines.

#include <algorithm>
#include <cstdio>
#include <memory>

#include "ctl/command.h"
#include "ctl/connection.h"
#include "ctl/output_views.h"
#include "views/admin_json.h"

namespace ckpt::ctl {
namespace {

CommandResult RunStatus(const GlobalOptions& global) {
  // The daemon asked is the one reported, leader or not: only an unreachable one is skipped.
  Connection connection(global, Connection::Target::kFirstAnswering);
  v1::DaemonStatus status;
  std::string error = connection.Call(&v1::AdminService::Stub::GetDaemonStatus,
                                      v1::GetDaemonStatusRequest(), &status);
  if (!error.empty()) return CommandResult::Failed(error);
  const std::string asked = connection.address();

  // A standby serves no pipelines: it says who does instead.
  if (status.role() == v1::DAEMON_ROLE_STANDBY) {
    if (global.json()) {
      std::fputs(Dump({{"daemon", DaemonStatusJson(status)}}).c_str(), stdout);
    } else {
      std::fputs((DaemonSummary(status, asked) + "\n" + StandbyNote(status)).c_str(), stdout);
    }
    return CommandResult::Ok();
  }

  v1::ListPipelinesResponse list;
  error = connection.ListAllPipelines("", &list);
  if (!error.empty()) return CommandResult::Failed(error);

  SortPipelines(list.mutable_pipelines());
  if (global.json()) {
    Json pipelines = Json::array();
    for (const v1::Pipeline& p : list.pipelines()) pipelines.push_back(PipelineJson(p));
    std::fputs(
        Dump({{"daemon", DaemonStatusJson(status)}, {"pipelines", std::move(pipelines)}}).c_str(),
        stdout);
  } else {
    std::fputs(
        (DaemonSummary(status, asked) + "\n" + PipelinesTable(list.pipelines(), NowMs())).c_str(),
        stdout);
  }
  return CommandResult::Ok();
}

}  // namespace

void AddStatusCommand(CLI::App& app, CommandContext& context) {
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Daemon health and a table of pipelines; of the first daemon of --server that answers, "
      "leader or standby (a standby names the leader instead of listing pipelines)");
  cmd->fallthrough();
  cmd->footer(R"(Examples:
  ckptctl status
  ckptctl status -o json
  ckptctl status --server 10.0.0.5:7070)");
  cmd->callback([&context] { context.action = [&context] { return RunStatus(context.global); }; });
}

}  // namespace ckpt::ctl
