#pragma once
// PipelineCoordinator decides when one pipeline checkpoints. It is a deterministic state machine:
// events in (time reached, task registered or lost, ack, decline, store durable or failed,
// savepoint asked, pause, resume), actions out (core/actions.h). It never blocks, does no I/O and
// reads time only from the injected Clock, so its tests drive time by hand.
//
// Threading: not thread-safe. The runtime calls every method on the pipeline's strand only.
//
// Fencing (docs/DESIGN.md): a timeout names its checkpoint id and is checked against the round's
// phase; acks and declines name their checkpoint id; a round handed to the store (completing) is
// never aborted, and a store completion is never dropped.
//
// One class, one concept: a pipeline's every event goes through this one entry point, because
// what an event means depends on all of its state at once (a lost task aborts the round,
// requeues its savepoint and bumps the generation). What can be owned apart is: the round
// (pending_round.h), the ids (id_reservation.h), the history (checkpoint_history.h), the
// savepoint queue (savepoint_queue.h), the sessions and task owners, the positions
// (position_tracking.h); see
// docs/DESIGN.md, "The coordinator's parts". The handlers are in pipeline_coordinator*.cc by
// concern (rounds and schedule, sessions, restore, positions, group membership, inspection).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/actions.h"
#include "core/adaptive_interval.h"
#include "core/checkpoint_history.h"
#include "core/clock.h"
#include "core/commit_phase.h"
#include "core/explanation.h"
#include "core/id_reservation.h"
#include "core/maybe_time.h"
#include "core/packed_task_states.h"
#include "core/pending_round.h"
#include "core/position_gate.h"
#include "core/position_tracking.h"
#include "core/recent_durations.h"
#include "core/restore_pins.h"
#include "core/round_admission.h"
#include "core/savepoint_queue.h"
#include "core/session_table.h"
#include "core/start_spread.h"
#include "core/task_id_set.h"
#include "core/task_owners.h"
#include "core/types.h"

namespace ckpt {

struct CoordinatorOptions {
  // While tasks are missing, a warning naming them is logged at most this often.
  Millis missing_tasks_warn_interval{30000};
  // Ids reserved per store write; a new block is reserved when half of the current one is used.
  int64_t id_block = 100;
  // A failed id reservation is retried after this long.
  Millis reserve_retry{1000};
  // Failed and expired rounds kept in memory for ListCheckpoints.
  size_t recent_rounds_kept = 10;
  // Where savepoints go when the request names no target: <savepoint_root>/<job>/<pipeline>/<id>,
  // job and pipeline encoded by EncodePathSegment.
  std::string savepoint_root = "./ckptd-data/savepoints";
  // Savepoints the pipeline's workers may ask for in any minute (limits.
  // savepoint_requests_per_minute); beyond it a request is refused. Operators are not limited.
  int64_t savepoint_requests_per_minute = 6;
  // Savepoints the history may hold (limits.max_savepoints_per_pipeline): beyond it a new one is
  // refused (RESOURCE_EXHAUSTED) until one is deleted.
  int64_t max_savepoints = 100;
  // A pending round older than this is stuck (RoundStuck, once); 0: automatic, max(3 x the
  // recent p95 duration, 30 s). No notice when that is not below the round's timeout.
  int64_t stuck_threshold_ms = 0;
  // The daemon's restore pins (restore_pins.h); null: none (a pipeline alone, as in most tests).
  // Must outlive the coordinator.
  RestorePins* pins = nullptr;
  // Pipelines whose workers connect together (a fleet starting, every worker reconnecting after
  // a daemon restart or a takeover, a job's pipelines resumed together) would trigger together
  // and stay together: rule 4 counts each interval from the actual trigger, so a clump never
  // spreads by itself, and a clump of thousands of rounds meets the network and the store at
  // once. So when its tasks become all registered, and when it is resumed, a pipeline already
  // overdue holds its next periodic trigger until its start offset has passed: a fixed fraction
  // (its start slot's, else its key's) of min(start_spread, interval); nullopt: of the interval.
  // One not yet due keeps its schedule. 0: no offset. Savepoints and TriggerCheckpoint do not
  // wait for it.
  std::optional<Millis> start_spread = Millis{0};
  // The daemon's admission caps (docs/PROTOCOL.md, "Admission"); null: none (most tests). While
  // it has a cap, a round ready to trigger asks first (AskAdmission) and goes once admitted
  // (OnAdmitted); TriggerCheckpoint is admitted at once or refused. Must outlive the coordinator.
  const RoundAdmission* admission = nullptr;
  // With a position_interval, tasks that never reported a position are named in a warning at most
  // this often (they hold every periodic trigger).
  Millis positions_warn_interval{60000};

  bool operator==(const CoordinatorOptions&) const = default;
};

// One shared copy of each distinct CoordinatorOptions alive: a daemon's coordinators (up to
// 100,000 of them) are made with the same options, and a copy each, its savepoint root on the
// heap, cost about 150 bytes a pipeline. Equal options give the same object while any holder
// lives. Threading: any thread (a mutex held for a comparison per distinct options alive).
std::shared_ptr<const CoordinatorOptions> SharedCoordinatorOptions(
    const CoordinatorOptions& options);

// Where a worker restores from (docs/PROTOCOL.md, "Restore and release").
struct RestorePoint {
  int64_t checkpoint_id = 0;  // 0: none (a fresh pipeline); the rest is then empty
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  std::string location;
  PipelineKey source;  // the pipeline whose checkpoint it is
  // The source's task set differs from this pipeline's: task_states holds every state of the
  // source, for the engine to redistribute. Otherwise only the states of the hello's tasks.
  bool rescaled = false;
  bool operator_set = false;  // RestorePipeline or restore_from, until the next completion
  int64_t position = 0;       // where the checkpoint was taken (0: no position)
  // It is COMMITTING: the tasks commit what it holds (again: idempotently) and send `committed`
  // (docs/PROTOCOL.md, "Commit phase").
  bool commit_pending = false;
  std::map<std::string, TaskState> task_states;
};

// What a worker learns in `welcome`.
struct WelcomeInfo {
  int64_t generation = 0;
  PipelineState state = PipelineState::kWaitingForTasks;
  int64_t last_completed_checkpoint_id = 0;
  CheckpointKind last_completed_kind = CheckpointKind::kCheckpoint;
  RestorePoint restore;
  // Every id of this pipeline the daemon still references (its history), oldest first: a worker
  // that was away may delete the state of any other.
  std::vector<int64_t> retained_checkpoint_ids;
  int64_t last_committed_checkpoint_id = 0;  // the newest durably COMMITTED (0: none)
  // The restore point failed and nothing replaced it (the pipeline is FAILED): `restore` is empty
  // although the pipeline has state; a worker must not start as a fresh pipeline.
  bool restore_withheld = false;
};

// A finished round kept in memory (failed and expired ones are not in the store).
struct RoundSummary {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  CheckpointStatus status = CheckpointStatus::kFailed;
  int64_t triggered_at_ms = 0;
  int64_t finished_at_ms = 0;
  int acked_tasks = 0;
  int expected_tasks = 0;
  std::string failure_reason;
  int64_t position = 0;  // trigger.position; 0: none
};

// One task's part of a round in memory (GetCheckpoint of the pending or a recent failed round).
struct TaskDetail {
  std::string task_id;
  std::string worker_id;    // who acked it, or holds it while it has not ("": no one)
  int64_t acked_at_ms = 0;  // 0: not acked
  TaskState state;
  AckFigures reported;
};

// GetCheckpoint's answer from memory: the round, and every task of it by task id.
struct CheckpointDetail {
  RoundSummary round;
  std::string location;  // savepoints: where the state goes
  std::vector<TaskDetail> tasks;
};

// Task names listed in a status or a pending round: at most this many (the totals count all), so
// that a pipeline of 100,000 tasks answers in a message of ordinary size.
inline constexpr size_t kMaxListedTaskNames = 1000;

// The pending round as ListCheckpoints shows it.
struct PendingSummary {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  int64_t triggered_at_ms = 0;
  bool completing = false;                  // every task acked; the store is writing it
  std::vector<std::string> acked_tasks;     // the first kMaxListedTaskNames, in task order
  std::vector<std::string> awaiting_tasks;  // likewise
  int acked_total = 0;
  int awaiting_total = 0;
  int expected_tasks = 0;
  int64_t position = 0;  // trigger.position; 0: none
};

// The savepoint this pipeline is working on, if any: queued (id 0) or triggered.
struct SavepointView {
  int64_t checkpoint_id = 0;  // 0 while queued
  bool stop = false;
  int acked_tasks = 0;
  int expected_tasks = 0;
  std::string location;  // once triggered
};

struct PipelineStatus {
  PipelineSpec spec;
  PipelineState state = PipelineState::kWaitingForTasks;
  int64_t generation = 0;
  int expected_tasks = 0;  // the spec's, also when spec.task_ids is left out
  int registered_tasks = 0;
  std::vector<std::string> missing_tasks;  // the first kMaxListedTaskNames, in spec order
  int missing_tasks_total = 0;
  int64_t pending_checkpoint_id = 0;
  int64_t last_completed_checkpoint_id = 0;
  int64_t last_completed_at_ms = 0;
  int64_t committing_checkpoint_id = 0;  // 0: none
  int64_t last_committed_checkpoint_id = 0;
  // The adaptive interval (docs/PROTOCOL.md, "Adaptive interval"): what the next periodic trigger
  // is scheduled by, and why. A member's is its group's (the runtime fills it in).
  int64_t effective_interval_ms = 0;
  std::string effective_interval_reason;
  PipelineCounters counters;
  int sessions = 0;
  bool from_config = false;
  RestorePoint restore;  // without task states
  // Its failed restore (FAILED because of it, or choosing an older restore point); "" otherwise.
  std::string state_reason;
};

class PipelineCoordinator {
 public:
  // `clock` must outlive the coordinator.
  PipelineCoordinator(const StoredPipeline& stored, const Clock& clock,
                      const CoordinatorOptions& options);
  PipelineCoordinator(const PipelineCoordinator&) = delete;
  PipelineCoordinator& operator=(const PipelineCoordinator&) = delete;

  // The pipeline's place in the order its daemon made pipelines (StartSlotFraction). Before
  // Start; without it the start offset comes from the key.
  void SetStartSlot(uint64_t slot) { start_slot_ = slot; }

  // First event. `restarted`: loaded from the store at daemon start, which bumps the generation
  // and takes the schedule's baseline from the last completed checkpoint.
  Actions Start(bool restarted);

  // --- timers ---
  Actions OnWakeup();
  // The round asked for (AskAdmission) may go: it triggers now if it still can; otherwise it
  // leaves (LeaveAdmission). Ignored unless one was asked for.
  Actions OnAdmitted();
  // What the next round is predicted to write, for admission: the sum of the restore point's
  // task sizes (the last completed checkpoint's; 0 before the first).
  int64_t PredictedRoundBytes() const { return restore_ ? restore_->state_bytes : 0; }
  // Whether a stream of this pipeline reports backlog now (heartbeat.backlog).
  bool HasBacklog() const { return backlog_streams_ > 0; }
  // Whether a round ready to trigger waits for admission now (`pipeline why`).
  bool WaitingForAdmission() const { return InLine(admission_); }
  // The round's timer: its stuck threshold (RoundStuck, and the timer again for the deadline), or
  // its deadline (the round expires).
  Actions OnTimeout(int64_t checkpoint_id);

  // --- worker sessions ---
  struct Registration {
    Status status;  // not OK: the stream is ended with it and nothing was registered
    WelcomeInfo welcome;
    Actions actions;  // to run after `welcome` is sent
  };
  // `principal`: who the stream authenticated as ("" without auth). A takeover may replace only
  // streams of the same principal: the one rule of the access policy (auth/access_policy.h) that
  // needs to know who holds a task, so it is decided here; otherwise the hello is refused with
  // PERMISSION_DENIED and nothing changes.
  Registration OnRegister(SessionId session, const std::string& worker_id,
                          const std::vector<std::string>& task_ids, bool takeover,
                          const std::string& principal = {});
  // How a stream ended: a goodbye releases its tasks cleanly (logged at info); anything else
  // (cancel, lease expiry, a broken stream, shutdown) loses them (logged at warning).
  enum class SessionEnd { kLost, kGoodbye };
  // The stream ended. Unknown sessions are ignored.
  Actions OnSessionEnded(SessionId session, const std::string& why,
                         SessionEnd end = SessionEnd::kLost);
  // `reported`: the ack's optional figures (kept with the checkpoint, for GetCheckpoint).
  // `position`: where the task snapshotted; with a round that carries a position, an ack at any
  // other one declines the round.
  Actions OnAck(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                const TaskState& state, const AckFigures& reported = {}, int64_t position = 0);
  // `position`: where the task is (0: not said); past the round's position, the next round
  // steps one interval further.
  Actions OnDecline(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                    const std::string& reason, bool expired, int64_t position = 0);
  // A heartbeat's backlog flag, when it changed for `session` (the runtime sends changes only):
  // while any stream reports one, the effective interval is max_interval_ms (docs/PROTOCOL.md,
  // "Adaptive interval"), from the next round's end. A stream that ends is forgotten.
  Actions OnBacklog(SessionId session, bool backlog);
  // A heartbeat's positions (task id, position): kept per task (the highest) when the pipeline
  // has a position_interval, and ignored otherwise. Tasks the stream does not hold are ignored.
  Actions OnPositions(SessionId session,
                      const std::vector<std::pair<std::string, int64_t>>& positions);

  // --- the commit phase (pipeline_coordinator_commits.cc; docs/PROTOCOL.md, "Commit phase") ---
  // A task's `committed`: counted when it names the COMMITTING checkpoint and a task of this
  // stream not counted yet; otherwise ignored (IgnoredMessage). The last one writes the COMMITTED
  // mark (PersistCommitMark), whose answer comes as OnCommitMarked or OnCommitMarkFailed.
  Actions OnTaskCommitted(SessionId session, int64_t checkpoint_id, const std::string& task_id);
  // The mark is durable: COMMITTED, all_committed to the sessions, rounds may start again.
  Actions OnCommitMarked(int64_t checkpoint_id);
  // Retried after CoordinatorOptions::reserve_retry; never a failed round.
  Actions OnCommitMarkFailed(int64_t checkpoint_id, const Status& error);
  // A member: every member of its group committed group round `checkpoint_id` (MemberCommitted
  // went to the group): its COMMITTED mark may be written.
  Actions OnGroupCommitted(int64_t checkpoint_id);
  // The checkpoint that is COMMITTING (0: none).
  int64_t CommittingId() const;
  // The newest durably COMMITTED checkpoint (0: none), and when.
  int64_t LastCommittedId() const { return commits_ ? commits_->last_committed_id : 0; }
  int64_t LastCommittedAtMs() const { return commits_ ? commits_->last_committed_at_ms : 0; }
  // GetCheckpoint's per-task commit times (wall clock, 0: not committed or not known) of the
  // newest completed checkpoint while it has a commit phase here; empty for any other id.
  std::vector<std::pair<std::string, int64_t>> TaskCommitTimes(int64_t checkpoint_id) const;
  // The commit phase's effective timeout: the group's while a member (0: none).
  int64_t CommitTimeoutMs() const;

  // --- store completions ---
  Actions OnIdsReserved(int64_t counter);
  Actions OnIdsReserveFailed(const Status& error);
  Actions OnCommitted(int64_t checkpoint_id);
  Actions OnCommitFailed(int64_t checkpoint_id, const Status& error);
  // Whether the store takes writes (runtime/store_health.h). While it does not, no round starts
  // (its commit would only fail), TriggerCheckpoint is UNAVAILABLE, and a queued savepoint waits
  // within its timeout. When it does again, an overdue pipeline waits its start offset, so that a
  // fleet held by a full disk does not trigger all at once.
  Actions OnStoreWritable(bool writable);
  // A PersistRecord (`whole_record`) or PersistProgress write failed; the runtime calls this
  // after a pause. Writes the state of now, at once or when the store takes writes again.
  Actions OnPersistFailed(bool whole_record);

  // --- operators ---
  struct Outcome {
    Status status;
    Actions actions;
  };
  Outcome Pause();
  Outcome Resume();
  // Starts a checkpoint now. FAILED_PRECONDITION while a round is pending or when not RUNNING.
  // While the daemon caps admission, `admit_now` is asked first (RoundAdmission::AdmitNow with the
  // runtime's ticket): its refusal (RESOURCE_EXHAUSTED naming the cap) is the answer.
  using AdmitNow = std::function<Status(const AdmissionRequest&)>;
  Outcome TriggerCheckpoint(int64_t* checkpoint_id, const AdmitNow& admit_now = {});
  // Asks for a savepoint (operator or worker). Joins one already queued or pending when `stop` and
  // `target` (as asked) agree; otherwise FAILED_PRECONDITION. `timeout` counts from now.
  Outcome RequestSavepoint(const std::string& target, bool stop, Millis timeout);
  // A worker's savepoint_request on `session`: the pipeline's timeout applies; a refusal is
  // answered on that stream (savepoint_refused) and logged.
  Actions OnWorkerSavepointRequest(SessionId session, const std::string& target, bool stop);
  // A member's worker asks for a savepoint, which is its group's: the same checks as
  // OnWorkerSavepointRequest (attribution, savepoint_requests_per_minute; a target is refused),
  // the refusal sent in the actions. OK: the runtime asks the group for the round.
  Outcome AdmitGroupSavepointRequest(SessionId session, const std::string& target, bool stop);
  // Every operator call that waited for the savepoint went away (cancelled): a savepoint still
  // queued is dropped, unless a worker asked for it too (a worker's request waits until its
  // timeout). One already triggered runs to its end.
  Actions OnSavepointCallersGone();
  // Daemon shutdown: no new triggers from now on; a pending round may still finish.
  Actions BeginShutdown();
  // Daemon shutdown, after the grace period: a pending round (not with the store) is aborted
  // while every session is still there to hear it. The runtime then ends the sessions.
  Actions AbortForShutdown();
  // Replaces the spec (same key). A changed task set bumps the generation, aborts the pending
  // round (unless it is with the store) and ends the streams of tasks that left the set.
  Outcome UpdateSpec(const PipelineSpec& spec);
  // The pipeline is being deleted: tells the sessions (state), releases every checkpoint and
  // savepoint of its history, ends every stream with NOT_FOUND, stops the timers, fails a queued
  // savepoint and aborts a pending round. Nothing is persisted from now on; the caller deletes
  // the record, and sends the SendRelease and EndSession actions only once that delete is
  // durable. A round already with the store stays until its completion arrives, which then only
  // reports the outcome (RoundFinished). FAILED_PRECONDITION while a checkpoint of this pipeline
  // is another pipeline's restore point (RestorePins::HeldByOthers; its own is let go).
  Outcome Delete();

  // --- member of an alignment group (pipeline_coordinator_group.cc; docs/ALIGNMENT.md) ---
  // With `group` (the group's policy) the pipeline is a member: it schedules no round of its own
  // and reserves no ids. Its group starts rounds (StartGroupRound), makes them durable
  // (OnCommitted, as for a round of its own) or ends them (EndGroupRound). The last ack emits
  // MemberDone instead of CommitCheckpoint, and a round that fails here emits MemberFailed. While
  // its part waits for the group's commit, its own progress writes wait too: written before the
  // group commit, they would be overwritten by the older progress it carries.
  // Without `group`: on its own again; its ids continue above `id_floor` (the group's counter),
  // reserved before its first round. A pending group round (not done) is aborted.
  Actions SetGroup(std::optional<AlignmentGroupSpec> group, int64_t id_floor = 0);
  bool group_member() const { return group_ != nullptr; }
  // A member: its group's effective interval and why, shown by Describe as its own (the group's
  // rounds are its rounds).
  void SetGroupInterval(int64_t ms, std::string reason);
  // Whether a group round could start here now; if not, why (the group names it).
  std::pair<bool, std::string> GroupReadiness() const;
  // What the tasks reported (heartbeat.positions), for the group's position gate.
  MemberPositions GroupPositions() const;
  // Changes whenever GroupPositions may have (a task's report, a task forgotten, the gate made).
  uint64_t PositionsVersion() const;
  // The group's round: triggers every task as a round of its own would, without a timer (the
  // group keeps the deadline). Not ready: MemberFailed at once, nothing sent.
  Actions StartGroupRound(int64_t checkpoint_id, CheckpointKind kind, int64_t position);
  // The group ended the round without completing it: `outcome` says how this member records it.
  // Ignored for a round that is not pending here (it failed here first).
  Actions EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome, const std::string& reason);
  // The highest id this pipeline used or reserved: a group it joins hands out ids above it.
  int64_t IdFloor() const;

  // --- the restore loop (pipeline_coordinator_restore.cc) ---
  // Its rules for workers: docs/PROTOCOL.md, "Restore and release".
  // Pins one of this pipeline's checkpoints as a restore point (of another pipeline, or its own):
  // OK once RestorePins holds it, when the history holds it and keeps holding it (not being
  // deleted, not leaving with the commit in flight); NOT_FOUND otherwise; FAILED_PRECONDITION
  // while it is COMMITTING (docs/PROTOCOL.md, "Commit phase"). Needs options.pins.
  // `holder`: the pipeline whose restore point it becomes.
  Status AddPin(int64_t checkpoint_id, const PipelineKey& holder);
  // A pin on one of this pipeline's checkpoints went away: a plain checkpoint outside `retained`
  // that no pin holds any more leaves the history (DeleteCheckpoints, then released).
  Actions OnPinDropped(int64_t checkpoint_id);
  // RestorePipeline: `checkpoint` of `source` (this pipeline or another; the caller pinned it with
  // the source's AddPin) is the restore point until the next completion. FAILED_PRECONDITION
  // unless no task is registered or the pipeline is PAUSED, STOPPED or FAILED with nothing
  // pending (the caller then removes its pin). Bumps the generation, turns FAILED and STOPPED
  // into PAUSED, ends every live stream (ABORTED) so that its worker comes back to the new
  // restore point, and persists (the last PersistProgress or PersistRecord of the actions). The
  // restore point it replaces loses its pin (PinDropped when that was the last).
  Outcome Restore(const PipelineKey& source, CompletedCheckpoint checkpoint);
  // The restore point as ckptctl pipeline get shows it (checkpoint_id 0: none), all task states.
  RestorePoint CurrentRestorePoint() const;

  // --- verified restore (pipeline_coordinator_restore.cc; docs/PROTOCOL.md, "Verified
  // restore") ---
  // A task's restore_result. Ignored unless it is a failure naming the restore point, from a
  // stream holding `task_id`, not marked yet. Then: marked unrestorable (its own checkpoint),
  // counted (RestoreFailed), the pending round aborted (unless it is with the store: its
  // completion moves the restore point anyway), and either the fallback begins (the newest older
  // checkpoint of the history not marked: ReadRestoreCandidate; no round starts and no hello is
  // welcomed meanwhile) or, with no fallback allowed (restore_from, an alignment group, a
  // COMMITTING or COMMITTED checkpoint) or none left, the pipeline becomes FAILED with the reason.
  Actions OnRestoreResult(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                          bool ok, const std::string& reason);
  // ReadRestoreCandidate's answer: `found` (checkpoint `checkpoint_id`, or none when the store
  // does not hold it: the next older one is tried) becomes the restore point, the generation is
  // bumped and every stream ends ABORTED "restored to checkpoint ...". Ignored unless the fallback
  // from `failed_id` is still under way.
  Actions OnRestoreCandidate(int64_t failed_id, int64_t checkpoint_id,
                             std::optional<CompletedCheckpoint> found);
  // Whether the fallback from `failed_id` still waits for its read (the runtime retries a failed
  // read only while it does).
  bool AwaitsRestoreCandidate(int64_t failed_id) const;
  // The checkpoints of this pipeline a task failed to restore, ascending (ckptctl checkpoint list
  // marks them).
  const std::vector<int64_t>& UnrestorableIds() const { return occasional_or_none().unrestorable; }

  // Removes a savepoint or a retained checkpoint from the history (docs/PROTOCOL.md, "Restore and
  // release"). NOT_FOUND when the history does not hold it; FAILED_PRECONDITION for the restore
  // point, which is also the newest completed checkpoint (the store keeps the pipeline's progress
  // with it). Otherwise the store deletes it (DeleteCheckpoints) and OnCheckpointsDeleted or
  // OnCheckpointsDeleteFailed follows; a call for an id already being deleted joins that delete
  // (no action).
  Outcome DeleteCheckpoint(int64_t checkpoint_id);
  // The delete is durable: the ids leave the history and are released to the sessions.
  Actions OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids);
  Actions OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                    const Status& error);

  // Whether the config file declares this pipeline (a reload may update it; the API may not
  // delete it). Persisted.
  Actions SetFromConfig(bool from_config);

  // --- queries ---
  // `with_task_ids` false leaves spec.task_ids empty (a listing of many pipelines must not copy
  // 100,000 names of each).
  PipelineStatus Describe(bool with_task_ids = true) const;
  PipelineState State() const;
  // The one query safe from any thread, while the strand works: spec_.key never changes after
  // construction (UpdateSpec refuses another key, and assigns the spec's other fields only).
  const PipelineKey& key() const { return spec_.key; }
  std::optional<PendingSummary> Pending() const;
  // GetCheckpoint of the pending round or of the newest failed one (the only failed round whose
  // tasks are kept: one round's worth of memory a pipeline); nothing for any other id, which
  // only the store may hold (pipeline_coordinator_inspect.cc).
  std::optional<CheckpointDetail> DescribeCheckpoint(int64_t checkpoint_id) const;
  // ExplainPipeline: what holds the pipeline up now (explanation.h). The tasks' last message
  // times are left for the runtime, whose streams know them. `stuck_threshold_ms` 0: automatic.
  Explanation Explain(int64_t stuck_threshold_ms = 0) const;
  // Newest first.
  const std::vector<RoundSummary>& RecentRounds() const { return occasional_or_none().recent; }
  std::vector<SessionId> Sessions() const;
  // The principal each live session authenticated as ("" without auth).
  std::vector<std::pair<SessionId, std::string>> SessionPrincipals() const;
  bool HasPendingRound() const { return pending_ != nullptr; }
  // Every task acked the pending round: it is with the store (or, a member's, with its group).
  // A member: its part of the pending group round is done and waits for the group's verdict.
  bool GroupPartDone() const { return pending_ && pending_->completing() && pending_->of_group(); }
  // Delete's refusal, if it would refuse now (the restore points of others), without acting.
  Status CheckDeletable() const;
  std::optional<SavepointView> CurrentSavepoint() const;
  const PipelineSpec& spec() const { return spec_; }
  bool from_config() const { return from_config_; }

 private:
  // A stream's warnings are logged at most once per kSessionWarnInterval; the others counted.
  static constexpr Millis kSessionWarnInterval{10000};
  struct WarnBudget {
    SteadyTime next_at{};
    uint64_t held_back = 0;
  };
  // A registered stream. Its tasks are those task_owner_ says it holds, all of them within
  // [first_task, last_task] (indices into expected_; the whole set after a change of the set),
  // so that its loss scans only that range.
  struct SessionInfo {
    std::string worker_id;
    uint32_t first_task = 0;
    uint32_t last_task = 0;
    WarnBudget warn_budget;
    std::string principal;
    int64_t registered_at_ms = 0;  // wall clock: since when it holds its tasks
    bool backlog = false;          // its last heartbeat said backlog (OnBacklog)
  };
  enum class TriggerCause { kPeriodic, kManual, kSavepoint };
  // Whether the daemon caps admission now (options_->admission): rounds then ask first.
  bool AdmissionOn() const { return options_->admission && options_->admission->enabled(); }
  // What a round of this pipeline asks for: its line, its due time, its predicted bytes.
  AdmissionRequest RequestForAdmission(AdmissionClass line) const;
  // After every event (Rearm): an admitted pipeline without a round, and a waiting one that is no
  // longer ready to trigger, leave (LeaveAdmission), so that no place is held for nothing.
  void SettleAdmission(Actions& out);

  Outcome RequestSavepoint(const std::string& target, bool stop, Millis timeout, bool worker_asked);
  // spec_ = spec but for the key, which is equal (checked) and which other threads read (key()):
  // even assigning an equal string writes to it.
  void AdoptSpecKeepingKey(const PipelineSpec& spec);
  Outcome AnswerWorkerSavepoint(SessionId session, const std::string& target, bool stop,
                                bool for_group);
  // Whether a warning about `session` may be logged now (at most one per kSessionWarnInterval per
  // stream); the number held back since the last one is added to `text` when it may.
  bool AllowSessionWarning(SessionId session, std::string* text);
  // Starts a round if one may start now, else does nothing; returns whether it started.
  bool TryTrigger(CheckpointKind kind, const std::string& target, TriggerCause cause, Actions& out);
  // Why a round ended without completing, as far as the counters care.
  enum class FailureCause {
    kCounted,     // a checkpoint's decline or expiry: counts toward tolerable_failures
    kNotCounted,  // a savepoint's decline or expiry, a store failure: failed or expired, but not
                  // toward tolerable_failures
    kAborted,     // task loss, takeover, task-set update, shutdown, deletion: ABORTED, no counter
  };
  // Ends the pending round as failed, expired or aborted and tells the workers; a member also
  // tells its group (MemberFailed), unless `tell_group` is false (the group ended it).
  void FailRound(CheckpointStatus status, const std::string& reason, FailureCause cause,
                 Actions& out, bool tell_group = true);
  void FinishQueuedSavepoint(const std::string& reason, Actions& out);
  // Whether an ack or decline (`what`) concerns the pending round and a task of this stream;
  // when not, records why it is ignored.
  // Whether `session` holds `task_id`; when not, counts and (now and then) logs the message `what`
  // as ignored.
  bool HoldsTask(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                 const char* what, Actions& out);
  bool AcceptsRoundMessage(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                           const char* what, Actions& out);
  void MaybeReserveIds(Actions& out);
  void BumpGeneration(const std::string& why, Actions& out);
  // sticky_ = state, noting when (ExplainPipeline says since when a pipeline is PAUSED, ...).
  void SetSticky(StickyState state) {
    sticky_ = state;
    sticky_since_ms_ = clock_.WallMs();
  }
  // --- positions (pipeline_coordinator_positions.cc) ---
  // Creates or drops positions_ as spec_.position_interval says, and sets its threshold.
  void SyncPositionGate();
  // The last checkpoint's position: the restore point's (0: none).
  int64_t BasePosition() const;
  // Whether the position gate lets a periodic trigger go (always, without a position_interval).
  bool PositionsOpen() const;
  // When a periodic trigger due at `due` is due once the positions are counted too: not before
  // the gate opened (for RecordTriggerDelay, which measures the scheduler, not the positions).
  SteadyTime PeriodicDueWithPositions(SteadyTime due) const;
  // The position a round triggered now carries (0 without a position_interval); uses up the
  // one-interval step a passed position asked for.
  int64_t NextRoundPosition();
  // A task of the pending round is at `position`: past the round's, the next round steps one
  // interval further.
  void NotePassedPosition(int64_t position);
  // The warning naming tasks that never reported a position, when it is due.
  void WarnUnreportedPositions(SteadyTime now, Actions& out);
  void ForgetPositions(const std::vector<std::string>& tasks);

  // --- the commit phase (pipeline_coordinator_commits.cc) ---
  // A round just became durable: with a commit phase (`phase`: it was written COMMITTING) it is
  // COMMITTING from now on, and streams that registered while it was with the store (their
  // welcome named the checkpoint before it) end ABORTED "commit pending", to come back with
  // commit_pending.
  void BeginCommitPhase(int64_t checkpoint_id, CheckpointKind kind, bool phase, Actions& out);
  // A commit phase starting now, overdue after the timeout of now (none: never overdue).
  std::unique_ptr<CommitPhase> NewCommitPhase(int64_t checkpoint_id, CheckpointKind kind,
                                              bool group_decides) const;
  // The mark, when due (every task committed, no write in flight, its retry time reached).
  void MaybeWriteCommitMark(Actions& out);
  // The overdue warning, once, when due.
  void MaybeWarnCommitOverdue(SteadyTime now, Actions& out);
  bool Committing() const { return commits_ && commits_->phase && commits_->phase->committing(); }
  // FAILED_PRECONDITION naming the COMMITTING checkpoint, for `what` ("a new round"); OK when
  // none is.
  Status RefuseWhileCommitting(const std::string& what) const;

  // Writes the progress, or the whole record while the spec is unsaved.
  void Persist(Actions& out);
  // Tells every session the current state (or, `deleted`, that the pipeline is gone) and why.
  void AnnounceState(const std::string& reason, Actions& out, bool deleted = false) const;
  void Rearm(Actions& out);
  void RememberRound(RoundSummary summary);
  // `departed`: tasks it held that have just left the set (UpdateSpec), lost with it.
  void LoseSession(SessionId session, const std::string& why, Actions& out,
                   SessionEnd end = SessionEnd::kLost, std::vector<std::string> departed = {});

  bool AllTasksRegistered() const { return task_owner_.held() == expected_.size(); }
  // The session holding `task`; TaskOwners::kNobody when none does (or it is no task of ours).
  SessionId OwnerOf(const std::string& task) const {
    return task_owner_.at(expected_.IndexOf(task));
  }
  // The first `max_names` tasks not registered, in spec order; `total` (if given) counts them all.
  std::vector<std::string> MissingTasks(size_t max_names = kMaxListedTaskNames,
                                        int* total = nullptr) const;
  // When the next periodic round is due: the interval's due (ScheduledDue), and not before
  // min_pause has passed since the last round ended.
  std::optional<SteadyTime> NextPeriodicDue() const;
  // The adaptive interval's inputs now (core/adaptive_interval.h), and fixing it: when a round
  // ends, at construction and when the spec changes.
  IntervalInputs AdaptiveIntervalInputs() const;
  void FixEffectiveInterval();
  // Why the effective interval is what it is (GetPipeline, `pipeline why`).
  std::string EffectiveIntervalReason() const;
  // When the schedule alone says the next periodic round is due: the start offset, then one
  // effective interval after the last trigger. Past it, a round still in flight (or in its commit)
  // holds the next one back; RecordTriggerDelay reports that hold apart from the timer's own
  // lateness.
  SteadyTime ScheduledDue() const;
  // Called when the tasks have just become all registered, and on resume: no periodic trigger
  // before the start offset has passed (unless a hold is already running, or the schedule does
  // not have the pipeline due yet).
  void HoldForStartOffset();
  std::optional<SteadyTime> DesiredWakeup() const;
  // The record as the store will hold it once every write already handed to it is applied.
  PipelineRecord ProjectedRecord() const;
  PipelineProgress ProjectedProgress() const;
  std::string SavepointLocation(const std::string& target, int64_t id) const;
  // What `welcome` says about restoring the tasks of a hello.
  RestorePoint RestorePointFor(const std::vector<std::string>& task_ids) const;
  // A round just became durable: it is the restore point now, joins the history, and pushes the
  // plain checkpoints beyond `retained` out of it (as the store's commit trimmed them), which are
  // released to the sessions.
  void AdoptCompleted(int64_t checkpoint_id, CheckpointKind kind, std::string location,
                      int64_t position, std::map<std::string, TaskState> task_states,
                      const std::vector<int64_t>& keep, Actions& out);
  // Whether the restore point's task set differs from the expected one.
  bool RestoreSetDiffers() const;
  // Why the pipeline is PAUSED, FAILED or STOPPED (Pipeline.state_reason, `pipeline why`), or
  // what its restore is doing; "" when nothing holds it.
  std::string StateReason() const;
  // --- verified restore ---
  bool IsUnrestorable(int64_t checkpoint_id) const;
  // The restore point failed and nothing replaced it yet: a welcome carries no restore point, no
  // round starts, and Resume is refused (an operator chooses with RestorePipeline).
  bool RestoreBlocked() const;
  // A fallback's read is under way: no round starts and hellos are refused (UNAVAILABLE).
  bool LookingForFallback() const;
  // The fallback from the failed restore point: the newest checkpoint of the history below
  // `below` that is neither marked nor being deleted is read (ReadRestoreCandidate); with none,
  // the pipeline becomes FAILED.
  void LookForFallback(int64_t below, Actions& out);
  // The failed restore point, once no round is with the store: FAILED when no fallback is
  // allowed (restore_from, a group, a commit phase past it), else LookForFallback.
  void DecideRestoreFailure(Actions& out);
  // The same when a failure waits for it (its round with the store failed instead).
  void MaybeDecideRestoreFailure(Actions& out);
  // FAILED because of the failed restore: `why` is its state reason.
  void FailForRestore(const std::string& why, Actions& out);
  // The restore point moved (a completion, RestorePipeline): a failure of the old one is over.
  // Marks of checkpoints that left the history are dropped.
  void ForgetRestoreFailure();
  // RESOURCE_EXHAUSTED when the history holds options_->max_savepoints savepoints.
  Status CheckSavepointRoom() const;
  bool IsPinned(int64_t checkpoint_id) const;
  // Plain checkpoints outside `retained` that no pin holds and no delete is under way for: they
  // leave the history (DeleteCheckpoints). Pins dropped while the daemon was down, or just now.
  void DeleteUnpinnedOutsideWindow(Actions& out);

  // Constant after construction.
  const Clock& clock_;
  const std::shared_ptr<const CoordinatorOptions> options_;  // shared by equal options

  // Everything below is accessed only on the pipeline's strand (see the class comment).
  // Declared so that the small members fill what alignment would leave empty: this object exists
  // once per pipeline.
  PipelineSpec spec_;
  TaskIdSet expected_;
  int64_t generation_ = 1;
  int64_t sticky_since_ms_ = 0;  // wall clock of the last change of sticky_ (0: before this start)
  // Wall clock since when a task of the set has had no stream (0: all held). At start, the start.
  int64_t tasks_missing_since_ms_ = 0;
  RecentDurations recent_durations_;  // of the last completed rounds
  // The interval the next periodic trigger is scheduled by (FixEffectiveInterval), and the streams
  // reporting backlog now.
  int64_t effective_interval_ms_ = 0;
  uint32_t backlog_streams_ = 0;
  StickyState sticky_ = StickyState::kActive;
  PipelineCounters counters_;
  int64_t last_completed_id_ = 0;
  int64_t last_completed_at_ms_ = 0;
  CheckpointKind last_completed_kind_ = CheckpointKind::kCheckpoint;
  bool from_config_ = false;
  bool spec_unsaved_ = false;  // the spec changed since the last whole-record write
  bool shutting_down_ = false;
  bool deleted_ = false;  // after Delete: nothing is sent or written any more

  IdReservation ids_;  // the durable ids free to hand out, and their reservation
  bool store_writable_ = true;
  bool persist_owed_ = false;  // a failed write waits for the store to take writes again
  AdmissionState admission_ = AdmissionState::kNone;

  // Schedule.
  MaybeTime last_trigger_at_;
  MaybeTime last_finished_at_;
  MaybeTime armed_wakeup_;
  // No periodic trigger before this: when the last hold began (the task set completed, or a
  // resume), plus the start offset.
  MaybeTime start_hold_until_;
  // SetStartSlot's; kNoStartSlot: the key's fraction (a sentinel, not an optional: 8 bytes a
  // pipeline less, at 100,000 of them).
  static constexpr uint64_t kNoStartSlot = UINT64_MAX;
  uint64_t start_slot_ = kNoStartSlot;
  SteadyTime next_missing_warn_at_;

  // Where workers restore from: the newest completed round with its task states (null before the
  // first). Its states are the pending round's acks, moved here once durable, so a pipeline holds
  // one set of states between rounds. `restore_rescaled_` caches RestoreSetDiffers() (a hello
  // must not compare 100,000 task names): kept in step by AdoptCompleted and UpdateSpec.
  // Only what a welcome needs: not the checkpoint's times, its tasks' figures (the store keeps
  // those) or its group, and its source only when it is another pipeline's (a key is 64 bytes;
  // a pipeline holds one of these all its life).
  struct HeldRestorePoint {
    HeldRestorePoint(const PipelineKey& own, const PipelineKey& source, bool operator_set,
                     CompletedCheckpoint checkpoint)
        : other_source(source == own ? nullptr : std::make_unique<const PipelineKey>(source)),
          checkpoint_id(checkpoint.checkpoint_id),
          position(checkpoint.position),
          kind(checkpoint.kind),
          operator_set(operator_set),
          location(std::move(checkpoint.location)),
          task_states(checkpoint.task_states),
          state_bytes(SumSizes(checkpoint.task_states)) {}
    static int64_t SumSizes(const std::map<std::string, TaskState>& states) {
      // Workers' figures: clamped and saturating (core/admission_queue.h).
      int64_t sum = 0;
      for (const auto& [task, state] : states) {
        sum = AddPredictedBytes(sum, std::clamp<int64_t>(state.size_bytes, 0, kMaxPredictedBytes));
      }
      return sum;
    }
    // The pipeline whose checkpoint it is, `own` unless another's.
    const PipelineKey& source(const PipelineKey& own) const {
      return other_source ? *other_source : own;
    }
    std::unique_ptr<const PipelineKey> other_source;  // null: this pipeline's own
    int64_t checkpoint_id = 0;
    int64_t position = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    bool operator_set = false;  // RestorePipeline or restore_from: pinned; a completion ends it
    std::string location;
    PackedTaskStates task_states;
    // The sum of its tasks' size_bytes: what the next round is predicted to write (admission).
    int64_t state_bytes = 0;
  };
  std::unique_ptr<const HeldRestorePoint> restore_;
  // The history as the store keeps it, what leaves it and what its last release was. Declared
  // no_unique_address so that restore_rescaled_ fills its tail padding.
  [[no_unique_address]] CheckpointHistory history_;
  bool restore_rescaled_ = false;  // RestoreSetDiffers(), for restore_ (see there)

  // Only with a position_interval (null otherwise: an ungrouped pipeline without positions pays
  // one pointer).
  std::unique_ptr<PositionTracking> positions_;

  // The alignment group's policy while a member (null otherwise: an ungrouped pipeline pays one
  // pointer).
  std::unique_ptr<const AlignmentGroupSpec> group_;

  // On the heap, made for each round: a pipeline without a round pending (most of them, most of
  // the time, at 100,000 pipelines) then pays a pointer instead of the round's 224 bytes.
  std::unique_ptr<PendingRound> pending_;
  // The commit phase: only for a pipeline that has or had one (null otherwise: a pipeline without
  // a commit phase pays one pointer).
  struct Commits {
    int64_t last_committed_id = 0;  // durable
    int64_t last_committed_at_ms = 0;
    // The newest completed checkpoint's phase, until the next round starts (COMMITTING, then
    // COMMITTED with its tasks' times for GetCheckpoint).
    std::unique_ptr<CommitPhase> phase;
    // Streams registered while a round was with the store: their welcome named the checkpoint
    // before it, so they cannot know what it commits (BeginCommitPhase).
    std::vector<SessionId> registered_while_completing;
  };
  std::unique_ptr<Commits> commits_;
  Commits& commits();
  SavepointQueue savepoints_;  // the savepoint waiting to start, and the workers' request rate

  SessionTable<SessionInfo> sessions_;
  // Who holds each task, and which registered in this process (a second registration is a
  // return), by index into expected_.
  TaskOwners task_owner_;

  // A failed round's tasks, as GetCheckpoint shows them (Occasional::last_failed_tasks).
  struct FailedRoundTasks {
    int64_t checkpoint_id = 0;
    std::map<std::string, TaskState> acked;
    std::vector<TaskFigures> figures;
  };

  // What most pipelines never need, made on first use (occasional()): the others pay a pointer.
  struct Occasional {
    WarnBudget unknown_warn_budget;  // for messages of streams no longer registered
    // The failed rounds, newest first, at most options_->recent_rounds_kept. A vector, not a
    // deque: libstdc++'s deque allocates ~600 bytes even when empty (and inserting at the front
    // of ten is cheap).
    std::vector<RoundSummary> recent;
    // The tasks of the newest failed round (recent's first, when ids match), for GetCheckpoint.
    std::unique_ptr<const FailedRoundTasks> last_failed_tasks;
    // A member's: its group's effective interval and why (SetGroupInterval; 0: not told yet).
    int64_t group_interval_ms = 0;
    std::string group_interval_reason;
    // Verified restore: this pipeline's checkpoints a task failed to restore (ascending; only ids
    // of the history), and the failure of the restore point held now, if any (null: none).
    std::vector<int64_t> unrestorable;
    struct RestoreFailure {
      int64_t checkpoint_id = 0;
      std::string what;  // "restore of N failed on task T: REASON"
      std::string why;   // the state reason once FAILED because of it
      // The checkpoint a fallback's read is under way for (0: none).
      int64_t reading_id = 0;
    };
    std::unique_ptr<RestoreFailure> restore_failure;
  };
  std::unique_ptr<Occasional> occasional_;
  Occasional& occasional();
  // What is held, or an empty one: for reading without making it.
  const Occasional& occasional_or_none() const;
};

}  // namespace ckpt
