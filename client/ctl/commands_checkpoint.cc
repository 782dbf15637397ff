// ckptctl checkpoint trigger | list | get | delete.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>

#include "ctl/command.h"
#include "ctl/connection.h"
#include "ctl/output_views.h"
#include "views/admin_json.h"

namespace ckpt::ctl {
namespace {

struct CheckpointFlags {
  std::string job, pipeline;
  int64_t limit = 0;          // 0: the daemon's default
  int64_t checkpoint_id = 0;  // get, delete
};

CommandResult RunTrigger(const GlobalOptions& global, const CheckpointFlags& flags) {
  v1::PipelineRef ref;
  ref.set_job_id(flags.job);
  ref.set_pipeline_id(flags.pipeline);
  Connection connection(global);
  v1::CheckpointInfo checkpoint;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::TriggerCheckpoint, ref, &checkpoint);
  if (!error.empty()) return CommandResult::Failed(error);
  const std::string text = global.json() ? Dump(CheckpointJson(checkpoint))
                                         : TriggeredLine(flags.job, flags.pipeline, checkpoint);
  std::fputs(text.c_str(), stdout);
  return CommandResult::Ok();
}

CommandResult RunList(const GlobalOptions& global, const CheckpointFlags& flags) {
  if (flags.limit < 0 || flags.limit > INT32_MAX) {
    return CommandResult::BadUsage("--limit: must be a non-negative number, got " +
                                   std::to_string(flags.limit));
  }
  Connection connection(global);
  v1::ListCheckpointsResponse response;
  const std::string error =
      connection.ListCheckpoints(flags.job, flags.pipeline, flags.limit, &response);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    Json array = Json::array();
    for (const v1::CheckpointInfo& c : response.checkpoints()) array.push_back(CheckpointJson(c));
    std::fputs(Dump(array).c_str(), stdout);
  } else {
    std::fputs(CheckpointsView(response.checkpoints(), NowMs()).c_str(), stdout);
  }
  return CommandResult::Ok();
}

// The pipeline and checkpoint of `get` and `delete`; a usage error when the id is not positive.
template <typename Request>
std::optional<CommandResult> CheckpointRequest(const CheckpointFlags& flags, Request* request) {
  if (flags.checkpoint_id <= 0) {
    return CommandResult::BadUsage("ID: must be a positive checkpoint id, got " +
                                   std::to_string(flags.checkpoint_id));
  }
  request->mutable_pipeline()->set_job_id(flags.job);
  request->mutable_pipeline()->set_pipeline_id(flags.pipeline);
  request->set_checkpoint_id(flags.checkpoint_id);
  return std::nullopt;
}

CommandResult RunGet(const GlobalOptions& global, const CheckpointFlags& flags) {
  v1::GetCheckpointRequest request;
  if (auto bad = CheckpointRequest(flags, &request)) return *bad;
  Connection connection(global);
  v1::CheckpointInfo checkpoint;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::GetCheckpoint, request, &checkpoint);
  if (!error.empty()) return CommandResult::Failed(error);
  const std::string text =
      global.json() ? Dump(CheckpointJson(checkpoint)) : CheckpointTasksView(checkpoint, NowMs());
  std::fputs(text.c_str(), stdout);
  return CommandResult::Ok();
}

CommandResult RunDelete(const GlobalOptions& global, const CheckpointFlags& flags) {
  v1::DeleteCheckpointRequest request;
  if (auto bad = CheckpointRequest(flags, &request)) return *bad;
  Connection connection(global);
  v1::DeleteCheckpointResponse response;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::DeleteCheckpoint, request, &response);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    Json deleted = DeletedJson(flags.job, flags.pipeline);
    deleted["checkpoint_id"] = flags.checkpoint_id;
    std::fputs(Dump(deleted).c_str(), stdout);
  } else {
    std::fprintf(stdout, "Deleted checkpoint %lld of %s/%s; its workers were told to release it.\n",
                 static_cast<long long>(flags.checkpoint_id), flags.job.c_str(),
                 flags.pipeline.c_str());
  }
  return CommandResult::Ok();
}

}  // namespace

void AddCheckpointCommands(CLI::App& app, CommandContext& context) {
  CLI::App* checkpoint = app.add_subcommand("checkpoint", "Trigger and inspect checkpoints");
  checkpoint->fallthrough();
  checkpoint->require_subcommand(1);
  checkpoint->footer(R"(Examples:
  ckptctl checkpoint trigger etl p0
  ckptctl checkpoint list etl p0 --limit 5
  ckptctl checkpoint get etl p0 42
  ckptctl checkpoint delete etl p0 42)");

  {
    auto flags = std::make_shared<CheckpointFlags>();
    CLI::App* cmd = checkpoint->add_subcommand(
        "trigger",
        "Start a checkpoint now (fails while one is pending or the pipeline is not "
        "RUNNING)");
    cmd->fallthrough();
    cmd->footer(R"(Examples:
  ckptctl checkpoint trigger etl p0
  ckptctl checkpoint trigger etl p0 -o json)");
    cmd->add_option("job", flags->job, "Job id")->required();
    cmd->add_option("pipeline", flags->pipeline, "Pipeline id")->required();
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunTrigger(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<CheckpointFlags>();
    CLI::App* cmd = checkpoint->add_subcommand(
        "list",
        "The pending checkpoint (with the tasks it waits for), then finished ones, newest first");
    cmd->fallthrough();
    cmd->footer(R"(Examples:
  ckptctl checkpoint list etl p0
  ckptctl checkpoint list etl p0 --limit 50 -o json)");
    cmd->add_option("job", flags->job, "Job id")->required();
    cmd->add_option("pipeline", flags->pipeline, "Pipeline id")->required();
    cmd->add_option("--limit", flags->limit, "At most this many (default: the daemon's, 20)")
        ->type_name("N");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunList(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<CheckpointFlags>();
    CLI::App* cmd = checkpoint->add_subcommand(
        "get",
        "One checkpoint with a row per task, slowest first: who acked it, how long after the "
        "trigger, the task's sync, async and alignment times, its state");
    cmd->fallthrough();
    cmd->footer(R"(The pending round, the newest failed one, or one of the history (checkpoint list
shows their ids). A pending round lists the tasks it waits for first, with the worker holding each.

Examples:
  ckptctl checkpoint get etl p0 42
  ckptctl checkpoint get etl p0 42 -o json)");
    cmd->add_option("job", flags->job, "Job id")->required();
    cmd->add_option("pipeline", flags->pipeline, "Pipeline id")->required();
    cmd->add_option("id", flags->checkpoint_id, "Checkpoint id")->required()->type_name("ID");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunGet(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<CheckpointFlags>();
    CLI::App* cmd = checkpoint->add_subcommand(
        "delete",
        "Remove a savepoint or a retained checkpoint from the history; its workers are told to "
        "release its state");
    cmd->fallthrough();
    cmd->footer(R"(Refused while the checkpoint is a restore point. Savepoints are never
released by retention: delete the ones no longer needed (limits.max_savepoints_per_pipeline caps
how many a pipeline holds).

Examples:
  ckptctl checkpoint delete etl p0 42
  ckptctl checkpoint delete etl p0 42 -o json)");
    cmd->add_option("job", flags->job, "Job id")->required();
    cmd->add_option("pipeline", flags->pipeline, "Pipeline id")->required();
    cmd->add_option("id", flags->checkpoint_id, "Checkpoint id")->required()->type_name("ID");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunDelete(context.global, *flags); };
    });
  }
}

}  // namespace ckpt::ctl
