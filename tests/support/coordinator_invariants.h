#pragma once
// A PipelineCoordinator checked after every call against a model of what its actions promise.
// The coordinator fuzzer (tests/fuzz/coordinator_fuzzer.cc) and the coordinator unit tests
// (tests/unit/coordinator_harness.h) drive it through CheckedCoordinator, so every step of every
// unit test and every fuzz input is held to the same rules.
//
// The model carries out the actions the way the runtime does (timers armed and replaced, store
// writes outstanding until the caller reports them done) and checks, after every call:
//   - at most one round pending (a trigger only when no round is open; HasPendingRound agrees);
//   - trigger ids strictly increase, are above the stored counter the pipeline started from and
//     never above the highest counter the store confirmed durable;
//   - SendComplete only for the id handed to the store (CommitCheckpoint) and reported durable by
//     it (OnCommitted of that id), at most once per id; nothing complete before durable; a
//     committed checkpoint holds an ack of every expected task; a round with the store is never
//     aborted;
//   - a SendTrigger only while the pipeline is RUNNING with every task registered, to every live
//     session, tagged with the current generation; never after Delete or BeginShutdown;
//   - the generation never decreases (status, welcome, persisted records);
//   - periodic triggers respect interval_ms and min_pause_ms; with a position_interval every
//     trigger names a position, a multiple of it above the last completed one's, and without one
//     none; a committed checkpoint carries its trigger's position;
//   - a pending round not yet with the store always has its timeout armed, and an idle RUNNING
//     pipeline always has a wakeup armed or an id reservation in flight (the schedule never stops);
//   - more than tolerable_failures consecutive counted failures leave the pipeline FAILED;
//   - a queued savepoint goes before any periodic trigger, starts as soon as it can, and does not
//     stay queued while PAUSED, FAILED, STOPPED or after Delete;
//   - status (pending id, completed_count, last completed id, registered tasks) agrees with the
//     actions seen;
//   - a welcome names the last completed checkpoint as the restore point (once one completed),
//     with only the hello's tasks unless rescaled, and lists it among the retained ids, which hold
//     nothing released; SendRelease comes only with a completion (after its SendComplete; never
//     for it, a savepoint, or an id released before) or with the durable delete of exactly those
//     ids; DeleteCheckpoints never names the restore point nor an id already being deleted;
//   - admission (docs/PROTOCOL.md, "Admission"): while the options' admission has a cap, no round
//     triggers but one admitted (OnAdmitted after its AskAdmission, or TriggerCheckpoint's
//     admit_now), an admission is never held without a round (it leaves when the round ends), and
//     a round waits in line only while the pipeline is RUNNING with no round of its own;
//   - the commit phase (docs/PROTOCOL.md, "Commit phase"): a checkpoint is never COMMITTED (its
//     mark written, all_committed sent) before every expected task committed it; no trigger while
//     one is COMMITTING; a COMMITTING checkpoint is never released nor handed to be deleted.
// (docs/PROTOCOL.md states these rules for workers, from "The model" to "Restore and release";
// docs/DESIGN.md, "Failure and restart", says what a crash keeps.)
//
// No GoogleTest here: the fuzz tree has none. A broken invariant goes to the Report the caller
// gives (the fuzzer traps, the unit harness adds a test failure and carries on).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/pipeline_coordinator.h"

namespace ckpt::testing {

// A hand-driven clock the model can read without moving it. With ticking on, every SteadyNow()
// moves time on by a microsecond (as a real clock does between two reads); Peek() never does.
class TestClock : public Clock {
 public:
  virtual SteadyTime Peek() const = 0;
  virtual bool Ticking() const = 0;
};

// Which coordinator call a step was.
enum class CoordinatorCall {
  kStart,
  kWakeup,
  kTimeout,
  kRegister,
  kSessionEnded,
  kAck,
  kDecline,
  kIdsReserved,
  kIdsReserveFailed,
  kCommitted,
  kCommitFailed,
  kPersistFailed,
  kStoreWritable,
  kPause,
  kResume,
  kTriggerNow,
  kSavepoint,
  kWorkerSavepoint,
  kSavepointCallersGone,
  kShutdown,
  kAbortForShutdown,
  kUpdateSpec,
  kDelete,
  kSetFromConfig,
  kDeleteCheckpoint,
  kCheckpointsDeleted,
  kCheckpointsDeleteFailed,
  kAddPin,
  kPinDropped,
  kRestore,
  kPositions,
  kSetGroup,
  kStartGroupRound,
  kEndGroupRound,
  kTaskCommitted,
  kCommitMarked,
  kCommitMarkFailed,
  kGroupCommitted,
  kAdmitted,
  kBacklog,
  kRestoreResult,
  kRestoreCandidate,
};
const char* CoordinatorCallName(CoordinatorCall call);

// One action on one line, for traces and failure messages.
std::string DescribeAction(const Action& action);

class CheckedCoordinator {
 public:
  // A broken invariant, described with the step and the model's state. The reporter may return
  // (checking goes on) or not.
  using Report = std::function<void(const std::string& message)>;
  // Sees every action of every call, before it is checked.
  using ActionHook = std::function<void(const Action& action)>;

  // `clock` must outlive this object; the coordinator reads it too.
  CheckedCoordinator(const StoredPipeline& stored, const TestClock& clock,
                     CoordinatorOptions options, Report report);
  ~CheckedCoordinator();
  CheckedCoordinator(const CheckedCoordinator&) = delete;
  CheckedCoordinator& operator=(const CheckedCoordinator&) = delete;

  void SetActionHook(ActionHook hook) { hook_ = std::move(hook); }

  // Before Start (PipelineCoordinator::SetStartSlot): no event, nothing to check.
  void SetStartSlot(uint64_t slot) { c_.SetStartSlot(slot); }

  // --- the coordinator's events, each checked ---
  Actions Start(bool restarted);
  // The armed timer fires: the runtime no longer holds it.
  Actions FireWakeup();
  Actions FireTimeout(int64_t checkpoint_id);
  // A handler that runs although its timer was replaced or cancelled (Asio may run one whose
  // expiry changed): the armed timer, if any, stays.
  Actions OnWakeup();
  Actions OnTimeout(int64_t checkpoint_id);
  PipelineCoordinator::Registration OnRegister(SessionId session, const std::string& worker_id,
                                               const std::vector<std::string>& task_ids,
                                               bool takeover, const std::string& principal = {});
  Actions OnSessionEnded(
      SessionId session, const std::string& why,
      PipelineCoordinator::SessionEnd end = PipelineCoordinator::SessionEnd::kLost);
  Actions OnAck(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                const TaskState& state, const AckFigures& reported = {}, int64_t position = 0);
  Actions OnDecline(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                    const std::string& reason, bool expired, int64_t position = 0);
  Actions OnBacklog(SessionId session, bool backlog);
  // Verified restore: a task's restore_result, and the store's answer to ReadRestoreCandidate.
  Actions OnRestoreResult(SessionId session, int64_t checkpoint_id, const std::string& task_id,
                          bool ok, const std::string& reason);
  Actions OnRestoreCandidate(int64_t failed_id, int64_t checkpoint_id,
                             std::optional<CompletedCheckpoint> found);
  Actions OnPositions(SessionId session,
                      const std::vector<std::pair<std::string, int64_t>>& positions);
  // The store's answers. An OnCommitted/OnCommitFailed of another id than the commit the store
  // holds is a wrong report, which must change nothing.
  Actions OnIdsReserved(int64_t counter);
  Actions OnIdsReserveFailed(const Status& error);
  Actions OnCommitted(int64_t checkpoint_id);
  Actions OnCommitFailed(int64_t checkpoint_id, const Status& error);
  Actions OnStoreWritable(bool writable);
  Actions OnPersistFailed(bool whole_record);
  PipelineCoordinator::Outcome Pause();
  PipelineCoordinator::Outcome Resume();
  // `admit_now` as the runtime passes it (PipelineCoordinator::TriggerCheckpoint).
  PipelineCoordinator::Outcome TriggerCheckpoint(
      int64_t* checkpoint_id, const PipelineCoordinator::AdmitNow& admit_now = {});
  // The admission asked for may go (the runtime's answer to AskAdmission).
  Actions OnAdmitted();
  PipelineCoordinator::Outcome RequestSavepoint(const std::string& target, bool stop,
                                                Millis timeout);
  Actions OnWorkerSavepointRequest(SessionId session, const std::string& target, bool stop);
  PipelineCoordinator::Outcome AdmitGroupSavepointRequest(SessionId session,
                                                          const std::string& target, bool stop);
  Actions OnSavepointCallersGone();
  Actions BeginShutdown();
  Actions AbortForShutdown();
  PipelineCoordinator::Outcome UpdateSpec(const PipelineSpec& spec);
  PipelineCoordinator::Outcome Delete();
  Actions SetFromConfig(bool from_config);
  PipelineCoordinator::Outcome DeleteCheckpoint(int64_t checkpoint_id);
  Status AddPin(int64_t checkpoint_id, const PipelineKey& holder);
  Actions OnPinDropped(int64_t checkpoint_id);
  PipelineCoordinator::Outcome Restore(const PipelineKey& source, CompletedCheckpoint checkpoint);
  // An alignment group's member (the group's side is played by the caller).
  Actions SetGroup(std::optional<AlignmentGroupSpec> group, int64_t id_floor = 0);
  Actions StartGroupRound(int64_t checkpoint_id, CheckpointKind kind, int64_t position);
  Actions EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome, const std::string& reason);
  std::pair<bool, std::string> GroupReadiness() const { return c_.GroupReadiness(); }
  MemberPositions GroupPositions() const { return c_.GroupPositions(); }
  int64_t IdFloor() const { return c_.IdFloor(); }
  RestorePoint CurrentRestorePoint() const { return c_.CurrentRestorePoint(); }
  Explanation Explain(int64_t stuck_threshold_ms = 0) const {
    return c_.Explain(stuck_threshold_ms);
  }
  std::optional<CheckpointDetail> DescribeCheckpoint(int64_t checkpoint_id) const {
    return c_.DescribeCheckpoint(checkpoint_id);
  }
  Actions OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids);
  Actions OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                    const Status& error);
  // The commit phase: a task's `committed`, and the store's answers to the COMMITTED mark (of
  // another id than the mark the store holds: a wrong report, which must change nothing).
  Actions OnTaskCommitted(SessionId session, int64_t checkpoint_id, const std::string& task_id);
  Actions OnCommitMarked(int64_t checkpoint_id);
  Actions OnCommitMarkFailed(int64_t checkpoint_id, const Status& error);
  // A member: every member of its group committed the round (the group's side is the caller's).
  Actions OnGroupCommitted(int64_t checkpoint_id);
  int64_t CommittingId() const { return c_.CommittingId(); }
  const std::vector<int64_t>& UnrestorableIds() const { return c_.UnrestorableIds(); }
  bool AwaitsRestoreCandidate(int64_t failed_id) const {
    return c_.AwaitsRestoreCandidate(failed_id);
  }
  int64_t LastCommittedId() const { return c_.LastCommittedId(); }
  std::vector<std::pair<std::string, int64_t>> TaskCommitTimes(int64_t checkpoint_id) const {
    return c_.TaskCommitTimes(checkpoint_id);
  }

  // --- queries, unchecked ---
  PipelineStatus Describe(bool with_task_ids = true) const { return c_.Describe(with_task_ids); }
  PipelineState State() const { return c_.State(); }
  const PipelineKey& key() const { return c_.key(); }
  std::optional<PendingSummary> Pending() const { return c_.Pending(); }
  const std::vector<RoundSummary>& RecentRounds() const { return c_.RecentRounds(); }
  std::vector<SessionId> Sessions() const { return c_.Sessions(); }
  bool HasPendingRound() const { return c_.HasPendingRound(); }
  std::optional<SavepointView> CurrentSavepoint() const { return c_.CurrentSavepoint(); }
  const PipelineSpec& spec() const { return c_.spec(); }
  bool from_config() const { return c_.from_config(); }

  // --- the model's view of the runtime, for a driver that plays the runtime's part ---
  const std::optional<SteadyTime>& armed_wakeup() const { return wakeup_; }
  const std::optional<ArmTimeout>& armed_timeout() const { return timeout_; }
  const std::optional<int64_t>& reserve_outstanding() const { return reserve_outstanding_; }
  const std::optional<int64_t>& commit_outstanding() const { return commit_outstanding_; }
  // The COMMITTED mark handed to the store and not yet reported.
  const std::optional<int64_t>& mark_outstanding() const { return mark_outstanding_; }
  // The checkpoint the model holds COMMITTING (from its `complete` to its all_committed).
  const std::optional<int64_t>& committing() const { return committing_; }
  // Ids handed to the store for deletion (DeleteCheckpoints) and not yet reported.
  const std::set<int64_t>& deletes_outstanding() const { return deletes_outstanding_; }
  const std::optional<int64_t>& open_round() const { return open_round_; }
  // The fallback read handed out (ReadRestoreCandidate) and not answered yet.
  const std::optional<ReadRestoreCandidate>& restore_read_outstanding() const {
    return restore_read_outstanding_;
  }
  int64_t last_trigger_id() const { return last_trigger_id_; }
  // task -> the live session that registered it.
  const std::map<std::string, SessionId>& owners() const { return owner_; }
  // The spec as last accepted (the coordinator's own, checked against it).
  const PipelineSpec& model_spec() const { return spec_; }
  bool deleted() const { return deleted_; }
  // Invariants broken so far.
  int violations() const { return violations_; }

 private:
  struct Step {
    Step(CoordinatorCall call = CoordinatorCall::kStart, int64_t id = 0, SessionId session = 0,
         std::string task = {}, bool store_reported = false)
        : call(call),
          id(id),
          session(session),
          task(std::move(task)),
          store_reported(store_reported) {}
    CoordinatorCall call;
    int64_t id;           // the checkpoint id passed, if any
    SessionId session;    // the session passed, if any
    std::string task;     // the task passed, if any
    bool store_reported;  // OnCommitted/OnCommitFailed: the id is the commit the store held
  };

  void Violation(int line, const char* cond, const std::string& what);
  std::string StepText() const;
  // Where the pipeline stands with the admission, as its actions say.
  enum class ModelAdmission { kNone, kAsked, kAdmitted };
  ModelAdmission admission_ = ModelAdmission::kNone;
  bool asked_as_savepoint_ = false;  // the last ask was in the savepoints' line

  // Checks one call's actions, carrying them out on the model, then the state after it.
  void Apply(Step step, const Actions& actions);
  void OnTrigger(const SendTrigger& t, const PipelineStatus& status, SteadyTime now);
  void OnCommit(const CheckpointCommit& commit);
  void OnComplete(const SendComplete& s);
  void OnRoundFinished(const RoundFinished& r, SteadyTime now);
  void CheckState();
  void ForgetSession(SessionId session);
  // Every task of the spec committed the COMMITTING checkpoint (here, in this life).
  bool EveryTaskCommitted() const {
    return committed_tasks_ == std::set<std::string>(spec_.task_ids.begin(), spec_.task_ids.end());
  }

  const TestClock& clock_;
  PipelineCoordinator c_;
  Report report_;
  // The options' admission had a cap at construction (the fuzzer and the tests keep it so).
  const bool admitting_;
  ActionHook hook_;
  Millis tolerance_{0};
  Step current_;
  int steps_ = 0;
  int violations_ = 0;

  // Runtime: timers.
  std::optional<SteadyTime> wakeup_;
  std::optional<ArmTimeout> timeout_;

  // Store.
  std::optional<int64_t> reserve_outstanding_;
  std::optional<int64_t> commit_outstanding_;
  int64_t initial_counter_ = 0;
  int64_t reserved_confirmed_ = 0;
  std::set<int64_t> handed_;
  std::set<int64_t> completed_;
  std::map<int64_t, CheckpointKind> handed_kinds_;
  std::set<int64_t> completed_savepoints_;  // of completed_
  std::set<int64_t> released_;
  std::set<int64_t> deletes_outstanding_;
  std::set<int64_t> deleted_now_;  // the ids of the OnCheckpointsDeleted being checked
  bool completed_here_ = false;    // a round completed in this model's life
  bool restored_ = false;  // an operator's Restore or a failed restore since the last completion
  // Verified restore: the checkpoints marked unrestorable (RestoreFailed of the own restore
  // point), and the fallback read handed out and not answered yet.
  std::set<int64_t> unrestorable_;
  std::optional<ReadRestoreCandidate> restore_read_outstanding_;
  int64_t stored_last_completed_at_ms_ = 0;

  // Model.
  PipelineSpec spec_;
  std::optional<int64_t> open_round_;
  CheckpointKind open_kind_ = CheckpointKind::kCheckpoint;
  int64_t open_position_ = 0;  // the open round's trigger.position
  bool complete_sent_ = false;
  bool counted_failure_ = false;  // a counted failure finished in the call being applied
  int64_t store_failed_id_ = 0;   // the last round whose commit the store failed
  bool store_writable_ = true;    // as last told (OnStoreWritable)
  int64_t last_trigger_id_ = 0;
  std::optional<SteadyTime> last_trigger_at_;
  std::optional<SteadyTime> last_finished_at_;
  int64_t generation_ = 0;
  int64_t persisted_generation_ = 0;
  PipelineSpec written_spec_;  // the spec of the last whole-record write
  int64_t expected_completed_count_ = 0;
  int64_t last_completed_id_ = 0;
  bool deleted_ = false;
  bool shutting_down_ = false;
  std::map<std::string, SessionId> owner_;  // task -> the stream that registered it
  // An alignment group's member: its ids and schedule are the group's, and its part of a round
  // goes to the group (MemberDone), which stands in for the store.
  bool member_ = false;
  bool open_is_group_ = false;   // the open round is its group's (StartGroupRound)
  int64_t group_position_ = 0;   // the position StartGroupRound passed
  int64_t group_ids_floor_ = 0;  // the highest id a group round used here
  // The commit phase: which handed checkpoints had one, the one COMMITTING, the tasks that
  // committed it (here, in this life: a restart asks them again), and the mark with the store.
  std::set<int64_t> handed_with_commit_phase_;
  std::optional<int64_t> committing_;
  std::set<std::string> committed_tasks_;
  std::optional<int64_t> mark_outstanding_;
};

}  // namespace ckpt::testing
