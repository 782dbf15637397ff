// ckptctl pipeline create | update | list | get | delete | pause | resume | restore.

#include <cstdio>
#include <memory>

#include "ctl/checkpoint_ref.h"
#include "ctl/command.h"
#include "ctl/connection.h"
#include "ctl/output_views.h"
#include "ctl/spec_flags.h"
#include "views/admin_json.h"
#include "views/enum_names.h"

namespace ckpt::ctl {
namespace {

// CLI11 writes into these; Collect() keeps only the flags given.
struct SpecFlagBindings {
  std::string tasks, interval, timeout, min_pause, commit_timeout, max_interval;
  int64_t parallelism = 0, tolerable_failures = 0, retained = 0, position_interval = 0;
  double max_overhead = 0;
  CLI::Option *tasks_option = nullptr, *parallelism_option = nullptr, *interval_option = nullptr,
              *timeout_option = nullptr, *min_pause_option = nullptr,
              *tolerable_failures_option = nullptr, *retained_option = nullptr,
              *position_interval_option = nullptr, *commit_timeout_option = nullptr,
              *max_overhead_option = nullptr, *max_interval_option = nullptr;

  SpecFlags Collect() const {
    SpecFlags flags;
    if (tasks_option->count() > 0) flags.tasks = tasks;
    if (parallelism_option->count() > 0) flags.parallelism = parallelism;
    if (interval_option->count() > 0) flags.interval = interval;
    if (timeout_option->count() > 0) flags.timeout = timeout;
    if (min_pause_option->count() > 0) flags.min_pause = min_pause;
    if (tolerable_failures_option->count() > 0) flags.tolerable_failures = tolerable_failures;
    if (retained_option->count() > 0) flags.retained = retained;
    if (position_interval_option->count() > 0) flags.position_interval = position_interval;
    if (commit_timeout_option->count() > 0) flags.commit_timeout = commit_timeout;
    if (max_overhead_option->count() > 0) flags.max_overhead = max_overhead;
    if (max_interval_option->count() > 0) flags.max_interval = max_interval;
    return flags;
  }
};

struct PipelineFlags {
  std::string job, pipeline;
  SpecFlagBindings spec;
  std::string restore_from;        // create: JOB/PIPELINE[@ID]
  std::string group;               // create: its alignment group
  int64_t restore_checkpoint = 0;  // restore --checkpoint: one of its own
};

struct ListFlags {
  std::string job;
};

void AddSpecOptions(CLI::App* cmd, SpecFlagBindings* b, const char* unset_means) {
  const std::string unset = std::string(" (default: ") + unset_means + ")";
  b->tasks_option =
      cmd->add_option("--tasks", b->tasks, "Task ids, comma-separated: a,b,c")->type_name("IDS");
  b->parallelism_option =
      cmd->add_option("--parallelism", b->parallelism, "N tasks named 0 .. N-1")->type_name("N");
  b->interval_option = cmd->add_option("--interval", b->interval,
                                       "Time between periodic checkpoints, e.g. 10s" + unset)
                           ->type_name("DURATION");
  b->timeout_option =
      cmd->add_option("--timeout", b->timeout,
                      "A checkpoint not fully acked in this time expires, e.g. 10m" + unset)
          ->type_name("DURATION");
  b->min_pause_option =
      cmd->add_option("--min-pause", b->min_pause,
                      "Least time from the end of one round to the next periodic trigger" + unset)
          ->type_name("DURATION");
  b->tolerable_failures_option =
      cmd->add_option("--tolerable-failures", b->tolerable_failures,
                      "Consecutive failures tolerated before the pipeline is FAILED" + unset)
          ->type_name("N");
  b->retained_option =
      cmd->add_option("--retained", b->retained, "Completed checkpoints kept" + unset)
          ->type_name("N");
  b->position_interval_option =
      cmd->add_option("--position-interval", b->position_interval,
                      "Positions (block height, offset) every task must pass between periodic "
                      "checkpoints, reported in the workers' heartbeats; 0: time alone" +
                          unset)
          ->type_name("N");
  b->commit_timeout_option =
      cmd->add_option("--commit-timeout", b->commit_timeout,
                      "A commit phase: each checkpoint is COMMITTING until every task committed "
                      "its side effects, and overdue after this long, e.g. 30s; 0: none" +
                          unset)
          ->type_name("DURATION");
  b->max_overhead_option =
      cmd->add_option("--max-overhead", b->max_overhead,
                      "Adaptive interval: the share of time checkpoints may take; the interval "
                      "stretches to the recent p95 duration / this (e.g. 0.1); 0: off" +
                          unset)
          ->type_name("FRACTION");
  b->max_interval_option =
      cmd->add_option("--max-interval", b->max_interval,
                      "Adaptive interval: the longest the interval stretches to, and the interval "
                      "while a worker reports backlog, e.g. 10m; 0: no cap" +
                          unset)
          ->type_name("DURATION");
}

void AddRefPositionals(CLI::App* cmd, std::string* job, std::string* pipeline) {
  cmd->add_option("job", *job, "Job id")->required();
  cmd->add_option("pipeline", *pipeline, "Pipeline id")->required();
}

v1::PipelineRef Ref(const std::string& job, const std::string& pipeline) {
  v1::PipelineRef ref;
  ref.set_job_id(job);
  ref.set_pipeline_id(pipeline);
  return ref;
}

// A pipeline the daemon returned: the whole object as JSON, or a headline and the details.
void PrintPipeline(const GlobalOptions& global, const std::string& headline,
                   const v1::Pipeline& pipeline) {
  if (global.json()) {
    std::fputs(Dump(PipelineJson(pipeline)).c_str(), stdout);
    return;
  }
  std::string text = headline.empty() ? "" : headline + "\n";
  text += PipelineDetail(pipeline, NowMs());
  std::fputs(text.c_str(), stdout);
}

CommandResult RunCreate(const GlobalOptions& global, const PipelineFlags& flags) {
  v1::PipelineSpec spec;
  spec.set_job_id(flags.job);
  spec.set_pipeline_id(flags.pipeline);
  std::string error;
  if (!ApplySpecFlags(flags.spec.Collect(), TasksRule::kRequired, &spec, &error)) {
    return CommandResult::BadUsage(error);
  }
  if (!flags.restore_from.empty()) {
    auto ref = ParseCheckpointRef(flags.restore_from, &error);
    if (!ref) return CommandResult::BadUsage("--restore-from: " + error);
    *spec.mutable_restore_from() = std::move(*ref);
  }
  spec.set_alignment_group(flags.group);
  Connection connection(global);
  v1::Pipeline pipeline;
  error = connection.Call(&v1::AdminService::Stub::CreatePipeline, spec, &pipeline);
  if (!error.empty()) return CommandResult::Failed(error);
  PrintPipeline(global, "Created pipeline " + flags.job + "/" + flags.pipeline + ".", pipeline);
  return CommandResult::Ok();
}

CommandResult RunUpdate(const GlobalOptions& global, const PipelineFlags& flags) {
  const SpecFlags given = flags.spec.Collect();
  if (given.empty()) {
    return CommandResult::BadUsage(
        "nothing to update: give at least one of --tasks, --parallelism, --interval, --timeout, "
        "--min-pause, --tolerable-failures, --retained, --position-interval, --commit-timeout");
  }
  v1::PipelineSpec spec;
  spec.set_job_id(flags.job);
  spec.set_pipeline_id(flags.pipeline);
  std::string error;
  if (!ApplySpecFlags(given, TasksRule::kOptional, &spec, &error)) {
    return CommandResult::BadUsage(error);
  }
  Connection connection(global);
  v1::Pipeline pipeline;
  error = connection.Call(&v1::AdminService::Stub::UpdatePipeline, spec, &pipeline);
  if (!error.empty()) return CommandResult::Failed(error);
  PrintPipeline(global, "Updated pipeline " + flags.job + "/" + flags.pipeline + ".", pipeline);
  return CommandResult::Ok();
}

CommandResult RunList(const GlobalOptions& global, const ListFlags& flags) {
  Connection connection(global);
  v1::ListPipelinesResponse response;
  std::string error = connection.ListAllPipelines(flags.job, &response);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    // JSON has every key: fetch the task ids a listing left out (pipelines with many tasks).
    for (v1::Pipeline& p : *response.mutable_pipelines()) {
      if (!p.task_ids_omitted()) continue;
      v1::PipelineRef ref;
      ref.set_job_id(p.spec().job_id());
      ref.set_pipeline_id(p.spec().pipeline_id());
      error = connection.Call(&v1::AdminService::Stub::GetPipeline, ref, &p);
      if (!error.empty()) return CommandResult::Failed(error);
    }
  }
  SortPipelines(response.mutable_pipelines());
  if (global.json()) {
    Json array = Json::array();
    for (const v1::Pipeline& p : response.pipelines()) array.push_back(PipelineJson(p));
    std::fputs(Dump(array).c_str(), stdout);
  } else {
    std::fputs(PipelinesTable(response.pipelines(), NowMs()).c_str(), stdout);
  }
  return CommandResult::Ok();
}

// get, pause, resume: a PipelineRef in, a Pipeline out.
CommandResult RunRefCall(const GlobalOptions& global, const PipelineFlags& flags,
                         grpc::Status (v1::AdminService::Stub::*method)(grpc::ClientContext*,
                                                                        const v1::PipelineRef&,
                                                                        v1::Pipeline*),
                         const char* verb) {
  Connection connection(global);
  v1::Pipeline pipeline;
  const std::string error = connection.Call(method, Ref(flags.job, flags.pipeline), &pipeline);
  if (!error.empty()) return CommandResult::Failed(error);
  if (verb == nullptr || global.json()) {
    PrintPipeline(global, "", pipeline);
  } else {
    std::fprintf(stdout, "%s pipeline %s/%s: now %s.\n", verb, flags.job.c_str(),
                 flags.pipeline.c_str(), ShortName(pipeline.state()).c_str());
  }
  return CommandResult::Ok();
}

CommandResult RunWhy(const GlobalOptions& global, const PipelineFlags& flags) {
  Connection connection(global);
  v1::PipelineExplanation explanation;
  const std::string error = connection.Call(&v1::AdminService::Stub::ExplainPipeline,
                                            Ref(flags.job, flags.pipeline), &explanation);
  if (!error.empty()) return CommandResult::Failed(error);
  const std::string text =
      global.json() ? Dump(ExplanationJson(explanation)) : ExplanationView(explanation, NowMs());
  std::fputs(text.c_str(), stdout);
  return CommandResult::Ok();
}

CommandResult RunRestore(const GlobalOptions& global, const PipelineFlags& flags) {
  v1::RestorePipelineRequest request;
  *request.mutable_pipeline() = Ref(flags.job, flags.pipeline);
  if (flags.restore_from.empty() == (flags.restore_checkpoint == 0)) {
    return CommandResult::BadUsage(
        "give one of --from JOB/PIPELINE[@ID] and --checkpoint ID (one of its own)");
  }
  if (!flags.restore_from.empty()) {
    std::string error;
    auto ref = ParseCheckpointRef(flags.restore_from, &error);
    if (!ref) return CommandResult::BadUsage("--from: " + error);
    *request.mutable_from() = std::move(*ref);
  } else {
    if (flags.restore_checkpoint < 0)
      return CommandResult::BadUsage("--checkpoint: must be positive");
    request.mutable_from()->set_job_id(flags.job);
    request.mutable_from()->set_pipeline_id(flags.pipeline);
    request.mutable_from()->set_checkpoint_id(flags.restore_checkpoint);
  }
  Connection connection(global);
  v1::Pipeline pipeline;
  const std::string error =
      connection.Call(&v1::AdminService::Stub::RestorePipeline, request, &pipeline);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    PrintPipeline(global, "", pipeline);
  } else {
    std::fprintf(
        stdout, "Restored pipeline %s/%s to %s/%s@%lld: now %s; its workers reconnect to it%s.\n",
        flags.job.c_str(), flags.pipeline.c_str(), pipeline.restore().source_job_id().c_str(),
        pipeline.restore().source_pipeline_id().c_str(),
        static_cast<long long>(pipeline.restore().checkpoint_id()),
        ShortName(pipeline.state()).c_str(),
        pipeline.state() == v1::PIPELINE_STATE_PAUSED
            ? " (ckptctl pipeline resume starts checkpoints again)"
            : "");
  }
  return CommandResult::Ok();
}

CommandResult RunDelete(const GlobalOptions& global, const PipelineFlags& flags) {
  Connection connection(global);
  v1::DeletePipelineResponse response;
  const std::string error = connection.Call(&v1::AdminService::Stub::DeletePipeline,
                                            Ref(flags.job, flags.pipeline), &response);
  if (!error.empty()) return CommandResult::Failed(error);
  if (global.json()) {
    std::fputs(Dump(DeletedJson(flags.job, flags.pipeline)).c_str(), stdout);
  } else {
    std::fprintf(stdout, "Deleted pipeline %s/%s.\n", flags.job.c_str(), flags.pipeline.c_str());
  }
  return CommandResult::Ok();
}

// A subcommand of `pipeline` whose flags live as long as the app (held by its callback).
CLI::App* AddSub(CLI::App* parent, const char* name, const char* description,
                 const char* examples) {
  CLI::App* cmd = parent->add_subcommand(name, description);
  cmd->fallthrough();
  cmd->footer(std::string("Examples:\n") + examples);
  return cmd;
}

}  // namespace

void AddPipelineCommands(CLI::App& app, CommandContext& context) {
  CLI::App* pipeline =
      app.add_subcommand("pipeline", "Create, change, inspect and delete pipelines");
  pipeline->fallthrough();
  pipeline->require_subcommand(1);
  pipeline->footer(R"(Examples:
  ckptctl pipeline create --job etl --pipeline p0 --tasks src,map,sink --interval 30s
  ckptctl pipeline list --job etl
  ckptctl pipeline pause etl p0)");

  {
    auto flags = std::make_shared<PipelineFlags>();
    CLI::App* cmd = AddSub(
        pipeline, "create", "Create a pipeline; flags left out take the daemon's defaults",
        "  ckptctl pipeline create --job etl --pipeline p0 --parallelism 4\n"
        "  ckptctl pipeline create --job etl --pipeline p1 --tasks src,map,sink --interval 30s "
        "--timeout 5m\n"
        "  ckptctl pipeline create --job etl --pipeline p2 --parallelism 2 --tolerable-failures 3 "
        "-o json\n"
        "  ckptctl group put ledger --interval 5s && ckptctl pipeline create --job chain "
        "--pipeline store1 --parallelism 2 --group ledger");
    cmd->add_option("--job", flags->job, "Job id")->required();
    cmd->add_option("--pipeline", flags->pipeline, "Pipeline id")->required();
    AddSpecOptions(cmd, &flags->spec, "the daemon's defaults");
    cmd->add_option("--restore-from", flags->restore_from,
                    "Its workers restore from this checkpoint or savepoint of another pipeline "
                    "(a new job version from the old one's savepoint) until its first "
                    "checkpoint completes; no @ID: that pipeline's newest")
        ->type_name("JOB/PIPELINE[@ID]");
    cmd->add_option("--group", flags->group,
                    "Checkpoint with this alignment group (ckptctl group put): one id for every "
                    "member per round, all complete or none; the group's interval, timeout, min "
                    "pause and position interval replace the pipeline's own")
        ->type_name("NAME");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunCreate(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<PipelineFlags>();
    CLI::App* cmd = AddSub(
        pipeline, "restore",
        "Set where a pipeline's workers restore from (a rollback, or another pipeline's "
        "savepoint) until it completes a newer checkpoint",
        "  ckptctl pipeline pause etl p0 && ckptctl pipeline restore etl p0 --checkpoint 42\n"
        "  ckptctl pipeline restore etl p0 --from etl-v1/p0@17\n"
        "  ckptctl pipeline resume etl p0\n\n"
        "Allowed while no task is registered, or when the pipeline is PAUSED, STOPPED or FAILED\n"
        "with nothing pending. Its streams are ended so that workers come back to the new\n"
        "restore point; FAILED and STOPPED become PAUSED (resume to go on).");
    AddRefPositionals(cmd, &flags->job, &flags->pipeline);
    cmd->add_option("--from", flags->restore_from,
                    "A checkpoint or savepoint of any pipeline; no @ID: its newest")
        ->type_name("JOB/PIPELINE[@ID]");
    cmd->add_option("--checkpoint", flags->restore_checkpoint,
                    "One of this pipeline's own checkpoints or savepoints")
        ->type_name("ID");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunRestore(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<PipelineFlags>();
    CLI::App* cmd = AddSub(pipeline, "update", "Change a pipeline; flags left out keep their value",
                           "  ckptctl pipeline update etl p0 --interval 1m\n"
                           "  ckptctl pipeline update etl p0 --parallelism 8 --timeout 20m");
    AddRefPositionals(cmd, &flags->job, &flags->pipeline);
    AddSpecOptions(cmd, &flags->spec, "unchanged");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunUpdate(context.global, *flags); };
    });
  }
  {
    auto flags = std::make_shared<ListFlags>();
    CLI::App* cmd = AddSub(pipeline, "list", "List pipelines, of every job or of one",
                           "  ckptctl pipeline list\n"
                           "  ckptctl pipeline list --job etl -o json");
    cmd->add_option("--job", flags->job, "Only this job's pipelines");
    cmd->callback([&context, flags] {
      context.action = [&context, flags] { return RunList(context.global, *flags); };
    });
  }
  struct RefCommand {
    const char* name;
    const char* description;
    const char* examples;
  };
  const RefCommand ref_commands[] = {
      {"get", "Show one pipeline's status",
       "  ckptctl pipeline get etl p0\n  ckptctl pipeline get etl p0 -o json"},
      {"delete", "Delete a pipeline", "  ckptctl pipeline delete etl p0"},
      {"pause", "Stop periodic checkpoints (a pending one still finishes)",
       "  ckptctl pipeline pause etl p0"},
      {"resume", "Resume periodic checkpoints; also clears FAILED and STOPPED",
       "  ckptctl pipeline resume etl p0"},
      {"why",
       "Why the pipeline is not checkpointing now: one sentence (which task of which worker "
       "holds the pending round, how long against its timeout and recent rounds; or PAUSED, "
       "FAILED, tasks missing...), then the fields",
       "  ckptctl pipeline why etl p0\n  ckptctl pipeline why etl p0 -o json"},
  };
  for (const RefCommand& ref : ref_commands) {
    auto flags = std::make_shared<PipelineFlags>();
    CLI::App* cmd = AddSub(pipeline, ref.name, ref.description, ref.examples);
    AddRefPositionals(cmd, &flags->job, &flags->pipeline);
    const std::string name = ref.name;
    cmd->callback([&context, flags, name] {
      context.action = [&context, flags, name] {
        const GlobalOptions& g = context.global;
        if (name == "get")
          return RunRefCall(g, *flags, &v1::AdminService::Stub::GetPipeline, nullptr);
        if (name == "pause") {
          return RunRefCall(g, *flags, &v1::AdminService::Stub::PausePipeline, "Paused");
        }
        if (name == "resume") {
          return RunRefCall(g, *flags, &v1::AdminService::Stub::ResumePipeline, "Resumed");
        }
        if (name == "why") return RunWhy(g, *flags);
        return RunDelete(g, *flags);
      };
    });
  }
}

}  // namespace ckpt::ctl
