#pragma once
// Why a pipeline is not checkpointing now (ExplainPipeline, `ckptctl pipeline why`, the stuck
// notice; docs/man/ckptctl-pipeline.1, "why"): what holds it up, in fields, and one short
// plain sentence made of them.

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace ckpt {

// What holds a pipeline up, the first that applies in this order.
enum class Holdup {
  kNone,                 // checkpointing; the next round is due (next_trigger_in_ms)
  kShuttingDown,         // the daemon is stopping: no new rounds
  kPaused,               // an operator paused it
  kFailed,               // too many consecutive failed rounds
  kStopped,              // a savepoint with stop completed
  kNeverAllTasks,        // its task set was never complete since the daemon started
  kTasksMissing,         // tasks lost their streams
  kRoundSlow,            // a round is pending for longer than its stuck threshold
  kRoundPending,         // a round is pending, within its usual time
  kStoreUnwritable,      // the store takes no writes: nothing can become durable
  kWaitingForIds,        // the next trigger waits for its id reservation to be durable
  kWaitingMinPause,      // the last round ended less than min_pause ago
  kWaitingForPositions,  // position_interval: tasks have not reported positions that far yet
  kWaitingForGroup,      // a member of an alignment group: the group's round or schedule holds it
  kCommitting,           // the newest checkpoint is COMMITTING, within commit_timeout_ms
  kCommitOverdue,        // it is COMMITTING past commit_timeout_ms (`tasks`: not committed)
  kWaitingForAdmission,  // ready, but the daemon's admission caps hold its round in line
};
const char* HoldupName(Holdup holdup);  // "ROUND_SLOW", as the proto names it

// A task the pipeline waits for: one not acked by the pending round, or one without a stream.
struct TaskHoldup {
  std::string task_id;
  std::string worker_id;           // "": held by no one
  uint64_t session = 0;            // its stream (SessionId); 0: held by no one
  int64_t since_ms = 0;            // wall clock: held since, or missing since
  int64_t last_message_at_ms = 0;  // wall clock, from its stream (0: unknown, or no stream)
};

struct Explanation {
  Holdup holdup = Holdup::kNone;
  PipelineState state = PipelineState::kWaitingForTasks;
  std::string state_reason;    // "paused by an operator", "after 3 consecutive failed ...", ...
  int64_t state_since_ms = 0;  // wall clock; 0: since before the daemon started
  int64_t pending_checkpoint_id = 0;
  CheckpointKind pending_kind = CheckpointKind::kCheckpoint;
  int64_t pending_age_ms = 0;
  int64_t timeout_ms = 0;
  int64_t stuck_threshold_ms = 0;  // when a pending round counts as stuck
  int64_t recent_p95_ms = 0;       // of the last recent_rounds completed rounds (0: none yet)
  int recent_rounds = 0;
  std::vector<TaskHoldup> tasks;    // at most kMaxExplainedTasks, oldest holdups first
  int tasks_total = 0;              // all of them
  int64_t next_trigger_in_ms = -1;  // kNone / kWaitingMinPause: when the next is due; -1: unknown
  int64_t interval_ms = 0;
  int64_t last_completed_checkpoint_id = 0;
  int64_t last_completed_at_ms = 0;
  int64_t position_needed = 0;  // kWaitingForPositions: what every task must report
  // A member of an alignment group: its name, the group's pending round (0: none), and the
  // members holding the group (a round's members not done, or members not ready), with why.
  std::string alignment_group;
  int64_t group_pending_checkpoint_id = 0;
  std::vector<std::pair<PipelineKey, std::string>> group_holding;
  bool group_waiting_for_positions = false;  // the group's position gate is closed
  bool group_waiting_for_ids = false;        // the group's next id is being reserved
  // kCommitting, kCommitOverdue: the checkpoint, since when (its `complete`), and the timeout.
  int64_t committing_checkpoint_id = 0;
  int64_t commit_age_ms = 0;
  int64_t commit_timeout_ms = 0;
  // kWaitingForAdmission (the runtime fills these from the daemon's admission,
  // RoundAdmission::Look): the rounds and predicted bytes in flight, the cap that holds the line
  // and its value, and how many rounds wait ahead of this one. A group member's are its group's.
  int64_t admission_rounds_in_flight = 0;
  int64_t admission_bytes_in_flight = 0;
  std::string admission_cap;  // "admission.max_concurrent_rounds" or "admission.max_inflight_bytes"
  int64_t admission_cap_value = 0;
  int64_t admission_waiting_ahead = 0;
  // The interval the next periodic trigger is scheduled by, and why (AdaptiveInterval).
  int64_t effective_interval_ms = 0;
  std::string effective_interval_reason;
};

inline constexpr size_t kMaxExplainedTasks = 1000;

// When a pending round counts as stuck: `configured_ms`, or when that is 0, max(3 x the recent
// p95, 30 s). A threshold at or past the round's timeout never comes (the timeout does).
int64_t StuckThresholdMs(int64_t recent_p95_ms, int64_t configured_ms);

// "800ms", "4.2s", "41s", "10m5s", "2h5m": short, for a sentence or a table cell.
std::string ShortDuration(int64_t ms);

// One short plain sentence, e.g. "waiting for task 3 of worker w7 for 41s (timeout 10m, p95 of
// the last 20 rounds 800ms); last message from w7 38s ago". Ids are printed as they are: callers
// that render HTML or logs escape them.
std::string ExplainSentence(const PipelineKey& key, const Explanation& e, int64_t now_ms);

}  // namespace ckpt
