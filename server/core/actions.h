#pragma once
// What the PipelineCoordinator asks its runtime to do. The coordinator decides; the runtime
// (runtime/pipeline_runner) carries actions out in the order given: sends to worker sessions,
// arms Asio timers, writes to the store, logs, counts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "core/admission_queue.h"
#include "core/limits.h"
#include "core/types.h"

namespace ckpt {

using SessionId = uint64_t;

struct SendTrigger {
  std::vector<SessionId> to;
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  int64_t timestamp_ms = 0;
  int64_t generation = 0;
  std::string target;
  int64_t position = 0;  // 0: none
};

struct SendAbort {
  std::vector<SessionId> to;
  int64_t checkpoint_id = 0;
  std::string reason;
};

struct SendComplete {
  std::vector<SessionId> to;
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  bool commit = false;  // the tasks are to commit it and send `committed` (a commit phase)
};

// Every task committed the side effects of `checkpoint_id` and its COMMITTED mark is durable
// (docs/PROTOCOL.md, "Commit phase").
struct SendAllCommitted {
  std::vector<SessionId> to;
  int64_t checkpoint_id = 0;
};

// Tells the sessions that these checkpoints left the history (docs/PROTOCOL.md, "Restore and
// release"): sent after the commit that released them is durable; the tasks may delete their state.
struct SendRelease {
  std::vector<SessionId> to;
  std::vector<int64_t> checkpoint_ids;  // ascending
};

// Tells the sessions the pipeline's state changed (PAUSED, FAILED, STOPPED, deleted, resumed) and
// why, so that workers know why checkpoints stopped. `state` is empty for a deleted pipeline.
struct SendState {
  std::vector<SessionId> to;
  std::optional<PipelineState> state;
  std::string reason;
};

// The answer to a worker's savepoint_request that will not run.
struct SendSavepointRefused {
  SessionId session = 0;
  std::string reason;
  std::optional<CountedLimit> limit;  // refused for this limit (counted)
};

// Ends a worker stream with `status` (ABORTED for a lost takeover, ...).
struct EndSession {
  SessionId session = 0;
  Status status;
};

// The wakeup timer drives periodic triggers, id-reservation retries and missing-task warnings.
// Arming replaces the previous expiry; when it fires the runtime calls OnWakeup().
struct ArmWakeup {
  SteadyTime at;
};
struct CancelWakeup {};

// The pending round's deadline; when it fires the runtime calls OnTimeout(checkpoint_id).
struct ArmTimeout {
  SteadyTime at;
  int64_t checkpoint_id = 0;
};
struct CancelTimeout {};

// Admission (docs/PROTOCOL.md, "Admission"): a round is ready to trigger but the daemon caps the
// rounds in flight. The runtime asks (RoundAdmission::Ask) and calls OnAdmitted once it may go;
// asking again while waiting moves it (a savepoint now waits ahead of the periodic round it waited
// as).
struct AskAdmission {
  AdmissionRequest request;
};
// The admitted round ended, or the round asked for is no longer wanted (RoundAdmission::Leave).
struct LeaveAdmission {};

// Store writes. Completion comes back as OnIdsReserved/OnIdsReserveFailed and
// OnCommitted/OnCommitFailed; PersistRecord and PersistProgress are fire-and-forget (a failure is
// logged and the latest state written again, OnPersistFailed).
struct ReserveIds {
  int64_t new_counter = 0;
};
// The whole record: when the spec changed (or was never written).
struct PersistRecord {
  PipelineRecord record;
  std::function<void(Status)> then;  // as PersistProgress::then
};
// Everything but the spec: generation, sticky state, counters. A few numbers, whatever the size
// of the task set.
struct PersistProgress {
  PipelineKey key;
  PipelineProgress progress;
  // Told the outcome too (an operator call that answers once durable); set by the runtime.
  std::function<void(Status)> then;
};
struct CommitCheckpoint {
  CheckpointCommit commit;
};
// The COMMITTED mark of `checkpoint_id`: a progress write (PipelineProgress::last_committed_id).
// Completion comes back as OnCommitMarked / OnCommitMarkFailed with the id.
struct PersistCommitMark {
  PipelineKey key;
  PipelineProgress progress;
  int64_t checkpoint_id = 0;
};
// The last pin on a checkpoint went away (RestorePins): its pipeline (ref.key) is told
// (OnPinDropped) and may release it.
struct PinDropped {
  CheckpointRef ref;
};

// Verified restore (docs/PROTOCOL.md): reads checkpoint `checkpoint_id` of this pipeline from the
// store, once every write already handed to the store is durable (the unrestorable mark among
// them: a restart must not offer the failed checkpoint again), and answers
// OnRestoreCandidate(failed_id, checkpoint_id, the checkpoint, or none when the store does not
// hold it). A read that fails is retried by the runtime while the coordinator still waits for it
// (AwaitsRestoreCandidate).
struct ReadRestoreCandidate {
  int64_t failed_id = 0;
  int64_t checkpoint_id = 0;
};
// A task failed to restore the restore point (counted: ckptd_restore_failures_total).
struct RestoreFailed {
  int64_t checkpoint_id = 0;
};

// Removes checkpoints from the history (DeleteCheckpoint); completion comes back as
// OnCheckpointsDeleted / OnCheckpointsDeleteFailed with the same ids.
struct DeleteCheckpoints {
  std::vector<int64_t> checkpoint_ids;
};

// A periodic trigger fired `delay` after it could go (its interval passed, its predecessor ended
// and min_pause after it); `held` is how long its predecessor (still in flight or committing, then
// min_pause) kept it past the interval's due time, or, when it waited for admission, how long it
// was due before it triggered (its delay is then 0). The first measures the scheduler, the second
// the rounds.
struct RecordTriggerDelay {
  std::chrono::microseconds delay{0};
  std::chrono::microseconds held{0};
};

// The pending round passed its stuck threshold (CoordinatorOptions::stuck_threshold_ms): the
// runtime logs the pipeline's explanation once, at warning, and counts it
// (ckptd_checkpoints_stuck_total). Once per round.
struct RoundStuck {
  int64_t checkpoint_id = 0;
};

// The COMMITTING checkpoint passed commit_timeout_ms with tasks not committed: counted
// (ckptd_commits_overdue_total), once per checkpoint; the warning is a Log beside it.
struct CommitOverdue {
  int64_t checkpoint_id = 0;
};
// A checkpoint's commit phase ended (COMMITTED): `duration` from `complete` to the durable mark
// (ckptd_commit_duration_seconds).
struct CommitFinished {
  int64_t checkpoint_id = 0;
  std::chrono::microseconds duration{0};
};

// A round ended; for metrics and progress reporting.
struct RoundFinished {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  CheckpointStatus status = CheckpointStatus::kCompleted;
  std::chrono::microseconds duration{0};  // trigger to finish
  std::string reason;                     // empty when completed
  bool requeued = false;                  // a savepoint aborted by task loss, queued again
  std::string location;                   // savepoints: where the state went
};

// Why a worker message was dropped; each is a label of ckptd_ignored_messages_total.
enum class IgnoredReason {
  kUnownedTask,     // about a task the stream did not register
  kNotPending,      // for a round that is not (or no longer) pending
  kDuplicate,       // the task already answered this round
  kUnknownMessage,  // a message kind this daemon does not know (the rpc edge drops it)
  kNoChannel,       // on a Session channel not in use (the rpc edge drops it)
};

// The metric label: "unowned_task", "not_pending", "duplicate", "unknown_message", "no_channel".
constexpr const char* IgnoredReasonLabel(IgnoredReason reason) {
  switch (reason) {
    case IgnoredReason::kUnownedTask: return "unowned_task";
    case IgnoredReason::kNotPending: return "not_pending";
    case IgnoredReason::kDuplicate: return "duplicate";
    case IgnoredReason::kUnknownMessage: return "unknown_message";
    case IgnoredReason::kNoChannel: return "no_channel";
  }
  return "unknown_message";
}

constexpr IgnoredReason kIgnoredReasons[] = {
    IgnoredReason::kUnownedTask, IgnoredReason::kNotPending, IgnoredReason::kDuplicate,
    IgnoredReason::kUnknownMessage, IgnoredReason::kNoChannel};

// --- an alignment group's member (docs/ALIGNMENT.md); only a member's coordinator emits these ---
// Why a member cannot finish a group round.
enum class MemberFailure {
  kDeclined,        // a task declined (or acked at another position), or the member refused
                    // the round (its savepoint cap): this member's failure
  kExpired,         // a task reported that it expired: this member's failure
  kTaskLost,        // a task's stream ended: nobody's failure
  kAborted,         // the member was paused, changed or deleted: nobody's failure
  kPassedPosition,  // a task was already past the round's position: this member's decline
};
// How a group round ends for one member that did not complete it.
enum class MemberOutcome { kAborted, kFailed, kExpired, kStoreFailed };

// The positions a member's tasks reported (heartbeat.positions): the lowest and the highest, and
// whether every task has reported one.
struct MemberPositions {
  int64_t min = 0;
  int64_t max = 0;
  bool all_reported = false;

  bool operator==(const MemberPositions&) const = default;
};

// Every task acked group round `checkpoint_id`: the member's part of the group's one commit.
struct MemberDone {
  int64_t checkpoint_id = 0;
  CheckpointCommit commit;
};
// Every task of the member committed group round `checkpoint_id` (a commit phase): the group
// answers with OnGroupCommitted once every member has.
struct MemberCommitted {
  int64_t checkpoint_id = 0;
};
// The member cannot finish group round `checkpoint_id` (it already told its workers).
struct MemberFailed {
  int64_t checkpoint_id = 0;
  MemberFailure failure = MemberFailure::kAborted;
  std::string reason;
  std::optional<CountedLimit> limit;  // refused for this limit (counted)
};

// A worker message that was dropped.
struct IgnoredMessage {
  IgnoredReason reason;
};

enum class LogLevel { kDebug, kInfo, kWarn, kError };
// The runtime adds job and pipeline to every line.
struct Log {
  LogLevel level = LogLevel::kInfo;
  std::string text;
};

using Action =
    std::variant<SendTrigger, SendAbort, SendComplete, SendRelease, SendState, SendSavepointRefused,
                 SendAllCommitted, EndSession, ArmWakeup, CancelWakeup, ArmTimeout, CancelTimeout,
                 AskAdmission, LeaveAdmission, ReserveIds, PersistRecord, PersistProgress,
                 CommitCheckpoint, PersistCommitMark, DeleteCheckpoints, PinDropped,
                 ReadRestoreCandidate, RestoreFailed, RecordTriggerDelay, RoundStuck, RoundFinished,
                 CommitOverdue, CommitFinished, MemberDone, MemberFailed, MemberCommitted,
                 IgnoredMessage, Log>;
using Actions = std::vector<Action>;

}  // namespace ckpt
