#pragma once
// One simulated pipeline: acks (or declines) every trigger after a delay and records what it saw.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ckpt/worker.h"
#include "sim/event_log.h"
#include "sim/state_files.h"

namespace ckpt::sim {

// Totals over every pipeline. Threading: atomics, and last_disconnect under mu.
struct SimCounters {
  std::atomic<uint64_t> triggers{0};
  std::atomic<uint64_t> acks{0};
  std::atomic<uint64_t> declines{0};
  std::atomic<uint64_t> completes{0};
  std::atomic<uint64_t> commits{0};        // commits asked for (complete or welcome)
  std::atomic<uint64_t> all_committed{0};  // all_committed received
  std::atomic<uint64_t> aborts{0};
  std::atomic<uint64_t> welcomes{0};
  std::atomic<uint64_t> stopped_pipelines{0};  // gave up for good (an error not retried)
  std::atomic<uint64_t> state_changes{0};      // `state` messages: paused, failed, stopped, ...
  std::atomic<uint64_t> savepoints_refused{0};
  std::atomic<uint64_t> restores{0};         // welcomes that named a restore point
  std::atomic<uint64_t> restores_failed{0};  // --fail-restore: restore handlers that threw
  std::atomic<uint64_t> releases{0};         // checkpoint ids released (per stream)
  // --state-dir: files a restore point named that did not exist; files that could not be written.
  std::atomic<uint64_t> restore_files_missing{0};
  std::atomic<uint64_t> state_write_errors{0};
  std::atomic<bool> not_found_reported{false};
  std::atomic<uint64_t> positions_passed{0};  // --positions: triggers declined as already passed

  // --positions: a pipeline's round `checkpoint_id` completed with its tasks snapshotted at
  // `position`. Rounds of one id across pipelines (an alignment group's) should agree.
  void RecordAligned(int64_t checkpoint_id, int64_t position);
  // Rounds recorded (per pipeline), and the largest spread (max - min position) of any one id
  // over the pipelines that completed it.
  uint64_t aligned_rounds() const;
  int64_t position_spread_max() const;

  // --group-size: a member of group `group` (of `group_size` members) received the trigger of
  // `checkpoint_id` at `at`. Once every member did, the round's skew (latest minus earliest) is
  // kept, if its first trigger came at or after `sample_from`.
  void RecordGroupTrigger(int group, int group_size, int64_t checkpoint_id,
                          std::chrono::steady_clock::time_point at,
                          std::chrono::steady_clock::time_point sample_from);
  std::vector<int64_t> group_skew_micros() const;

  void RecordDisconnect(const std::string& pipeline_id, const sdk::Disconnect& disconnect);
  // The latest disconnect of any pipeline (none yet: nullopt) and that pipeline's id.
  std::optional<sdk::Disconnect> last_disconnect() const;
  std::string last_disconnect_pipeline() const;

 private:
  // The ids whose spread is tracked: the newest ones (a round's pipelines complete it within its
  // timeout, long before this many newer ids arrive).
  static constexpr size_t kTrackedRounds = 4096;

  mutable std::mutex mu_;
  std::optional<sdk::Disconnect> last_disconnect_;              // guarded by mu_
  std::string last_disconnect_pipeline_;                        // guarded by mu_
  std::map<int64_t, std::pair<int64_t, int64_t>> acked_spans_;  // id -> (min, max); guarded by mu_
  uint64_t aligned_rounds_ = 0;                                 // guarded by mu_
  struct GroupArrivals {
    std::chrono::steady_clock::time_point first, last;
    int seen = 0;
  };
  // (group, id) -> arrivals so far; rounds a member never heard are dropped oldest first.
  std::map<std::pair<int, int64_t>, GroupArrivals> group_arrivals_;  // guarded by mu_
  std::vector<int64_t> group_skew_micros_;                           // guarded by mu_
  int64_t position_spread_max_ = 0;                                  // guarded by mu_
};

struct SimPipelineConfig {
  std::string worker_id;
  std::string job_id;
  std::string pipeline_id;
  int first_task = 0;  // this stream serves tasks first_task .. first_task + tasks - 1
  int tasks = 1;
  std::chrono::milliseconds ack_delay{0};
  // Commits this long after they are asked for (nullopt: at once, the SDK's auto_commit).
  std::optional<std::chrono::milliseconds> commit_delay;
  double decline_rate = 0;
  double positions_rate = 0;  // --positions
  // --backlog-after, --backlog-for: report a backlog from this long after the start, for this
  // long (0: to the end); nullopt: never.
  std::optional<std::chrono::milliseconds> backlog_after;
  std::chrono::milliseconds backlog_for{0};
  int64_t fail_restore = 0;  // --fail-restore: the restore of this checkpoint id fails (0: none)
  int group = -1;            // --group-size: its group's index (-1: none)
  int group_size = 0;
  uint64_t seed = 0;
  // Rounds triggered before this are not sampled (SimOptions::warmup).
  std::chrono::steady_clock::time_point sample_from{};
  // --state-dir (state_files.h); null: states are made-up sim:// uris. Must outlive the runtime.
  const StateFiles* state_files = nullptr;
};

// Threading: the handlers and the delayed acks run on the pipeline's serialized context
// (ckpt::sdk); the samples are touched only there, and read after the runtime is destroyed. Must
// outlive the WorkerRuntime it is started on.
class SimPipeline {
 public:
  SimPipeline(SimPipelineConfig config, SimCounters& counters, EventLog* event_log);
  SimPipeline(const SimPipeline&) = delete;
  SimPipeline& operator=(const SimPipeline&) = delete;

  void Start(sdk::WorkerRuntime& runtime);
  sdk::PipelineWorker& worker() const { return *worker_; }

  // Only once the runtime is gone.
  const std::vector<int64_t>& checkpoint_micros() const { return checkpoint_micros_; }
  const std::vector<int64_t>& trigger_gap_micros() const { return trigger_gap_micros_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Triggers remembered for their complete; older ones are long finished.
  static constexpr size_t kRememberedTriggers = 16;
  static constexpr std::chrono::milliseconds kPositionReport{100};

  void OnTrigger(const sdk::Trigger& trigger);
  void OnComplete(int64_t checkpoint_id, sdk::CheckpointKind kind);
  void OnCommit(int64_t checkpoint_id);
  void OnAbort(int64_t checkpoint_id);
  void OnState(sdk::PipelineState state, const std::string& reason);
  void OnDisconnected(const sdk::Disconnect& disconnect);
  void OnWelcome(const sdk::Welcome& welcome);
  void OnRelease(const std::vector<int64_t>& checkpoint_ids);
  // The uri to ack for a task's state: its --state-dir file (written now), else a made-up one.
  std::optional<std::string> StateUri(int64_t checkpoint_id, const std::string& task);
  // --state-dir: deletes this stream's files of a checkpoint.
  void DeleteState(int64_t checkpoint_id);
  // Acks with every task (at `position`, 0: none), or declines with one (decline_rate); nothing
  // if the round was aborted.
  void Respond(int64_t checkpoint_id, int64_t position);
  // --positions: where every task is now, and reporting it to the SDK every kPositionReport.
  int64_t PositionNow() const;
  void ReportPositions();
  // --positions: a trigger with a position: decline when already past it, else ack on reaching
  // it (after ack_delay).
  void RespondAtPosition(int64_t checkpoint_id, int64_t position);
  // One --event-log line: "<event> <job> <pipeline> <checkpoint id>[ <detail>]".
  void Log(const char* event, int64_t checkpoint_id, const char* detail);

  const SimPipelineConfig config_;
  SimCounters& counters_;
  EventLog* const event_log_;  // may be null; must outlive the runtime
  std::vector<std::string> task_ids_;
  std::shared_ptr<sdk::PipelineWorker> worker_;

  // The pipeline's serialized context only.
  std::map<int64_t, Clock::time_point> triggered_at_;  // by checkpoint id, not yet finished
  std::optional<Clock::time_point> last_trigger_at_;
  std::vector<int64_t> checkpoint_micros_;
  std::vector<int64_t> trigger_gap_micros_;
  std::mt19937_64 rng_;
  // --state-dir: the checkpoint ids this process wrote files for and has not deleted yet.
  std::set<int64_t> written_ids_;
  // The ids the daemon references as far as this stream knows (the last welcome's retained ids,
  // completes since, releases taken out): a written id below a new trigger that is not among
  // them belongs to a round that ended without completing (perhaps in a daemon crash, which no
  // abort reports) and is deleted.
  std::set<int64_t> referenced_ids_;
  // --positions: every task is at positions_base_ + rate x the time since positions_origin_ (set
  // at the first welcome, from its restore point: where a restarted engine resumes reading).
  std::optional<Clock::time_point> positions_origin_;
  int64_t positions_base_ = 0;
  std::map<int64_t, int64_t> acked_positions_;  // by checkpoint id, until its complete or abort
};

}  // namespace ckpt::sim
