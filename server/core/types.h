#pragma once
// Domain types shared by the coordinator, the store and the edges. No protos, no gRPC here.

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

using SteadyTime = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

struct PipelineKey {
  std::string job_id;
  std::string pipeline_id;

  auto operator<=>(const PipelineKey&) const = default;
  bool operator==(const PipelineKey&) const = default;
  // "job/pipeline", for logs and messages.
  std::string ToString() const { return job_id + "/" + pipeline_id; }
};

// FNV-1a of job id, a separator and pipeline id: the same in every run and every build, unlike
// std::hash. What depends on it (a pipeline's event loop, its start offset) must not move between
// restarts.
uint64_t StableKeyHash(const PipelineKey& key);

struct PipelineKeyHash {
  size_t operator()(const PipelineKey& k) const {
    return std::hash<std::string>()(k.job_id) * 31 + std::hash<std::string>()(k.pipeline_id);
  }
};

// kUnreadable: a pipeline whose stored record cannot be read (UnreadableRecord); no coordinator
// runs for it.
enum class PipelineState { kWaitingForTasks, kRunning, kPaused, kFailed, kStopped, kUnreadable };
inline constexpr size_t kPipelineStateCount = 6;
enum class CheckpointKind { kCheckpoint, kSavepoint, kSavepointAndStop };
// kAborted: ended by task loss, a task-set update, takeover, shutdown or deletion. Not the
// pipeline's failure: it does not count in failed_count.
enum class CheckpointStatus { kPending, kCompleted, kFailed, kExpired, kAborted };
// A completed checkpoint's commit phase (docs/PROTOCOL.md, "Commit phase"): kNone when its
// pipeline had none; kCommitting until every task committed its side effects; kCommitted once
// that is durable.
enum class CommitStatus { kNone, kCommitting, kCommitted };

// Short names, as ckptctl prints them and the docs write them ("RUNNING", "SAVEPOINT", "EXPIRED").
const char* PipelineStateName(PipelineState s);
const char* CheckpointKindName(CheckpointKind k);
const char* CheckpointStatusName(CheckpointStatus s);
const char* CommitStatusName(CommitStatus s);  // "NONE", "COMMITTING", "COMMITTED"

// Defaults as documented in docs/man/ckptd.yaml.5, "PIPELINE DEFAULTS"; the config's `defaults:`
// section overrides them.
struct PipelineDefaults {
  int64_t interval_ms = 10000;
  int64_t timeout_ms = 600000;
  int64_t min_pause_ms = 0;
  int32_t tolerable_failures = 0;
  int32_t retained = 10;
  bool operator==(const PipelineDefaults&) const = default;
};

struct PipelineSpec {
  PipelineKey key;
  std::vector<std::string> task_ids;  // the full expected set, no duplicates
  int64_t interval_ms = 10000;
  int64_t timeout_ms = 600000;
  int64_t min_pause_ms = 0;
  int32_t tolerable_failures = 0;
  int32_t retained = 10;
  // > 0: periodic triggers also wait for the tasks' positions
  // (docs/ALIGNMENT.md, "Positions (per pipeline and per group)").
  int64_t position_interval = 0;
  // The alignment group this pipeline checkpoints with ("": none; docs/ALIGNMENT.md).
  std::string alignment_group;
  // > 0: every completed checkpoint has a commit phase, and a commit not done this long after
  // `complete` is overdue (docs/PROTOCOL.md, "Commit phase"). 0: none.
  int64_t commit_timeout_ms = 0;
  // The adaptive interval (docs/PROTOCOL.md, "Adaptive interval"): with max_overhead > 0 (a
  // fraction of the interval), the effective interval is at least the recent p95 duration divided
  // by it; with max_interval_ms > 0 (at least interval_ms), it is at most that, and exactly that
  // while a task reports backlog. 0: off.
  double max_overhead = 0;
  int64_t max_interval_ms = 0;

  bool operator==(const PipelineSpec&) const = default;
};

struct TaskState {
  std::string uri;
  int64_t size_bytes = 0;
  std::string checksum;

  bool operator==(const TaskState&) const = default;
};

// The optional figures an ack carries (Ack in worker.proto); 0: not reported.
struct AckFigures {
  int64_t sync_duration_ms = 0;
  int64_t async_duration_ms = 0;
  int64_t alignment_duration_ms = 0;
  int64_t bytes_processed_during_alignment = 0;

  bool operator==(const AckFigures&) const = default;
};

// One task's part of a checkpoint as operators see it (GetCheckpoint): who acked it, when, and
// what it reported. Kept with the checkpoint: ~100 bytes a task in the store, more with long
// worker ids (at most kMaxIdBytes).
struct TaskFigures {
  std::string task_id;
  std::string worker_id;
  int64_t acked_at_ms = 0;  // wall clock, when the daemon took the ack
  AckFigures reported;

  bool operator==(const TaskFigures&) const = default;
};

struct CompletedCheckpoint {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  int64_t triggered_at_ms = 0;  // wall clock
  int64_t finished_at_ms = 0;   // wall clock
  std::string location;         // savepoints: where the state went
  std::map<std::string, TaskState> task_states;
  // By task id, for the tasks of task_states; empty when not kept (checkpoints stored before
  // figures were, and the copy a restore point holds in memory).
  std::vector<TaskFigures> task_figures;
  int64_t position = 0;         // where the tasks snapshotted (trigger.position); 0: no position
  std::string alignment_group;  // a group round's: the group's name; "" for the pipeline's own
  // As written at completion, kNone or kCommitting; read back kCommitted once the pipeline's
  // progress says so (PipelineProgress::last_committed_id, ApplyProgressMarks).
  CommitStatus commit_status = CommitStatus::kNone;
  int64_t committed_at_ms = 0;  // wall clock; 0: not committed, or the time was not kept
  // A task failed to restore it (PipelineProgress::unrestorable_ids): set when read for a listing.
  bool unrestorable = false;

  bool operator==(const CompletedCheckpoint&) const = default;
};

// A checkpoint of some pipeline, by id: where an operator pointed a pipeline's restore.
struct CheckpointRef {
  PipelineKey key;
  int64_t checkpoint_id = 0;

  auto operator<=>(const CheckpointRef&) const = default;
  bool operator==(const CheckpointRef&) const = default;
  // "job/pipeline@id", for logs and messages.
  std::string ToString() const { return key.ToString() + "@" + std::to_string(checkpoint_id); }
};

// The operator-sticky part of a pipeline's state: what survives a restart.
// WAITING_FOR_TASKS and RUNNING are derived from live sessions, so they are both kActive here.
enum class StickyState { kActive = 0, kPaused = 1, kFailed = 2, kStopped = 3 };

struct PipelineCounters {
  int64_t completed_count = 0;
  int64_t failed_count = 0;
  int64_t expired_count = 0;
  int64_t consecutive_failures = 0;

  bool operator==(const PipelineCounters&) const = default;
};

// Everything the store keeps of a pipeline but its spec: what moves with rounds, sessions and
// operators. It is written on its own (PersistProgress), a few numbers, so that a task lost or
// re-registered in a pipeline of 100,000 tasks does not rewrite the task list.
struct PipelineProgress {
  int64_t generation = 1;
  StickyState sticky = StickyState::kActive;
  PipelineCounters counters;
  int64_t last_completed_id = 0;
  CheckpointKind last_completed_kind = CheckpointKind::kCheckpoint;
  int64_t last_completed_at_ms = 0;  // wall clock; 0 = never
  bool from_config = false;          // declared in the config file: reloads may update it
  // Where an operator pointed the pipeline's restore (RestorePipeline, CreatePipeline's
  // restore_from); none: its newest completed checkpoint. A completion clears it.
  std::optional<CheckpointRef> restore_from;
  // The ids the last write that released any released (ascending): sent again to the workers
  // after a restart, in case the daemon died before telling them.
  std::vector<int64_t> released_ids;
  // The newest checkpoint whose commit phase is durably COMMITTED, and when (0: none): the
  // COMMITTED mark (docs/PROTOCOL.md, "Commit phase"). Every checkpoint with a commit phase up
  // to it is COMMITTED; one above it is COMMITTING.
  int64_t last_committed_id = 0;
  int64_t last_committed_at_ms = 0;
  // Checkpoints of this pipeline a task failed to restore (restore_result ok false; docs/
  // PROTOCOL.md, "Verified restore"), ascending: never a restore point again. Only ids its
  // history still holds.
  std::vector<int64_t> unrestorable_ids;
  // A task failed to restore restore_from (another pipeline's checkpoint, which this pipeline
  // does not mark): the pipeline is FAILED and offers it no more, also after a restart.
  bool restore_from_failed = false;

  bool operator==(const PipelineProgress&) const = default;
};

// A checkpoint as `progress` says it stands: one written COMMITTING reads COMMITTED once the
// COMMITTED mark reached its id, with the mark's time when it is the marked one; one of
// unrestorable_ids reads unrestorable.
void ApplyProgressMarks(const PipelineProgress& progress, CompletedCheckpoint& checkpoint);

// What the store keeps per pipeline besides its checkpoint history and its id counter.
struct PipelineRecord : PipelineProgress {
  PipelineSpec spec;

  const PipelineProgress& progress() const { return *this; }
  bool operator==(const PipelineRecord&) const = default;
};

// One completed round as the store commits it, in one transaction: the checkpoint, the
// pipeline's progress with it counted, and the retention that trims the history.
struct CheckpointCommit {
  PipelineKey key;
  int32_t retained = 10;
  PipelineProgress progress_after;
  CompletedCheckpoint checkpoint;
  // Plain checkpoints the trim must spare although they are outside `retained`: the restore
  // points of pipelines (RestorePins). Ascending.
  std::vector<int64_t> keep;
};

// One id of a pipeline's history (the completed checkpoints and savepoints the store keeps).
struct HistoryEntry {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;

  bool operator==(const HistoryEntry&) const = default;
};

// A pipeline as loaded from the store at start.
struct StoredPipeline {
  PipelineRecord record;
  int64_t id_counter = 0;  // end of the durably reserved id range; ids above it are free
  // The record's spec is not (yet) the stored one: a pipeline new from the config file, or one
  // whose declared spec changed while the daemon was down. Its first write is the whole record.
  bool spec_unsaved = false;
  // The history's ids, oldest first: what the workers may still need (welcome names them).
  std::vector<HistoryEntry> history;
  // The newest completed checkpoint or savepoint (record.last_completed_id) with its task states:
  // where the workers restore from. Absent when the pipeline never completed one.
  std::optional<CompletedCheckpoint> newest;
  // Where the store's history starts (plain ids below it are out of it unless a pin keeps them):
  // the etcd backend's retained_from, which never moves down; 0 for a store without one.
  int64_t retained_from = 0;
  // record.restore_from's checkpoint with its task states (PipelineHost reads it at start).
  std::optional<CompletedCheckpoint> restore_source;
};

// An alignment group (docs/PROTOCOL.md, "Aligned checkpoints"; docs/ALIGNMENT.md): while a pipeline
// is a member, these replace its own interval, timeout, min pause and position_interval.
struct AlignmentGroupSpec {
  std::string name;
  int64_t interval_ms = 10000;
  int64_t timeout_ms = 600000;
  int64_t min_pause_ms = 0;
  int64_t position_interval = 0;  // 0: no position gate
  int64_t commit_timeout_ms = 0;  // replaces its members' (0: no commit phase)
  // The adaptive interval of the group's rounds, as a pipeline's (PipelineSpec::max_overhead).
  double max_overhead = 0;
  int64_t max_interval_ms = 0;

  bool operator==(const AlignmentGroupSpec&) const = default;
};

// What the store keeps of a group beside its spec.
struct GroupProgress {
  int64_t id_counter = 0;     // end of the durably reserved id range
  int64_t last_round_id = 0;  // the newest completed group round
  int64_t last_position = 0;  // its position (0: none)
  int64_t last_completed_at_ms = 0;

  bool operator==(const GroupProgress&) const = default;
};

// A group as the store keeps it.
struct StoredGroup {
  AlignmentGroupSpec spec;
  GroupProgress progress;
  bool from_config = false;  // declared in the config file

  bool operator==(const StoredGroup&) const = default;
};

// A stored record that could not be read, or whose content does not parse or validate: only its
// pipeline or group is quarantined (listed UNREADABLE, nothing triggered for it), every other one
// loads and runs. Keys the store does not know at all are reported too (kUnknownKey), and only
// counted.
struct UnreadableRecord {
  enum class Kind { kPipeline, kGroup, kUnknownKey };
  Kind kind = Kind::kPipeline;
  PipelineKey pipeline;  // kPipeline
  // kGroup: the group; kPipeline: its alignment group when its spec could be read ("" else).
  std::string group;
  // kPipeline: its own records read, and it waits only for its group, which is UNREADABLE (it
  // loads when that group is deleted).
  bool held_for_group = false;
  // What could not be read and why, naming the key or row ("spec /p/pipelines/j/p/spec: not
  // JSON"); for messages, state_reason and logs (escape before printing).
  std::string reason;

  bool operator==(const UnreadableRecord&) const = default;
};

// One completed group round as the store commits it, all or nothing: every member's checkpoint
// (each as its own CheckpointCommit would be written) and the group's progress.
// progress_after.id_counter is a floor: the store keeps the larger of it and the counter it holds.
struct GroupRoundCommit {
  std::string group;
  GroupProgress progress_after;
  std::vector<CheckpointCommit> members;
};

}  // namespace ckpt
