#include "sim/simulation.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "sim/sim_pipeline.h"

namespace ckpt::sim {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

// How often the main thread looks at the run's state between signals.
constexpr milliseconds kPollEvery{100};

enum class WaitResult { kSignal, kTimeout };

WaitResult WaitForSignal(const sigset_t& signals, milliseconds timeout) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  ts.tv_nsec = static_cast<long>((timeout.count() % 1000) * 1'000'000);
  for (;;) {
    const int signal = sigtimedwait(&signals, nullptr, &ts);
    if (signal > 0) return WaitResult::kSignal;
    if (errno == EINTR) continue;  // another signal; the remaining time is close enough
    return WaitResult::kTimeout;
  }
}

// What to check when the daemon refused who we are; "" for other codes.
const char* CredentialsHint(sdk::StatusCode code) {
  switch (code) {
    case sdk::StatusCode::kUnauthenticated:
      return " (check --token-file, or --cert-file and --key-file)";
    case sdk::StatusCode::kPermissionDenied:
      return " (the principal's role or jobs do not cover this pipeline)";
    default: return "";
  }
}

// Why nothing connected, naming the address.
std::string ConnectFailure(const SimOptions& options, const SimCounters& counters,
                           const char* when) {
  std::string reason = "could not connect to " + options.server + " " + when;
  const std::optional<sdk::Disconnect> last = counters.last_disconnect();
  if (!last) return reason + ": no answer";
  reason += std::string(": ") + sdk::ToString(last->code);
  if (!last->message.empty()) reason += ": " + last->message;
  reason += CredentialsHint(last->code);
  if (last->code == sdk::StatusCode::kNotFound) {
    reason += " (pipeline " + options.job + "/" + counters.last_disconnect_pipeline() +
              " does not exist: create it first, e.g. with ckptctl pipeline create)";
  }
  return reason;
}

// Why the run ended early although pipelines had connected.
std::string StoppedReason(const SimOptions& options, const SimCounters& counters) {
  std::string reason = "every pipeline stopped";
  const std::optional<sdk::Disconnect> last = counters.last_disconnect();
  if (last) {
    reason += "; the last, " + options.job + "/" + counters.last_disconnect_pipeline() + ": " +
              sdk::ToString(last->code) + ": " + last->message + CredentialsHint(last->code);
  }
  return reason;
}

std::string ProgressLine(milliseconds elapsed, size_t connected, size_t pipelines,
                         const SimCounters& counters) {
  char line[256];
  std::snprintf(line, sizeof line,
                "ckpt-worker-sim: %llds connected %zu/%zu triggers %llu acks %llu completes %llu "
                "aborts %llu\n",
                static_cast<long long>(elapsed.count() / 1000), connected, pipelines,
                static_cast<unsigned long long>(counters.triggers.load()),
                static_cast<unsigned long long>(counters.acks.load()),
                static_cast<unsigned long long>(counters.completes.load()),
                static_cast<unsigned long long>(counters.aborts.load()));
  return line;
}

sdk::WorkerRuntimeOptions RuntimeOptions(const SimOptions& options) {
  sdk::WorkerRuntimeOptions runtime;
  runtime.server_address = options.server;
  runtime.threads = options.threads;
  runtime.channels = options.channels;
  runtime.transport =
      options.connect_transport ? sdk::WorkerTransport::kConnect : sdk::WorkerTransport::kSession;
  runtime.ca_file = options.security.ca_file;
  runtime.cert_file = options.security.cert_file;
  runtime.key_file = options.security.key_file;
  runtime.token_file = options.security.token_file;
  runtime.tls_server_name = options.security.tls_server_name;
  return runtime;
}

}  // namespace

SimOutcome Simulation::Run(const sigset_t& signals) {
  SimCounters counters;
  const uint64_t seed = options_.seed ? *options_.seed : std::random_device{}();
  // Declared before the runtime: handlers refer to the pipelines, which must outlive it.
  std::optional<StateFiles> state_files;  // before the pipelines, which refer to it
  if (!options_.state_dir.empty()) state_files.emplace(options_.state_dir);
  std::vector<std::unique_ptr<SimPipeline>> pipelines;
  const Clock::time_point sample_from = Clock::now() + options_.warmup;
  const int streams = options_.streams_per_pipeline;
  for (int i = 0; i < options_.pipelines; ++i) {
    for (int stream = 0; stream < streams; ++stream) {
      SimPipelineConfig config;
      config.worker_id =
          streams > 1 ? options_.worker_id + "-s" + std::to_string(stream) : options_.worker_id;
      config.job_id = options_.job;
      config.pipeline_id = "p" + std::to_string(i);
      // Stream k serves tasks [k*M/S, (k+1)*M/S): every task once, runs differing by at most 1.
      const int64_t tasks = options_.tasks_per_pipeline;
      config.first_task = static_cast<int>(stream * tasks / streams);
      config.tasks = static_cast<int>((stream + 1) * tasks / streams) - config.first_task;
      config.ack_delay = milliseconds(options_.ack_delay_ms);
      if (options_.commit_delay_ms >= 0)
        config.commit_delay = milliseconds(options_.commit_delay_ms);
      config.decline_rate = options_.decline_rate;
      config.positions_rate = options_.positions_rate;
      config.backlog_after = options_.backlog_after;
      config.backlog_for = options_.backlog_for;
      config.fail_restore = options_.fail_restore;
      if (options_.group_size > 0) {
        config.group = i / options_.group_size;
        // The last group may be smaller.
        config.group_size =
            std::min(options_.group_size, options_.pipelines - config.group * options_.group_size);
      }
      const uint64_t index = static_cast<uint64_t>(i) * streams + stream;
      config.seed = seed + index * 0x9E3779B97F4A7C15ULL;
      config.sample_from = sample_from;
      config.state_files = state_files ? &*state_files : nullptr;
      pipelines.push_back(std::make_unique<SimPipeline>(std::move(config), counters, event_log_));
    }
  }

  SimOutcome outcome;
  const Clock::time_point started = Clock::now();
  Clock::time_point ended;
  uint64_t aborts_in_run = 0;
  bool any_connected = false;  // a stream was welcomed (its SDK counters)
  {
    sdk::WorkerRuntime runtime(RuntimeOptions(options_));
    for (auto& pipeline : pipelines) pipeline->Start(runtime);

    Clock::time_point next_progress = started + kProgressEvery;
    for (;;) {
      if (WaitForSignal(signals, kPollEvery) == WaitResult::kSignal) break;
      const Clock::time_point now = Clock::now();
      if (options_.duration.count() > 0 && now - started >= options_.duration) break;
      if (counters.welcomes.load() == 0 && options_.connect_timeout.count() > 0 &&
          now - started >= options_.connect_timeout) {
        outcome.exit_code = 1;
        outcome.reason = ConnectFailure(options_, counters, "within the connect timeout");
        break;
      }
      if (counters.stopped_pipelines.load() >= pipelines.size()) {
        outcome.exit_code = 1;
        outcome.reason = counters.welcomes.load() == 0
                             ? ConnectFailure(options_, counters, "(every pipeline refused)")
                             : StoppedReason(options_, counters);
        break;
      }
      if (progress_ && now >= next_progress) {
        size_t connected = 0;
        for (auto& pipeline : pipelines) connected += pipeline->worker().IsConnected() ? 1 : 0;
        std::fputs(ProgressLine(duration_cast<milliseconds>(now - started), connected,
                                pipelines.size(), counters)
                       .c_str(),
                   stderr);
        next_progress += kProgressEvery;
      }
    }
    ended = Clock::now();
    aborts_in_run = counters.aborts.load();
    // A welcome the SDK held back (restore_withheld: on_state, no on_welcome) connected too.
    any_connected = std::any_of(pipelines.begin(), pipelines.end(),
                                [](const auto& p) { return p->worker().counters().connects > 0; });

    // Deregister cleanly, all streams at once, within one bounded wait.
    for (auto& pipeline : pipelines) pipeline->worker().Goodbye(kGoodbyeWait);
    const Clock::time_point deadline = Clock::now() + kGoodbyeWait;
    for (auto& pipeline : pipelines) pipeline->worker().WaitUntilStopped(deadline);
  }  // the runtime's destructor cancels what is left; no handler runs after it

  if (outcome.exit_code == 0 && counters.welcomes.load() == 0 && !any_connected) {
    outcome.exit_code = 1;
    outcome.reason = ConnectFailure(options_, counters, "during the run");
  }

  SimSummary& summary = outcome.summary;
  summary.server = options_.server;
  summary.job = options_.job;
  summary.pipelines = options_.pipelines;
  summary.tasks = options_.pipelines * options_.tasks_per_pipeline;
  summary.triggers = counters.triggers.load();
  summary.acks = counters.acks.load();
  summary.declines = counters.declines.load();
  summary.completes = counters.completes.load();
  summary.commits = counters.commits.load();
  summary.all_committed = counters.all_committed.load();
  summary.aborts = counters.aborts.load();
  summary.aborts_at_goodbye = summary.aborts - aborts_in_run;
  summary.restores = counters.restores.load();
  summary.restores_failed = counters.restores_failed.load();
  summary.releases = counters.releases.load();
  summary.restore_files_missing = counters.restore_files_missing.load();
  summary.aligned_rounds = counters.aligned_rounds();
  summary.position_spread_max = counters.position_spread_max();
  summary.positions_passed = counters.positions_passed.load();
  summary.duration_ms = duration_cast<milliseconds>(ended - started).count();
  std::vector<int64_t> checkpoint_micros, gap_micros;
  for (auto& pipeline : pipelines) {
    const sdk::PipelineWorkerCounters worker = pipeline->worker().counters();
    summary.connects += worker.connects;
    summary.reconnects += worker.reconnects;
    summary.disconnects += worker.disconnects;
    summary.dropped_sends += worker.dropped_sends;
    summary.stale_messages += worker.stale_messages;
    summary.leader_redirects += worker.leader_redirects;
    checkpoint_micros.insert(checkpoint_micros.end(), pipeline->checkpoint_micros().begin(),
                             pipeline->checkpoint_micros().end());
    gap_micros.insert(gap_micros.end(), pipeline->trigger_gap_micros().begin(),
                      pipeline->trigger_gap_micros().end());
  }
  summary.checkpoint = Summarize(std::move(checkpoint_micros));
  summary.trigger_gap = Summarize(std::move(gap_micros));
  if (options_.group_size > 0) summary.group_trigger_skew = Summarize(counters.group_skew_micros());
  return outcome;
}

}  // namespace ckpt::sim
