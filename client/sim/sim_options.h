#pragma once
// ckpt-worker-sim's command line.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/security_options.h"

namespace ckpt::sim {

// How ckpt-worker-sim parses its duration flags with cli::ParseDurationMs: "0" alone is accepted
// (zero needs no unit); anything over ten years is rejected.
inline constexpr cli::DurationOptions kDurationOptions{
    .allow_bare_zero = true, .max_ms = 10LL * 365 * 24 * 3600 * 1000, .max_text = "ten years"};

struct SimOptions {
  // One daemon, or the daemons of an HA group comma-separated (the leader is followed).
  std::string server = "127.0.0.1:7070";
  std::vector<std::string> servers;  // `server` parsed (common/server_list.h)
  // --ca-file, --cert-file, --key-file, --token-file, --tls-server-name: for the workers' streams
  // and --create's calls alike. Checked by main, not by ParseCommandLine (which reads no file).
  cli::SecurityOptions security;
  std::string job;             // required
  int pipelines = 1;           // p0 .. p<N-1>
  int tasks_per_pipeline = 1;  // tasks "0" .. "<M-1>" of each pipeline
  // Streams (workers) each pipeline's tasks are spread over, in contiguous runs of task ids.
  int streams_per_pipeline = 1;
  bool create = false;  // create the pipelines first (AdminService.CreatePipeline)
  std::optional<std::chrono::milliseconds> interval;  // with --create
  std::optional<std::chrono::milliseconds> timeout;   // with --create
  std::optional<int64_t> position_interval;           // with --create
  // --group-size K: pipeline p<i> is a member of alignment group <job>-g<i/K> (created with
  // --create); the summary then has the trigger skew within each group. 0: no groups.
  int group_size = 0;
  // --positions RATE: each task's position advances RATE per second (0: no positions).
  double positions_rate = 0;
  int64_t ack_delay_ms = 0;  // delay between a trigger and the acks
  // A commit phase: each task commits this long after the commit was asked (-1: at once, as the
  // SDK's auto_commit does).
  int64_t commit_delay_ms = -1;
  double decline_rate = 0;                // fraction of triggers declined (by one task)
  std::chrono::milliseconds duration{0};  // 0: until SIGINT or SIGTERM
  // Latency samples (checkpoint durations, trigger gaps) of rounds triggered before this much of
  // the run has passed are left out of the summary: the first rounds of many pipelines that
  // connect at once are a burst, not the steady state a benchmark measures. 0: keep every sample.
  std::chrono::milliseconds warmup{0};
  // --backlog-after, --backlog-for: every pipeline reports a backlog (heartbeat.backlog) from this
  // long after its start, for this long (0: until the end); nullopt: never.
  std::optional<std::chrono::milliseconds> backlog_after;
  std::chrono::milliseconds backlog_for{0};
  // --fail-restore: every stream's restore of this checkpoint id fails (its restore handler
  // throws, so the SDK reports restore_result ok false); 0: none.
  int64_t fail_restore = 0;
  std::chrono::milliseconds connect_timeout{10'000};  // give up if no pipeline connected by then
  bool json = false;                                  // summary as one JSON object
  bool progress = false;           // progress lines on stderr even when it is not a terminal
  int threads = 2;                 // the worker runtime's threads
  int channels = 1;                // gRPC channels (TCP connections) to the daemon
  bool connect_transport = false;  // --transport connect: a Connect stream per pipeline
  std::string worker_id;           // default "sim-<pid>"
  std::string event_log;           // append trigger/complete/abort/restore/release lines here
  std::string state_dir;           // write a state file per task per checkpoint (state_files.h)
  std::optional<uint64_t> seed;    // for the decline choices; random by default
};

struct ParsedCommandLine {
  bool run = false;     // false: exit with exit_code, printing message
  int exit_code = 0;    // 0 for --help, 2 for bad flags
  std::string message;  // help text (exit 0, for stdout) or a one-line error (for stderr)
  SimOptions options;
};

ParsedCommandLine ParseCommandLine(int argc, const char* const* argv);

}  // namespace ckpt::sim
