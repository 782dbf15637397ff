#include "sim/sim_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ckpt::sim {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

void SimCounters::RecordDisconnect(const std::string& pipeline_id,
                                   const sdk::Disconnect& disconnect) {
  std::lock_guard<std::mutex> lock(mu_);
  last_disconnect_ = disconnect;
  last_disconnect_pipeline_ = pipeline_id;
}

void SimCounters::RecordAligned(int64_t checkpoint_id, int64_t position) {
  std::lock_guard<std::mutex> lock(mu_);
  ++aligned_rounds_;  // each pipeline completes an id once
  auto [it, inserted] = acked_spans_.try_emplace(checkpoint_id, position, position);
  if (inserted && acked_spans_.size() > kTrackedRounds) {
    acked_spans_.erase(acked_spans_.begin());
    if (acked_spans_.find(checkpoint_id) == acked_spans_.end()) return;  // it was the oldest
  }
  it->second.first = std::min(it->second.first, position);
  it->second.second = std::max(it->second.second, position);
  position_spread_max_ = std::max(position_spread_max_, it->second.second - it->second.first);
}

void SimCounters::RecordGroupTrigger(int group, int group_size, int64_t checkpoint_id,
                                     std::chrono::steady_clock::time_point at,
                                     std::chrono::steady_clock::time_point sample_from) {
  constexpr size_t kTrackedGroupRounds = 100'000;
  constexpr size_t kKeptSkews = 1'000'000;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = group_arrivals_.try_emplace({group, checkpoint_id}, GroupArrivals{at, at});
  GroupArrivals& a = it->second;
  a.first = std::min(a.first, at);
  a.last = std::max(a.last, at);
  if (++a.seen < group_size) {
    if (inserted && group_arrivals_.size() > kTrackedGroupRounds) {
      group_arrivals_.erase(group_arrivals_.begin());
    }
    return;
  }
  if (a.first >= sample_from && group_skew_micros_.size() < kKeptSkews) {
    group_skew_micros_.push_back(duration_cast<microseconds>(a.last - a.first).count());
  }
  group_arrivals_.erase(it);
}

std::vector<int64_t> SimCounters::group_skew_micros() const {
  std::lock_guard<std::mutex> lock(mu_);
  return group_skew_micros_;
}

uint64_t SimCounters::aligned_rounds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aligned_rounds_;
}

int64_t SimCounters::position_spread_max() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_spread_max_;
}

std::optional<sdk::Disconnect> SimCounters::last_disconnect() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_disconnect_;
}

std::string SimCounters::last_disconnect_pipeline() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_disconnect_pipeline_;
}

SimPipeline::SimPipeline(SimPipelineConfig config, SimCounters& counters, EventLog* event_log)
    : config_(std::move(config)), counters_(counters), event_log_(event_log), rng_(config_.seed) {
  for (int i = 0; i < config_.tasks; ++i) {
    task_ids_.push_back(std::to_string(config_.first_task + i));
  }
}

void SimPipeline::Start(sdk::WorkerRuntime& runtime) {
  sdk::PipelineWorkerOptions options;
  options.worker_id = config_.worker_id;
  options.job_id = config_.job_id;
  options.pipeline_id = config_.pipeline_id;
  options.task_ids = task_ids_;
  sdk::PipelineHandlers handlers;
  // `this` outlives the runtime, hence every handler.
  handlers.on_welcome = [this](const sdk::Welcome& welcome) { OnWelcome(welcome); };
  handlers.on_release = [this](const std::vector<int64_t>& ids) { OnRelease(ids); };
  handlers.on_trigger = [this](const sdk::Trigger& trigger) { OnTrigger(trigger); };
  handlers.on_complete = [this](int64_t id, sdk::CheckpointKind kind) { OnComplete(id, kind); };
  handlers.on_abort = [this](int64_t id, const std::string&) { OnAbort(id); };
  options.auto_commit = !config_.commit_delay;
  handlers.on_commit = [this](int64_t id) { OnCommit(id); };
  handlers.on_all_committed = [this](int64_t id) {
    counters_.all_committed.fetch_add(1, std::memory_order_relaxed);
    Log("all_committed", id, nullptr);
  };
  handlers.on_disconnected = [this](const sdk::Disconnect& d) { OnDisconnected(d); };
  handlers.on_state = [this](sdk::PipelineState state, const std::string& reason) {
    OnState(state, reason);
  };
  handlers.on_savepoint_refused = [this](const std::string& reason) {
    counters_.savepoints_refused.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "ckpt-worker-sim: %s/%s: savepoint request refused: %s\n",
                 config_.job_id.c_str(), config_.pipeline_id.c_str(), reason.c_str());
  };
  worker_ = runtime.AddPipeline(std::move(options), std::move(handlers));
  worker_->Start();
  if (config_.backlog_after) {
    // A backlog episode: behind from then on, caught up again after backlog_for (if set).
    worker_->RunAfter(*config_.backlog_after, [this] {
      worker_->SetBacklog(true);
      if (config_.backlog_for.count() > 0) {
        worker_->RunAfter(config_.backlog_for, [this] { worker_->SetBacklog(false); });
      }
    });
  }
}

void SimPipeline::Log(const char* event, int64_t checkpoint_id, const char* detail) {
  if (!event_log_) return;
  std::string line = std::string(event) + " " + config_.job_id + " " + config_.pipeline_id + " " +
                     std::to_string(checkpoint_id);
  if (detail) line += std::string(" ") + detail;
  event_log_->Append(line);
}

void SimPipeline::OnWelcome(const sdk::Welcome& welcome) {
  counters_.welcomes.fetch_add(1, std::memory_order_relaxed);
  if (config_.positions_rate > 0 && !positions_origin_) {
    // A process starting resumes from its restore point's position; a reconnect goes on.
    positions_origin_ = Clock::now();
    positions_base_ = welcome.restore.position;
    ReportPositions();
  }
  if (config_.state_files) {
    // What the daemon no longer references (a release missed while away, or lost in a daemon
    // crash) is deleted; ids above the last completed one may still complete (a round with the
    // store), so they stay until their abort or release.
    const std::set<int64_t> retained(welcome.retained_checkpoint_ids.begin(),
                                     welcome.retained_checkpoint_ids.end());
    std::vector<int64_t> stale;
    for (int64_t id : written_ids_) {
      if (id <= welcome.last_completed_checkpoint_id && !retained.count(id)) stale.push_back(id);
    }
    for (int64_t id : stale) DeleteState(id);
    referenced_ids_ = retained;
  }
  const sdk::RestorePoint& restore = welcome.restore;
  if (restore.checkpoint_id == 0) return;
  counters_.restores.fetch_add(1, std::memory_order_relaxed);
  Log("restore", restore.checkpoint_id, sdk::ToString(restore.kind));
  if (restore.checkpoint_id == config_.fail_restore) {
    // A failed restore, as an engine's would be: the SDK reports the exception to the daemon.
    counters_.restores_failed.fetch_add(1, std::memory_order_relaxed);
    Log("restore_failed", restore.checkpoint_id, nullptr);
    throw std::runtime_error("ckpt-worker-sim --fail-restore " +
                             std::to_string(config_.fail_restore));
  }
  if (!config_.state_files) return;
  // Each state handed over must still be there: nothing a restore needs was released.
  for (const auto& [task, state] : restore.task_states) {
    if (StateFiles::Exists(state.uri)) continue;
    counters_.restore_files_missing.fetch_add(1, std::memory_order_relaxed);
    Log("restore_missing", restore.checkpoint_id, task.c_str());
    std::fprintf(stderr,
                 "ckpt-worker-sim: %s/%s: restore point %lld: state of task %s missing: %s\n",
                 config_.job_id.c_str(), config_.pipeline_id.c_str(),
                 static_cast<long long>(restore.checkpoint_id), task.c_str(), state.uri.c_str());
  }
}

int64_t SimPipeline::PositionNow() const {
  if (!positions_origin_) return positions_base_;
  const double seconds = std::chrono::duration<double>(Clock::now() - *positions_origin_).count();
  return positions_base_ + static_cast<int64_t>(std::floor(seconds * config_.positions_rate));
}

void SimPipeline::ReportPositions() {
  const int64_t now = PositionNow();
  for (const std::string& task : task_ids_) worker_->SetPosition(task, now);
  // On the pipeline's serialized context; `this` outlives the runtime, which drops this when it
  // goes.
  worker_->RunAfter(kPositionReport, [this] { ReportPositions(); });
}

void SimPipeline::RespondAtPosition(int64_t checkpoint_id, int64_t position) {
  const int64_t now = PositionNow();
  if (now > position) {
    // Past it: a task cannot go back; the daemon's next round asks for one interval further.
    counters_.positions_passed.fetch_add(1, std::memory_order_relaxed);
    counters_.declines.fetch_add(1, std::memory_order_relaxed);
    Log("passed", checkpoint_id, std::to_string(now).c_str());
    worker_->Decline(
        checkpoint_id, task_ids_.front(),
        "already past position " + std::to_string(position) + " (at " + std::to_string(now) + ")",
        /*expired=*/false, now);
    return;
  }
  const double wait_s = static_cast<double>(position - now) / config_.positions_rate;
  const auto wait = std::chrono::ceil<milliseconds>(std::chrono::duration<double>(wait_s));
  worker_->RunAfter(wait + config_.ack_delay,
                    [this, checkpoint_id, position] { Respond(checkpoint_id, position); });
}

void SimPipeline::OnRelease(const std::vector<int64_t>& checkpoint_ids) {
  counters_.releases.fetch_add(checkpoint_ids.size(), std::memory_order_relaxed);
  for (int64_t id : checkpoint_ids) {
    Log("release", id, nullptr);
    DeleteState(id);
  }
}

void SimPipeline::DeleteState(int64_t checkpoint_id) {
  if (!config_.state_files) return;
  for (const std::string& task : task_ids_) {
    config_.state_files->Remove(config_.job_id, config_.pipeline_id, checkpoint_id, task);
  }
  written_ids_.erase(checkpoint_id);
  referenced_ids_.erase(checkpoint_id);
}

std::optional<std::string> SimPipeline::StateUri(int64_t checkpoint_id, const std::string& task) {
  if (!config_.state_files) {
    return "sim://" + config_.job_id + "/" + config_.pipeline_id + "/chk-" +
           std::to_string(checkpoint_id) + "/" + task;
  }
  std::string error;
  std::string path =
      config_.state_files->Write(config_.job_id, config_.pipeline_id, checkpoint_id, task, &error);
  if (path.empty()) {
    // Said once: a full or read-only disk fails every write after the first.
    if (counters_.state_write_errors.fetch_add(1, std::memory_order_relaxed) == 0) {
      std::fprintf(stderr, "ckpt-worker-sim: --state-dir: %s (declining such rounds)\n",
                   error.c_str());
    }
    return std::nullopt;
  }
  written_ids_.insert(checkpoint_id);
  return path;
}

void SimPipeline::OnTrigger(const sdk::Trigger& trigger) {
  if (config_.state_files) {
    // At most one round is pending: every round below this one has ended.
    std::vector<int64_t> ended;
    for (int64_t id : written_ids_) {
      if (id < trigger.checkpoint_id && !referenced_ids_.count(id)) ended.push_back(id);
    }
    for (int64_t id : ended) DeleteState(id);
  }
  const Clock::time_point now = Clock::now();
  counters_.triggers.fetch_add(1, std::memory_order_relaxed);
  Log("trigger", trigger.checkpoint_id, sdk::ToString(trigger.kind));
  if (last_trigger_at_ && *last_trigger_at_ >= config_.sample_from) {
    trigger_gap_micros_.push_back(duration_cast<microseconds>(now - *last_trigger_at_).count());
  }
  last_trigger_at_ = now;
  if (config_.group >= 0) {
    counters_.RecordGroupTrigger(config_.group, config_.group_size, trigger.checkpoint_id, now,
                                 config_.sample_from);
  }
  triggered_at_[trigger.checkpoint_id] = now;
  while (triggered_at_.size() > kRememberedTriggers) triggered_at_.erase(triggered_at_.begin());

  if (trigger.position > 0 && config_.positions_rate > 0) {
    RespondAtPosition(trigger.checkpoint_id, trigger.position);
    return;
  }
  if (config_.ack_delay.count() == 0) {
    Respond(trigger.checkpoint_id, 0);
    return;
  }
  // On the pipeline's serialized context, like the handlers, so the samples need no lock; `this`
  // outlives the runtime, which drops the acks still waiting when it goes.
  worker_->RunAfter(config_.ack_delay, [this, id = trigger.checkpoint_id] { Respond(id, 0); });
}

void SimPipeline::Respond(int64_t checkpoint_id, int64_t position) {
  if (triggered_at_.count(checkpoint_id) == 0) return;  // aborted (or long gone) meanwhile
  if (config_.decline_rate > 0 &&
      std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < config_.decline_rate) {
    const size_t task = std::uniform_int_distribution<size_t>(0, task_ids_.size() - 1)(rng_);
    worker_->Decline(checkpoint_id, task_ids_[task], "simulated decline", /*expired=*/false);
    counters_.declines.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Plausible figures: the time since the trigger, a fifth of it the synchronous snapshot and
  // the rest the upload, with a little alignment that differs from task to task.
  const int64_t elapsed_ms =
      duration_cast<milliseconds>(Clock::now() - triggered_at_[checkpoint_id]).count();
  for (const std::string& task : task_ids_) {
    std::optional<std::string> uri = StateUri(checkpoint_id, task);
    if (!uri) {
      worker_->Decline(checkpoint_id, task, "cannot write the state file", /*expired=*/false);
      counters_.declines.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    sdk::TaskStateInfo state;
    state.uri = std::move(*uri);
    // A state of a few hundred KiB to a few MiB, as a small operator's might be (a state file
    // written with --state-dir is only a marker: its size says nothing).
    state.size_bytes = std::uniform_int_distribution<int64_t>(256 << 10, 4 << 20)(rng_);
    sdk::AckFigures figures;
    figures.sync_duration_ms = elapsed_ms / 5;
    figures.async_duration_ms = elapsed_ms - figures.sync_duration_ms;
    figures.alignment_duration_ms =
        std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(elapsed_ms / 10, 1))(rng_);
    figures.bytes_processed_during_alignment = figures.alignment_duration_ms * 1024;
    // Without --positions the SDK fills in the trigger's position (0 when it had none).
    worker_->Ack(checkpoint_id, task, std::move(state), figures,
                 position > 0 ? std::optional<int64_t>(position) : std::nullopt);
    counters_.acks.fetch_add(1, std::memory_order_relaxed);
  }
  if (position > 0) {
    acked_positions_[checkpoint_id] = position;
    while (acked_positions_.size() > kRememberedTriggers) {
      acked_positions_.erase(acked_positions_.begin());
    }
  }
}

void SimPipeline::OnComplete(int64_t checkpoint_id, sdk::CheckpointKind kind) {
  const Clock::time_point now = Clock::now();
  counters_.completes.fetch_add(1, std::memory_order_relaxed);
  if (config_.state_files) referenced_ids_.insert(checkpoint_id);
  Log("complete", checkpoint_id, sdk::ToString(kind));
  auto it = triggered_at_.find(checkpoint_id);
  // A complete for a trigger this stream never saw (takeover, reconnect) has no duration.
  if (it != triggered_at_.end() && it->second >= config_.sample_from) {
    checkpoint_micros_.push_back(duration_cast<microseconds>(now - it->second).count());
  }
  // This one and every older one are finished.
  triggered_at_.erase(triggered_at_.begin(), triggered_at_.upper_bound(checkpoint_id));
  if (auto acked = acked_positions_.find(checkpoint_id); acked != acked_positions_.end()) {
    counters_.RecordAligned(checkpoint_id, acked->second);
    Log("aligned", checkpoint_id, std::to_string(acked->second).c_str());
  }
  acked_positions_.erase(acked_positions_.begin(), acked_positions_.upper_bound(checkpoint_id));
}

void SimPipeline::OnCommit(int64_t checkpoint_id) {
  counters_.commits.fetch_add(1, std::memory_order_relaxed);
  Log("commit", checkpoint_id, nullptr);
  if (!config_.commit_delay) return;  // auto_commit: the SDK sends `committed` now
  worker_->RunAfter(*config_.commit_delay, [this, checkpoint_id] {
    for (const std::string& task : task_ids_) worker_->Committed(checkpoint_id, task);
  });
}

void SimPipeline::OnAbort(int64_t checkpoint_id) {
  counters_.aborts.fetch_add(1, std::memory_order_relaxed);
  Log("abort", checkpoint_id, nullptr);
  triggered_at_.erase(checkpoint_id);
  acked_positions_.erase(checkpoint_id);
  DeleteState(checkpoint_id);  // an aborted round never completes: its state is garbage
}

void SimPipeline::OnState(sdk::PipelineState state, const std::string& reason) {
  counters_.state_changes.fetch_add(1, std::memory_order_relaxed);
  Log("state", 0, sdk::ToString(state));
  std::fprintf(stderr, "ckpt-worker-sim: %s/%s: pipeline %s: %s\n", config_.job_id.c_str(),
               config_.pipeline_id.c_str(),
               state == sdk::PipelineState::kUnspecified ? "deleted" : sdk::ToString(state),
               reason.c_str());
}

void SimPipeline::OnDisconnected(const sdk::Disconnect& disconnect) {
  counters_.RecordDisconnect(config_.pipeline_id, disconnect);
  // A pipeline that is not there yet: say so once, it is the most likely user mistake.
  if (disconnect.code == sdk::StatusCode::kNotFound &&
      !counters_.not_found_reported.exchange(true)) {
    std::fprintf(stderr,
                 "ckpt-worker-sim: %s/%s: NOT_FOUND: %s (retrying slowly until it is created)\n",
                 config_.job_id.c_str(), config_.pipeline_id.c_str(), disconnect.message.c_str());
  }
  if (!disconnect.will_retry) {
    counters_.stopped_pipelines.fetch_add(1);
    std::fprintf(stderr, "ckpt-worker-sim: %s/%s stopped: %s: %s\n", config_.job_id.c_str(),
                 config_.pipeline_id.c_str(), sdk::ToString(disconnect.code),
                 disconnect.message.c_str());
  }
}

}  // namespace ckpt::sim
