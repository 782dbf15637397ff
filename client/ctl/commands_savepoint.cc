// ckptctl savepoint: asks for a savepoint of a job (or one pipeline), follows its progress, and
// prints each pipeline's savepoint id and location.

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "ctl/command.h"
#include "ctl/connection.h"
#include "ctl/durations.h"
#include "ctl/live_block.h"
#include "ctl/output_views.h"
#include "ctl/savepoint_view.h"
#include "views/admin_json.h"
#include "views/enum_names.h"

namespace ckpt::ctl {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int64_t kDefaultTimeoutMs = 300'000;  // the daemon's, when none is sent
constexpr milliseconds kDeadlineSlack{30'000};  // beyond the savepoint's own timeout
constexpr milliseconds kRedrawEvery{200};       // the live view's clock

struct SavepointFlags {
  std::string job, pipeline, target, timeout;
  bool stop = false;
  CLI::Option* timeout_option = nullptr;
};

// The progress stream, read on its own thread so that the main thread can redraw the live view's
// elapsed time while no message arrives. Threading: Wait and Finish are called from one thread;
// the reader thread only pushes to queue_.
class ProgressStream {
 public:
  ProgressStream(const Connection& connection, const v1::TriggerSavepointRequest& request,
                 milliseconds deadline) {
    connection.Prepare(&context_, deadline);
    reader_ = connection.admin().TriggerSavepoint(&context_, request);
    thread_ = std::thread([this] { ReadAll(); });
  }
  ~ProgressStream() {
    if (thread_.joinable()) {
      context_.TryCancel();
      thread_.join();
    }
  }
  ProgressStream(const ProgressStream&) = delete;
  ProgressStream& operator=(const ProgressStream&) = delete;

  // Every message not yet returned, waiting for one until `until` (nullopt: for as long as it
  // takes); *ended is set once the stream has no more.
  std::deque<v1::SavepointProgress> Wait(std::optional<Clock::time_point> until, bool* ended) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [this] { return !queue_.empty() || ended_; };
    if (until) {
      cv_.wait_until(lock, *until, ready);
    } else {
      cv_.wait(lock, ready);
    }
    std::deque<v1::SavepointProgress> messages;
    messages.swap(queue_);
    *ended = ended_;
    return messages;
  }

  // The call's context, for its trailing metadata once Finish returned.
  const grpc::ClientContext& context() const { return context_; }

  // Only once Wait reported the end.
  grpc::Status Finish() {
    thread_.join();
    return reader_->Finish();
  }

 private:
  void ReadAll() {
    v1::SavepointProgress message;
    while (reader_->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(message);
      cv_.notify_one();
    }
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    cv_.notify_one();
  }

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::SavepointProgress>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::SavepointProgress> queue_;  // guarded by mu_
  bool ended_ = false;                       // guarded by mu_
};

// "p1: reason" of the first failed pipeline, and how many others failed.
std::string FailureSummary(const v1::SavepointProgress& result) {
  std::string first;
  int failed = 0;
  for (const v1::PipelineSavepoint& s : result.savepoints()) {
    if (s.status() != v1::SAVEPOINT_STATUS_FAILED) continue;
    if (++failed == 1) {
      first = s.pipeline_id() + (s.failure_reason().empty() ? "" : ": " + s.failure_reason());
    }
  }
  if (failed == 0) return "";
  if (failed > 1) first += " (and " + std::to_string(failed - 1) + " more)";
  return first;
}

// The stream broke before its final message (the daemon went away): asks the daemon what became
// of each pipeline's savepoint, by its id in the history, so that the operator is never told
// "not completed" of a savepoint that completed. A final progress when every pipeline's outcome
// is known; nothing when the daemon cannot say (or a savepoint's id never reached us).
std::optional<v1::SavepointProgress> LookUpOutcome(const Connection& connection,
                                                   const std::string& job,
                                                   v1::SavepointProgress latest) {
  bool any_failed = false;
  for (v1::PipelineSavepoint& s : *latest.mutable_savepoints()) {
    if (s.status() == v1::SAVEPOINT_STATUS_COMPLETED) continue;
    if (s.status() == v1::SAVEPOINT_STATUS_FAILED) {
      any_failed = true;
      continue;
    }
    // No id yet: the daemon may have triggered it (and even completed it) without having told
    // us, and the history cannot say which of its savepoints is ours: unknown, not "failed".
    if (s.savepoint_id() == 0) return std::nullopt;
    v1::ListCheckpointsResponse history;
    if (!connection.ListCheckpoints(job, s.pipeline_id(), 50, &history).empty()) {
      return std::nullopt;
    }
    bool completed = false;
    for (const v1::CheckpointInfo& c : history.checkpoints()) {
      if (c.checkpoint_id() != s.savepoint_id()) continue;
      completed = c.status() == v1::CHECKPOINT_STATUS_COMPLETED;
      if (completed) s.set_location(c.location());
    }
    s.set_status(completed ? v1::SAVEPOINT_STATUS_COMPLETED : v1::SAVEPOINT_STATUS_FAILED);
    if (completed) {
      s.set_acked_tasks(s.expected_tasks());
    } else {
      s.set_failure_reason("not in the history after the daemon went away: it did not complete");
      any_failed = true;
    }
  }
  latest.set_final(true);
  latest.set_status(any_failed ? v1::SAVEPOINT_STATUS_FAILED : v1::SAVEPOINT_STATUS_COMPLETED);
  return latest;
}

CommandResult RunSavepoint(const GlobalOptions& global, const SavepointFlags& flags) {
  v1::TriggerSavepointRequest request;
  request.set_job_id(flags.job);
  request.set_pipeline_id(flags.pipeline);
  request.set_target(flags.target);
  request.set_stop(flags.stop);
  if (flags.timeout_option->count() > 0) {
    std::string why;
    const std::optional<int64_t> timeout_ms =
        cli::ParseDurationMs(flags.timeout, &why, kDurationOptions);
    if (!timeout_ms) return CommandResult::BadUsage("--timeout: " + why);
    if (*timeout_ms <= 0) return CommandResult::BadUsage("--timeout: must be more than 0");
    request.set_timeout_ms(*timeout_ms);
  }
  const milliseconds deadline =
      milliseconds(request.timeout_ms() > 0 ? request.timeout_ms() : kDefaultTimeoutMs) +
      kDeadlineSlack;
  const std::string what =
      flags.pipeline.empty() ? "job " + flags.job : flags.job + "/" + flags.pipeline;

  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  LiveBlock live(stdout);
  ProgressChangeLog changes;
  const Clock::time_point started = Clock::now();
  auto elapsed_ms = [started] {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - started).count();
  };

  Connection connection(global);
  v1::SavepointProgress latest;
  std::optional<v1::SavepointProgress> result;
  int64_t received = 0;
  grpc::Status status;
  std::string gave_up;
  // A standby refuses the request before it did anything: ask the leader it names instead.
  for (;;) {
    ProgressStream stream(connection, request, deadline);
    for (bool ended = false; !ended;) {
      std::optional<Clock::time_point> until;
      if (terminal) until = Clock::now() + kRedrawEvery;
      for (v1::SavepointProgress& message : stream.Wait(until, &ended)) {
        ++received;
        if (!terminal) {
          for (const std::string& line : changes.Changes(message, elapsed_ms())) {
            std::fprintf(stderr, "%s\n", line.c_str());
          }
        }
        if (message.final()) result = message;
        latest = std::move(message);
      }
      if (terminal && !ended) live.Draw(LiveProgressLines(flags.job, latest, elapsed_ms()));
    }
    status = stream.Finish();
    if (received > 0 || status.ok() ||
        !connection.RetryElsewhere(status, stream.context(), &gave_up)) {
      break;
    }
  }
  live.Clear();
  if (!gave_up.empty()) return CommandResult::Failed(gave_up);
  if (!result && !status.ok() && received > 0 &&
      status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
    result = LookUpOutcome(connection, flags.job, latest);
    if (!result) {
      return CommandResult::Failed(
          "the daemon went away during the savepoint of " + what + " (" +
          connection.Describe(status, deadline) +
          ") and cannot be asked how it ended: the outcome is unknown; see `ckptctl checkpoint "
          "list` of each pipeline once the daemon is back");
    }
  }

  if (result) {
    const std::string text =
        global.json() ? Dump(SavepointJson(*result)) : SavepointResult(*result);
    std::fputs(text.c_str(), stdout);
    if (result->status() != v1::SAVEPOINT_STATUS_COMPLETED) {
      const std::string failures = FailureSummary(*result);
      return CommandResult::Failed("savepoint of " + what + " " + ShortName(result->status()) +
                                   (failures.empty() ? "" : ": " + failures));
    }
    return CommandResult::Ok();
  }
  if (status.ok()) {
    return CommandResult::Failed("the savepoint stream of " + what + " ended without a result");
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && received > 0) {
    return CommandResult::Failed("no result for the savepoint of " + what + " within " +
                                 FormatDuration(deadline.count()) +
                                 " (DEADLINE_EXCEEDED); it may still finish on the daemon");
  }
  return CommandResult::Failed(connection.Describe(status, deadline));
}

}  // namespace

void AddSavepointCommand(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<SavepointFlags>();
  CLI::App* cmd = app.add_subcommand(
      "savepoint",
      "Take a savepoint of a job's pipelines (or one), wait for it, and print where it went");
  cmd->fallthrough();
  cmd->footer(R"(Shows live progress on a terminal; otherwise a line on stderr per change.
Exits non-zero if any pipeline's savepoint FAILED.

Examples:
  ckptctl savepoint --job etl
  ckptctl savepoint --job etl --pipeline p0 --target s3://bucket/savepoints/etl
  ckptctl savepoint --job etl --stop --timeout 10m -o json)");
  cmd->add_option("--job", flags->job, "Job id")->required();
  cmd->add_option("--pipeline", flags->pipeline,
                  "Only this pipeline (default: every one of the job)");
  cmd->add_option("--target", flags->target,
                  "Where the state goes (default: <savepoint_root>/<job>/<pipeline>/<id>; the "
                  "daemon's savepoint_root, <data_dir>/savepoints unless set)")
      ->type_name("URI");
  cmd->add_flag("--stop", flags->stop, "Leave each pipeline STOPPED once its savepoint completes");
  flags->timeout_option =
      cmd->add_option("--timeout", flags->timeout,
                      "Give up after this long, counted from the request (default: 5m)")
          ->type_name("DURATION");
  cmd->callback([&context, flags] {
    context.action = [&context, flags] { return RunSavepoint(context.global, *flags); };
  });
}

}  // namespace ckpt::ctl
