#include "sim/sim_options.h"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/security_flags.h"
#include "common/server_list.h"

namespace ckpt::sim {
namespace {

constexpr char kProgram[] = "ckpt-worker-sim";

ParsedCommandLine Error(std::string message) {
  for (char& c : message) {
    if (c == '\n') c = ' ';
  }
  ParsedCommandLine result;
  result.exit_code = 2;
  result.message = std::string(kProgram) + ": " + message + "\n";
  return result;
}

// Parses a duration flag; false with *error set when it does not parse.
bool ParseDurationFlag(const std::string& flag, const std::string& text,
                       std::chrono::milliseconds* out, std::string* error) {
  std::string why;
  const std::optional<int64_t> ms = cli::ParseDurationMs(text, &why, kDurationOptions);
  if (!ms) {
    *error = flag + ": " + why;
    return false;
  }
  *out = std::chrono::milliseconds(*ms);
  return true;
}

}  // namespace

ParsedCommandLine ParseCommandLine(int argc, const char* const* argv) {
  SimOptions options;
  std::string interval_text, timeout_text, duration_text, connect_timeout_text, warmup_text;
  std::string backlog_after_text, backlog_for_text;
  std::string transport = "session";
  uint64_t seed = 0;

  CLI::App app{
      "Simulates workers of a ckptd daemon: serves pipelines p0..p<N-1> of a job, acks "
      "every checkpoint after a delay, and prints what it saw.",
      kProgram};
  app.add_option("--server", options.server,
                 "Daemon address HOST:PORT, or the daemons of an HA group as HOST:PORT,HOST:PORT "
                 "(the leader is followed)")
      ->capture_default_str();
  app.add_option("--job", options.job, "Job id")->required();
  app.add_option("--pipelines", options.pipelines, "Pipelines p0..p<N-1> to serve")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--tasks-per-pipeline", options.tasks_per_pipeline,
                 "Tasks 0..<M-1> per pipeline, all in one stream unless --streams-per-pipeline")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--streams-per-pipeline", options.streams_per_pipeline,
                 "Spread each pipeline's tasks over S streams, as S workers would (worker ids "
                 "<worker-id>-s<k>, runs of consecutive task ids); at most --tasks-per-pipeline. "
                 "Triggers, completes and aborts are then counted per stream")
      ->type_name("S")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI::Option* create = app.add_flag("--create", options.create,
                                     "Create the pipelines first (ALREADY_EXISTS is fine)");
  app.add_option("--interval", interval_text, "Checkpoint interval of created pipelines, e.g. 1s")
      ->needs(create);
  app.add_option("--timeout", timeout_text, "Checkpoint timeout of created pipelines, e.g. 10s")
      ->needs(create);
  app.add_option("--position-interval", options.position_interval,
                 "position_interval of created pipelines (see --positions)")
      ->needs(create)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--group-size", options.group_size,
                 "Pipeline p<i> is in alignment group <job>-g<i/K>: with --create the groups are "
                 "created (with --interval, --timeout, --position-interval) and the pipelines "
                 "join them; --json then reports trigger_skew_ms, the spread of each group "
                 "round's trigger arrival over the group's members [0: no groups]")
      ->type_name("K")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--positions", options.positions_rate,
                 "Give every task a position (block height, offset) advancing RATE per second, "
                 "from the restore point's; report it in heartbeats, snapshot when it reaches a "
                 "trigger's position (decline if already past it) [0: no positions]")
      ->type_name("RATE")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--ack-delay-ms", options.ack_delay_ms, "Delay between a trigger and the acks")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--commit-delay-ms", options.commit_delay_ms,
                 "For pipelines with a commit phase (commit_timeout_ms): send each task's "
                 "`committed` this long after its complete (or its welcome with commit_pending) "
                 "asked for it, as a sink whose commit takes that long would [absent: at once]")
      ->type_name("MS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--decline-rate", options.decline_rate,
                 "Fraction of triggers declined by one task, 0..1")
      ->capture_default_str();
  app.add_option("--backlog-after", backlog_after_text,
                 "Every pipeline reports a backlog (heartbeat.backlog: its tasks are catching up) "
                 "from this long after it starts, e.g. 10s; a pipeline with max_interval_ms then "
                 "checkpoints at that [absent: never]")
      ->type_name("DURATION");
  app.add_option("--backlog-for", backlog_for_text,
                 "With --backlog-after: report it for this long, then caught up, e.g. 10s [0: to "
                 "the end]")
      ->type_name("DURATION");
  app.add_option("--fail-restore", options.fail_restore,
                 "Fail the restore of this checkpoint id (every pipeline's streams): the restore "
                 "handler throws, the daemon marks it unrestorable and moves the pipeline to an "
                 "older checkpoint [0: never]")
      ->type_name("ID")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--duration", duration_text,
                 "Run this long, e.g. 30s (0 or absent: until SIGINT or SIGTERM)");
  app.add_option("--warmup", warmup_text,
                 "Leave rounds triggered in the first part of the run, e.g. 5s, out of the "
                 "latency summary (counts still cover the whole run) [0]");
  app.add_option("--connect-timeout", connect_timeout_text,
                 "Exit 1 if no pipeline connected by then (0: wait forever) [10s]");
  app.add_flag("--json", options.json, "Print the summary as one JSON object");
  app.add_flag("--progress", options.progress,
               "Progress line on stderr every 5 s (default: only when stderr is a terminal)");
  app.add_option("--threads", options.threads, "Worker runtime threads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--transport", transport,
                 "session: one Session call per connection, the pipelines' streams as its "
                 "channels, batched (Connect where the daemon has no Session); connect: a "
                 "Connect stream per pipeline [session]")
      ->check(CLI::IsMember({"session", "connect"}));
  app.add_option("--channels", options.channels, "gRPC channels (TCP connections) to the daemon")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--worker-id", options.worker_id, "Worker id [sim-<pid>]");
  app.add_option("--event-log", options.event_log,
                 "Append a line per trigger, complete, abort, restore point and release seen to "
                 "this file");
  app.add_option("--state-dir", options.state_dir,
                 "Write a small file per task per checkpoint under this directory, ack its path "
                 "as the state uri, delete it on release, and check on restore that each file "
                 "handed back exists (counted as restore_files_missing)");
  CLI::Option* seed_option = app.add_option("--seed", seed, "Seed of the decline choices");
  cli::AddSecurityFlags(&app, &options.security, /*env_prefix=*/"");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    ParsedCommandLine result;
    result.message = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    return Error(std::string(e.what()) + " (see --help)");
  }

  std::string error;
  if (!interval_text.empty()) {
    options.interval.emplace();
    if (!ParseDurationFlag("--interval", interval_text, &*options.interval, &error))
      return Error(error);
  }
  if (!timeout_text.empty()) {
    options.timeout.emplace();
    if (!ParseDurationFlag("--timeout", timeout_text, &*options.timeout, &error))
      return Error(error);
  }
  if (!duration_text.empty() &&
      !ParseDurationFlag("--duration", duration_text, &options.duration, &error)) {
    return Error(error);
  }
  options.connect_transport = transport == "connect";
  if (!backlog_after_text.empty()) {
    options.backlog_after.emplace();
    if (!ParseDurationFlag("--backlog-after", backlog_after_text, &*options.backlog_after,
                           &error)) {
      return Error(error);
    }
  }
  if (!backlog_for_text.empty()) {
    if (backlog_after_text.empty()) return Error("--backlog-for needs --backlog-after");
    if (!ParseDurationFlag("--backlog-for", backlog_for_text, &options.backlog_for, &error)) {
      return Error(error);
    }
  }
  if (!warmup_text.empty() &&
      !ParseDurationFlag("--warmup", warmup_text, &options.warmup, &error)) {
    return Error(error);
  }
  if (!connect_timeout_text.empty() && !ParseDurationFlag("--connect-timeout", connect_timeout_text,
                                                          &options.connect_timeout, &error)) {
    return Error(error);
  }
  std::optional<std::vector<std::string>> servers =
      cli::ParseServerList(options.server, "--server", &error);
  if (!servers) return Error(error);
  options.servers = std::move(*servers);
  if (options.job.empty()) return Error("--job must not be empty");
  if (!(options.positions_rate <= 1e12)) {
    return Error("--positions must be at most 1e12 per second, got " +
                 std::to_string(options.positions_rate));
  }
  if (!(options.decline_rate >= 0 && options.decline_rate <= 1)) {
    return Error("--decline-rate must be between 0 and 1, got " +
                 std::to_string(options.decline_rate));
  }
  if (options.streams_per_pipeline > options.tasks_per_pipeline) {
    return Error("--streams-per-pipeline (" + std::to_string(options.streams_per_pipeline) +
                 ") must not exceed --tasks-per-pipeline (" +
                 std::to_string(options.tasks_per_pipeline) +
                 "): a stream serves at least one task");
  }
  if (options.streams_per_pipeline > 1 &&
      (options.group_size > 0 || options.decline_rate > 0 || options.positions_rate > 0)) {
    // Each is a pipeline's, and every stream would act on it alone: a round declined with
    // probability 1-(1-r)^S, positions starting at each stream's own welcome, skews per stream.
    return Error(
        "--streams-per-pipeline does not go with --group-size, --decline-rate or --positions "
        "(they act per pipeline, and each stream would apply them on its own)");
  }
  if (options.worker_id.empty()) options.worker_id = "sim-" + std::to_string(::getpid());
  if (seed_option->count() > 0) options.seed = seed;

  ParsedCommandLine result;
  result.run = true;
  result.options = std::move(options);
  return result;
}

}  // namespace ckpt::sim
