// CheckedCoordinator's model of a pipeline (coordinator_invariants.h lists the rules). One
// concept over ~800 lines: the model mirrors the coordinator's state (the round, the sessions,
// the history, the timers and the store's queue as the runtime keeps them) and checks every
// rule against that one mirror after every call; split, each half would need the mirror.
#include "support/coordinator_invariants.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace ckpt::testing {

const char* CoordinatorCallName(CoordinatorCall call) {
  switch (call) {
    case CoordinatorCall::kStart: return "Start";
    case CoordinatorCall::kWakeup: return "OnWakeup";
    case CoordinatorCall::kTimeout: return "OnTimeout";
    case CoordinatorCall::kRegister: return "OnRegister";
    case CoordinatorCall::kSessionEnded: return "OnSessionEnded";
    case CoordinatorCall::kAck: return "OnAck";
    case CoordinatorCall::kDecline: return "OnDecline";
    case CoordinatorCall::kIdsReserved: return "OnIdsReserved";
    case CoordinatorCall::kIdsReserveFailed: return "OnIdsReserveFailed";
    case CoordinatorCall::kCommitted: return "OnCommitted";
    case CoordinatorCall::kCommitFailed: return "OnCommitFailed";
    case CoordinatorCall::kPersistFailed: return "OnPersistFailed";
    case CoordinatorCall::kStoreWritable: return "OnStoreWritable";
    case CoordinatorCall::kPause: return "Pause";
    case CoordinatorCall::kResume: return "Resume";
    case CoordinatorCall::kTriggerNow: return "TriggerCheckpoint";
    case CoordinatorCall::kAdmitted: return "OnAdmitted";
    case CoordinatorCall::kSavepoint: return "RequestSavepoint";
    case CoordinatorCall::kWorkerSavepoint: return "OnWorkerSavepointRequest";
    case CoordinatorCall::kSavepointCallersGone: return "OnSavepointCallersGone";
    case CoordinatorCall::kShutdown: return "BeginShutdown";
    case CoordinatorCall::kAbortForShutdown: return "AbortForShutdown";
    case CoordinatorCall::kUpdateSpec: return "UpdateSpec";
    case CoordinatorCall::kDelete: return "Delete";
    case CoordinatorCall::kSetFromConfig: return "SetFromConfig";
    case CoordinatorCall::kDeleteCheckpoint: return "DeleteCheckpoint";
    case CoordinatorCall::kCheckpointsDeleted: return "OnCheckpointsDeleted";
    case CoordinatorCall::kCheckpointsDeleteFailed: return "OnCheckpointsDeleteFailed";
    case CoordinatorCall::kAddPin: return "AddPin";
    case CoordinatorCall::kPinDropped: return "OnPinDropped";
    case CoordinatorCall::kRestore: return "Restore";
    case CoordinatorCall::kPositions: return "OnPositions";
    case CoordinatorCall::kBacklog: return "OnBacklog";
    case CoordinatorCall::kRestoreResult: return "OnRestoreResult";
    case CoordinatorCall::kRestoreCandidate: return "OnRestoreCandidate";
    case CoordinatorCall::kSetGroup: return "SetGroup";
    case CoordinatorCall::kStartGroupRound: return "StartGroupRound";
    case CoordinatorCall::kEndGroupRound: return "EndGroupRound";
    case CoordinatorCall::kTaskCommitted: return "OnTaskCommitted";
    case CoordinatorCall::kCommitMarked: return "OnCommitMarked";
    case CoordinatorCall::kCommitMarkFailed: return "OnCommitMarkFailed";
    case CoordinatorCall::kGroupCommitted: return "OnGroupCommitted";
  }
  return "?";
}

std::string DescribeAction(const Action& action) {
  if (auto* a = std::get_if<SendTrigger>(&action)) {
    return "SendTrigger id=" + std::to_string(a->checkpoint_id) +
           " kind=" + CheckpointKindName(a->kind) + " gen=" + std::to_string(a->generation) +
           " to=" + std::to_string(a->to.size());
  }
  if (auto* a = std::get_if<SendAbort>(&action)) {
    return "SendAbort id=" + std::to_string(a->checkpoint_id) + " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<SendComplete>(&action)) {
    return "SendComplete id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<SendRelease>(&action)) {
    std::string ids;
    for (int64_t id : a->checkpoint_ids) ids += " " + std::to_string(id);
    return "SendRelease" + ids;
  }
  if (auto* a = std::get_if<SendState>(&action)) {
    return std::string("SendState ") + (a->state ? PipelineStateName(*a->state) : "deleted") +
           " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<SendSavepointRefused>(&action)) {
    return "SendSavepointRefused " + std::to_string(a->session) + " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<EndSession>(&action)) {
    return "EndSession " + std::to_string(a->session) + " " + a->status.ToString();
  }
  if (std::holds_alternative<ArmWakeup>(action)) return "ArmWakeup";
  if (std::holds_alternative<CancelWakeup>(action)) return "CancelWakeup";
  if (auto* a = std::get_if<ArmTimeout>(&action)) {
    return "ArmTimeout id=" + std::to_string(a->checkpoint_id);
  }
  if (std::holds_alternative<CancelTimeout>(action)) return "CancelTimeout";
  if (auto* a = std::get_if<ReserveIds>(&action)) {
    return "ReserveIds " + std::to_string(a->new_counter);
  }
  if (auto* a = std::get_if<PersistRecord>(&action)) {
    return "PersistRecord gen=" + std::to_string(a->record.generation);
  }
  if (auto* a = std::get_if<PersistProgress>(&action)) {
    return "PersistProgress gen=" + std::to_string(a->progress.generation);
  }
  if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
    return "CommitCheckpoint id=" + std::to_string(a->commit.checkpoint.checkpoint_id);
  }
  if (std::holds_alternative<RecordTriggerDelay>(action)) return "RecordTriggerDelay";
  if (auto* a = std::get_if<AskAdmission>(&action)) {
    return std::string("AskAdmission ") +
           (a->request.line == AdmissionClass::kSavepoint ? "savepoint" : "periodic") +
           " bytes=" + std::to_string(a->request.bytes);
  }
  if (std::holds_alternative<LeaveAdmission>(action)) return "LeaveAdmission";
  if (auto* a = std::get_if<RoundFinished>(&action)) {
    return "RoundFinished id=" + std::to_string(a->checkpoint_id) + " " +
           CheckpointStatusName(a->status) + (a->requeued ? " requeued" : "") + " (" + a->reason +
           ")";
  }
  if (auto* a = std::get_if<IgnoredMessage>(&action)) {
    return std::string("Ignored ") + IgnoredReasonLabel(a->reason);
  }
  if (auto* a = std::get_if<MemberDone>(&action)) {
    return "MemberDone id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<MemberFailed>(&action)) {
    return "MemberFailed id=" + std::to_string(a->checkpoint_id) + " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<SendAllCommitted>(&action)) {
    return "SendAllCommitted id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<PersistCommitMark>(&action)) {
    return "PersistCommitMark id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<CommitOverdue>(&action)) {
    return "CommitOverdue id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<MemberCommitted>(&action)) {
    return "MemberCommitted id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<CommitFinished>(&action)) {
    return "CommitFinished id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<Log>(&action)) return "Log " + a->text;
  return "?";
}

#define INVARIANT(cond, what)                        \
  do {                                               \
    if (!(cond)) Violation(__LINE__, #cond, (what)); \
  } while (0)

CheckedCoordinator::CheckedCoordinator(const StoredPipeline& stored, const TestClock& clock,
                                       CoordinatorOptions options, Report report)
    : clock_(clock),
      c_(stored, clock, options),
      report_(std::move(report)),
      admitting_(options.admission && options.admission->enabled()) {
  initial_counter_ = stored.id_counter;
  reserved_confirmed_ = stored.id_counter;
  stored_last_completed_at_ms_ = stored.record.last_completed_at_ms;
  spec_ = stored.record.spec;
  written_spec_ = spec_;  // the stored record holds it
  expected_completed_count_ = stored.record.counters.completed_count;
  last_completed_id_ = stored.record.last_completed_id;
  generation_ = stored.record.generation;
  persisted_generation_ = generation_;
  if (stored.newest && stored.newest->commit_status == CommitStatus::kCommitting &&
      stored.newest->checkpoint_id > stored.record.last_committed_id &&
      !stored.record.restore_from) {
    committing_ = stored.newest->checkpoint_id;  // COMMITTING when the daemon stopped
  }
}

CheckedCoordinator::~CheckedCoordinator() = default;

std::string CheckedCoordinator::StepText() const {
  std::string text = "step #" + std::to_string(steps_) + " " + CoordinatorCallName(current_.call);
  std::string args;
  auto add = [&args](const std::string& part) { args += (args.empty() ? "" : ", ") + part; };
  if (current_.session) add("session " + std::to_string(current_.session));
  if (current_.id) add("checkpoint " + std::to_string(current_.id));
  if (!current_.task.empty()) add("task " + current_.task);
  return text + "(" + args + ")";
}

void CheckedCoordinator::Violation(int line, const char* cond, const std::string& what) {
  ++violations_;
  char state[256];
  std::snprintf(state, sizeof state,
                "open round %" PRId64 ", last trigger %" PRId64 ", store commit %" PRId64
                ", confirmed counter %" PRId64 ", deleted %d",
                open_round_.value_or(0), last_trigger_id_, commit_outstanding_.value_or(0),
                reserved_confirmed_, deleted_ ? 1 : 0);
  report_("INVARIANT BROKEN (coordinator_invariants.cc:" + std::to_string(line) + "): " + what +
          "\n  check: " + cond + "\n  in " + StepText() + "; " + state);
}

// ---- events ---------------------------------------------------------------------------------

Actions CheckedCoordinator::Start(bool restarted) {
  if (restarted && stored_last_completed_at_ms_ > 0) {
    // Start() maps the last completion onto the steady clock: the schedule continues from it.
    const Millis age{std::max<int64_t>(0, clock_.WallMs() - stored_last_completed_at_ms_)};
    last_trigger_at_ = clock_.Peek() - age;
    last_finished_at_ = last_trigger_at_;
  }
  Actions out = c_.Start(restarted);
  Apply({CoordinatorCall::kStart}, out);
  return out;
}

Actions CheckedCoordinator::FireWakeup() {
  wakeup_.reset();
  return OnWakeup();
}

Actions CheckedCoordinator::FireTimeout(int64_t checkpoint_id) {
  if (timeout_ && timeout_->checkpoint_id == checkpoint_id) timeout_.reset();
  return OnTimeout(checkpoint_id);
}

Actions CheckedCoordinator::OnWakeup() {
  Actions out = c_.OnWakeup();
  Apply({CoordinatorCall::kWakeup}, out);
  return out;
}

Actions CheckedCoordinator::OnTimeout(int64_t checkpoint_id) {
  Actions out = c_.OnTimeout(checkpoint_id);
  Apply({CoordinatorCall::kTimeout, checkpoint_id}, out);
  return out;
}

PipelineCoordinator::Registration CheckedCoordinator::OnRegister(
    SessionId session, const std::string& worker_id, const std::vector<std::string>& task_ids,
    bool takeover, const std::string& principal) {
  auto reg = c_.OnRegister(session, worker_id, task_ids, takeover, principal);
  // Before the actions: a takeover's EndSession then forgets only the old stream's other tasks.
  if (reg.status.ok()) {
    for (const auto& t : task_ids) owner_[t] = session;
  }
  Apply({CoordinatorCall::kRegister, 0, session}, reg.actions);
  if (reg.status.ok()) {
    INVARIANT(reg.welcome.generation == c_.Describe().generation,
              "welcome carries a generation other than the pipeline's");
    INVARIANT(reg.welcome.generation >= generation_, "welcome generation went back");
    const RestorePoint& restore = reg.welcome.restore;
    if (completed_here_ && !restored_) {
      INVARIANT(restore.checkpoint_id == last_completed_id_,
                "welcome's restore point is not the last completed checkpoint");
    }
    INVARIANT(restore.source != spec_.key || !unrestorable_.count(restore.checkpoint_id),
              "welcome names a checkpoint marked unrestorable");
    INVARIANT(!restore_read_outstanding_, "a hello welcomed while the fallback is being read");
    if (restore.checkpoint_id > 0 && restore.source == spec_.key) {
      const auto& retained = reg.welcome.retained_checkpoint_ids;
      INVARIANT(
          std::find(retained.begin(), retained.end(), restore.checkpoint_id) != retained.end(),
          "welcome's restore point is not among its retained ids");
      if (!restore.rescaled) {
        const std::set<std::string> hello(task_ids.begin(), task_ids.end());
        for (const auto& [task, state] : restore.task_states) {
          INVARIANT(hello.count(task), "welcome hands over the state of a task of another stream");
        }
      }
    }
    for (int64_t id : reg.welcome.retained_checkpoint_ids) {
      INVARIANT(!released_.count(id), "welcome lists a released id as retained");
    }
  }
  return reg;
}

Actions CheckedCoordinator::OnSessionEnded(SessionId session, const std::string& why,
                                           PipelineCoordinator::SessionEnd end) {
  Actions out = c_.OnSessionEnded(session, why, end);
  ForgetSession(session);
  Apply({CoordinatorCall::kSessionEnded, 0, session}, out);
  return out;
}

Actions CheckedCoordinator::OnAck(SessionId session, int64_t checkpoint_id,
                                  const std::string& task_id, const TaskState& state,
                                  const AckFigures& reported, int64_t position) {
  Actions out = c_.OnAck(session, checkpoint_id, task_id, state, reported, position);
  Apply({CoordinatorCall::kAck, checkpoint_id, session, task_id}, out);
  return out;
}

Actions CheckedCoordinator::OnDecline(SessionId session, int64_t checkpoint_id,
                                      const std::string& task_id, const std::string& reason,
                                      bool expired, int64_t position) {
  Actions out = c_.OnDecline(session, checkpoint_id, task_id, reason, expired, position);
  Apply({CoordinatorCall::kDecline, checkpoint_id, session, task_id}, out);
  return out;
}

Actions CheckedCoordinator::OnBacklog(SessionId session, bool backlog) {
  Actions out = c_.OnBacklog(session, backlog);
  Apply({CoordinatorCall::kBacklog, 0, session}, out);
  return out;
}

Actions CheckedCoordinator::OnRestoreResult(SessionId session, int64_t checkpoint_id,
                                            const std::string& task_id, bool ok,
                                            const std::string& reason) {
  const RestorePoint before = c_.CurrentRestorePoint();
  Actions out = c_.OnRestoreResult(session, checkpoint_id, task_id, ok, reason);
  for (const Action& action : out) {
    if (!std::holds_alternative<RestoreFailed>(action)) continue;
    INVARIANT(!ok, "a successful restore_result counted as a failure");
    INVARIANT(before.checkpoint_id == checkpoint_id,
              "a restore_result of another checkpoint than the restore point counted");
    if (before.source == spec_.key) {  // the marks are of this pipeline's own checkpoints
      INVARIANT(!unrestorable_.count(checkpoint_id), "a checkpoint failed its restore twice");
      unrestorable_.insert(checkpoint_id);
    }
    restored_ = true;  // the restore point may move away from the last completed checkpoint
  }
  Apply({CoordinatorCall::kRestoreResult, checkpoint_id, session, task_id}, out);
  return out;
}

Actions CheckedCoordinator::OnRestoreCandidate(int64_t failed_id, int64_t checkpoint_id,
                                               std::optional<CompletedCheckpoint> found) {
  if (restore_read_outstanding_ && restore_read_outstanding_->failed_id == failed_id &&
      restore_read_outstanding_->checkpoint_id == checkpoint_id) {
    restore_read_outstanding_.reset();
  }
  const bool adopted = found.has_value();
  Actions out = c_.OnRestoreCandidate(failed_id, checkpoint_id, std::move(found));
  for (const Action& action : out) {
    if (auto* end = std::get_if<EndSession>(&action)) ForgetSession(end->session);
  }
  Apply({CoordinatorCall::kRestoreCandidate, checkpoint_id}, out);
  if (adopted && !out.empty() && c_.CurrentRestorePoint().checkpoint_id == checkpoint_id) {
    INVARIANT(checkpoint_id < failed_id, "a fallback went to a newer checkpoint");
    INVARIANT(c_.Sessions().empty(), "a stream outlived a fallback");
  }
  return out;
}

Actions CheckedCoordinator::OnPositions(
    SessionId session, const std::vector<std::pair<std::string, int64_t>>& positions) {
  Actions out = c_.OnPositions(session, positions);
  Apply({CoordinatorCall::kPositions, 0, session}, out);
  return out;
}

Actions CheckedCoordinator::OnIdsReserved(int64_t counter) {
  reserve_outstanding_.reset();
  reserved_confirmed_ = std::max(reserved_confirmed_, counter);
  Actions out = c_.OnIdsReserved(counter);
  Apply({CoordinatorCall::kIdsReserved}, out);
  return out;
}

Actions CheckedCoordinator::OnIdsReserveFailed(const Status& error) {
  reserve_outstanding_.reset();
  Actions out = c_.OnIdsReserveFailed(error);
  Apply({CoordinatorCall::kIdsReserveFailed}, out);
  return out;
}

Actions CheckedCoordinator::OnCommitted(int64_t checkpoint_id) {
  const bool held = commit_outstanding_ && *commit_outstanding_ == checkpoint_id;
  if (held) commit_outstanding_.reset();
  Actions out = c_.OnCommitted(checkpoint_id);
  Apply({CoordinatorCall::kCommitted, checkpoint_id, 0, "", held}, out);
  return out;
}

Actions CheckedCoordinator::OnCommitFailed(int64_t checkpoint_id, const Status& error) {
  const bool held = commit_outstanding_ && *commit_outstanding_ == checkpoint_id;
  if (held) {
    commit_outstanding_.reset();
    store_failed_id_ = checkpoint_id;
  }
  Actions out = c_.OnCommitFailed(checkpoint_id, error);
  Apply({CoordinatorCall::kCommitFailed, checkpoint_id, 0, "", held}, out);
  return out;
}

Actions CheckedCoordinator::OnTaskCommitted(SessionId session, int64_t checkpoint_id,
                                            const std::string& task_id) {
  auto owner = owner_.find(task_id);
  if (committing_ && *committing_ == checkpoint_id && owner != owner_.end() &&
      owner->second == session) {
    committed_tasks_.insert(task_id);
  }
  Actions out = c_.OnTaskCommitted(session, checkpoint_id, task_id);
  Apply({CoordinatorCall::kTaskCommitted, checkpoint_id, session, task_id}, out);
  return out;
}

Actions CheckedCoordinator::OnCommitMarked(int64_t checkpoint_id) {
  const bool held = mark_outstanding_ && *mark_outstanding_ == checkpoint_id;
  if (held) mark_outstanding_.reset();
  Actions out = c_.OnCommitMarked(checkpoint_id);
  Apply({CoordinatorCall::kCommitMarked, checkpoint_id, 0, "", held}, out);
  return out;
}

Actions CheckedCoordinator::OnCommitMarkFailed(int64_t checkpoint_id, const Status& error) {
  const bool held = mark_outstanding_ && *mark_outstanding_ == checkpoint_id;
  if (held) mark_outstanding_.reset();
  Actions out = c_.OnCommitMarkFailed(checkpoint_id, error);
  Apply({CoordinatorCall::kCommitMarkFailed, checkpoint_id, 0, "", held}, out);
  return out;
}

Actions CheckedCoordinator::OnGroupCommitted(int64_t checkpoint_id) {
  Actions out = c_.OnGroupCommitted(checkpoint_id);
  Apply({CoordinatorCall::kGroupCommitted, checkpoint_id}, out);
  return out;
}

Actions CheckedCoordinator::OnStoreWritable(bool writable) {
  store_writable_ = writable;
  Actions out = c_.OnStoreWritable(writable);
  Apply({CoordinatorCall::kStoreWritable}, out);
  return out;
}

Actions CheckedCoordinator::OnPersistFailed(bool whole_record) {
  Actions out = c_.OnPersistFailed(whole_record);
  Apply({CoordinatorCall::kPersistFailed}, out);
  return out;
}

PipelineCoordinator::Outcome CheckedCoordinator::Pause() {
  auto o = c_.Pause();
  Apply({CoordinatorCall::kPause}, o.actions);
  return o;
}

PipelineCoordinator::Outcome CheckedCoordinator::Resume() {
  auto o = c_.Resume();
  Apply({CoordinatorCall::kResume}, o.actions);
  return o;
}

Actions CheckedCoordinator::OnAdmitted() {
  if (admission_ == ModelAdmission::kAsked) admission_ = ModelAdmission::kAdmitted;
  Actions out = c_.OnAdmitted();
  Apply({CoordinatorCall::kAdmitted}, out);
  return out;
}

PipelineCoordinator::Outcome CheckedCoordinator::TriggerCheckpoint(
    int64_t* checkpoint_id, const PipelineCoordinator::AdmitNow& admit_now) {
  PipelineCoordinator::AdmitNow admit;
  if (admit_now) {
    admit = [this, &admit_now](const AdmissionRequest& request) {
      Status s = admit_now(request);
      INVARIANT(admission_ != ModelAdmission::kAdmitted, "admitted now while admitted already");
      if (s.ok()) admission_ = ModelAdmission::kAdmitted;
      return s;
    };
  }
  auto o = c_.TriggerCheckpoint(checkpoint_id, admit);
  Apply({CoordinatorCall::kTriggerNow}, o.actions);
  if (o.status.ok()) {
    INVARIANT(open_round_ && *open_round_ == *checkpoint_id,
              "TriggerCheckpoint succeeded but the id it returned is not the open round");
  }
  return o;
}

PipelineCoordinator::Outcome CheckedCoordinator::RequestSavepoint(const std::string& target,
                                                                  bool stop, Millis timeout) {
  auto o = c_.RequestSavepoint(target, stop, timeout);
  Apply({CoordinatorCall::kSavepoint}, o.actions);
  return o;
}

Actions CheckedCoordinator::OnWorkerSavepointRequest(SessionId session, const std::string& target,
                                                     bool stop) {
  Actions out = c_.OnWorkerSavepointRequest(session, target, stop);
  Apply({CoordinatorCall::kWorkerSavepoint, 0, session}, out);
  return out;
}

PipelineCoordinator::Outcome CheckedCoordinator::AdmitGroupSavepointRequest(
    SessionId session, const std::string& target, bool stop) {
  auto outcome = c_.AdmitGroupSavepointRequest(session, target, stop);
  Apply({CoordinatorCall::kWorkerSavepoint, 0, session}, outcome.actions);
  return outcome;
}

Actions CheckedCoordinator::OnSavepointCallersGone() {
  Actions out = c_.OnSavepointCallersGone();
  Apply({CoordinatorCall::kSavepointCallersGone}, out);
  return out;
}

Actions CheckedCoordinator::BeginShutdown() {
  shutting_down_ = true;
  Actions out = c_.BeginShutdown();
  Apply({CoordinatorCall::kShutdown}, out);
  return out;
}

Actions CheckedCoordinator::AbortForShutdown() {
  Actions out = c_.AbortForShutdown();
  Apply({CoordinatorCall::kAbortForShutdown}, out);
  return out;
}

PipelineCoordinator::Outcome CheckedCoordinator::UpdateSpec(const PipelineSpec& spec) {
  auto o = c_.UpdateSpec(spec);
  if (o.status.ok()) {
    // Before the actions: the record they persist must hold the new spec.
    INVARIANT(spec.key == spec_.key, "UpdateSpec accepted a different key");
    spec_ = spec;
  }
  Apply({CoordinatorCall::kUpdateSpec}, o.actions);
  return o;
}

PipelineCoordinator::Outcome CheckedCoordinator::Delete() {
  auto o = c_.Delete();
  if (o.status.ok()) {
    deleted_ = true;
    owner_.clear();  // every stream ends with the pipeline
  }
  Apply({CoordinatorCall::kDelete}, o.actions);
  if (!o.status.ok()) INVARIANT(o.actions.empty(), "a refused Delete acted");
  return o;
}

PipelineCoordinator::Outcome CheckedCoordinator::DeleteCheckpoint(int64_t checkpoint_id) {
  auto o = c_.DeleteCheckpoint(checkpoint_id);
  Apply({CoordinatorCall::kDeleteCheckpoint, checkpoint_id}, o.actions);
  if (!o.status.ok()) INVARIANT(o.actions.empty(), "a refused DeleteCheckpoint acted");
  return o;
}

Status CheckedCoordinator::AddPin(int64_t checkpoint_id, const PipelineKey& holder) {
  Status s = c_.AddPin(checkpoint_id, holder);
  Apply({CoordinatorCall::kAddPin, checkpoint_id}, {});
  return s;
}

Actions CheckedCoordinator::OnPinDropped(int64_t checkpoint_id) {
  Actions out = c_.OnPinDropped(checkpoint_id);
  Apply({CoordinatorCall::kPinDropped, checkpoint_id}, out);
  return out;
}

PipelineCoordinator::Outcome CheckedCoordinator::Restore(const PipelineKey& source,
                                                         CompletedCheckpoint checkpoint) {
  const int64_t id = checkpoint.checkpoint_id;
  auto o = c_.Restore(source, std::move(checkpoint));
  // Its EndSessions forget the streams before the actions are checked.
  for (const Action& action : o.actions) {
    if (auto* end = std::get_if<EndSession>(&action)) ForgetSession(end->session);
  }
  Apply({CoordinatorCall::kRestore, id}, o.actions);
  if (o.status.ok()) {
    restored_ = true;
    restore_read_outstanding_.reset();  // its answer comes too late to matter
    INVARIANT(c_.CurrentRestorePoint().checkpoint_id == id, "Restore did not take");
    INVARIANT(c_.Sessions().empty(), "a stream outlived a Restore");
  } else {
    INVARIANT(o.actions.empty(), "a refused Restore acted");
  }
  return o;
}

Actions CheckedCoordinator::OnCheckpointsDeleted(const std::vector<int64_t>& checkpoint_ids) {
  for (int64_t id : checkpoint_ids) deletes_outstanding_.erase(id);
  deleted_now_ = std::set<int64_t>(checkpoint_ids.begin(), checkpoint_ids.end());
  Actions out = c_.OnCheckpointsDeleted(checkpoint_ids);
  Apply({CoordinatorCall::kCheckpointsDeleted}, out);
  return out;
}

Actions CheckedCoordinator::OnCheckpointsDeleteFailed(const std::vector<int64_t>& checkpoint_ids,
                                                      const Status& error) {
  for (int64_t id : checkpoint_ids) deletes_outstanding_.erase(id);
  Actions out = c_.OnCheckpointsDeleteFailed(checkpoint_ids, error);
  Apply({CoordinatorCall::kCheckpointsDeleteFailed}, out);
  for (const Action& action : out) {
    INVARIANT(!std::holds_alternative<SendRelease>(action), "a failed delete released something");
  }
  return out;
}

Actions CheckedCoordinator::SetGroup(std::optional<AlignmentGroupSpec> group, int64_t id_floor) {
  const bool joins = group.has_value();
  if (!joins && member_) {
    // Its own ids continue above the group's: the stored counter it must pass is that floor.
    initial_counter_ = std::max(initial_counter_, id_floor);
  }
  member_ = joins;
  Actions out = c_.SetGroup(std::move(group), id_floor);
  Apply({CoordinatorCall::kSetGroup}, out);
  return out;
}

Actions CheckedCoordinator::StartGroupRound(int64_t checkpoint_id, CheckpointKind kind,
                                            int64_t position) {
  group_position_ = position;
  Actions out = c_.StartGroupRound(checkpoint_id, kind, position);
  Apply({CoordinatorCall::kStartGroupRound, checkpoint_id}, out);
  for (const Action& action : out) {
    if (std::holds_alternative<SendTrigger>(action)) {
      group_ids_floor_ = std::max(group_ids_floor_, checkpoint_id);
    }
  }
  return out;
}

Actions CheckedCoordinator::EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome,
                                          const std::string& reason) {
  if (open_is_group_ && commit_outstanding_ && *commit_outstanding_ == checkpoint_id) {
    // The group never committed it: as a failed store write, counted for nobody by the store.
    commit_outstanding_.reset();
    if (outcome == MemberOutcome::kAborted) store_failed_id_ = checkpoint_id;
  }
  if (outcome == MemberOutcome::kStoreFailed) {
    store_failed_id_ = checkpoint_id;  // the daemon's failure, counted for no member
  }
  Actions out = c_.EndGroupRound(checkpoint_id, outcome, reason);
  Apply({CoordinatorCall::kEndGroupRound, checkpoint_id}, out);
  return out;
}

Actions CheckedCoordinator::SetFromConfig(bool from_config) {
  Actions out = c_.SetFromConfig(from_config);
  Apply({CoordinatorCall::kSetFromConfig}, out);
  return out;
}

void CheckedCoordinator::ForgetSession(SessionId session) {
  for (auto it = owner_.begin(); it != owner_.end();) {
    it = it->second == session ? owner_.erase(it) : std::next(it);
  }
}

// ---- actions and invariants -------------------------------------------------------------------

void CheckedCoordinator::Apply(Step step, const Actions& actions) {
  current_ = std::move(step);
  ++steps_;
  tolerance_ = clock_.Ticking() ? Millis(1) : Millis(0);
  const PipelineStatus status = c_.Describe();
  const SteadyTime now = clock_.Peek();
  for (const Action& action : actions) {
    if (hook_) hook_(action);
    if (auto* a = std::get_if<SendTrigger>(&action)) {
      OnTrigger(*a, status, now);
      INVARIANT(!restore_read_outstanding_, "a round started while the fallback is being read");
    } else if (auto* a = std::get_if<ReadRestoreCandidate>(&action)) {
      INVARIANT(!restore_read_outstanding_, "two fallback reads at once");
      INVARIANT(a->checkpoint_id < a->failed_id, "a fallback read of a newer checkpoint");
      INVARIANT(!unrestorable_.count(a->checkpoint_id), "a fallback to a marked checkpoint");
      restore_read_outstanding_ = *a;
    } else if (auto* a = std::get_if<AskAdmission>(&action)) {
      INVARIANT(!member_, "a member asked for admission (its rounds are its group's)");
      INVARIANT(admission_ != ModelAdmission::kAdmitted, "asked for admission while admitted");
      admission_ = ModelAdmission::kAsked;
      asked_as_savepoint_ = a->request.line == AdmissionClass::kSavepoint;
    } else if (std::holds_alternative<LeaveAdmission>(action)) {
      INVARIANT(admission_ != ModelAdmission::kNone, "left an admission it did not ask for");
      admission_ = ModelAdmission::kNone;
    } else if (auto* a = std::get_if<ArmTimeout>(&action)) {
      INVARIANT(open_round_ && *open_round_ == a->checkpoint_id,
                "ArmTimeout for a round that is not the open one");
      INVARIANT(a->at + tolerance_ > now, "ArmTimeout at or before now");
      timeout_ = *a;
    } else if (std::holds_alternative<CancelTimeout>(action)) {
      timeout_.reset();
    } else if (auto* a = std::get_if<ArmWakeup>(&action)) {
      // After BeginShutdown only a COMMITTED mark's retry (every task committed, the mark failed).
      INVARIANT(!deleted_ && (!shutting_down_ || committing_),
                "wakeup armed after Delete/BeginShutdown");
      wakeup_ = a->at;
    } else if (std::holds_alternative<CancelWakeup>(action)) {
      wakeup_.reset();
    } else if (auto* a = std::get_if<ReserveIds>(&action)) {
      INVARIANT(!member_, "a group's member reserved ids of its own");
      INVARIANT(!reserve_outstanding_, "a second id reservation while one is in flight");
      INVARIANT(a->new_counter > reserved_confirmed_,
                "ReserveIds does not move the counter forward");
      reserve_outstanding_ = a->new_counter;
    } else if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
      INVARIANT(!open_is_group_, "a group's round committed by its member alone");
      OnCommit(a->commit);
    } else if (auto* a = std::get_if<MemberDone>(&action)) {
      INVARIANT(open_is_group_, "MemberDone of a round that is not its group's");
      INVARIANT(a->checkpoint_id == a->commit.checkpoint.checkpoint_id,
                "MemberDone names another id than its checkpoint");
      INVARIANT(!a->commit.checkpoint.alignment_group.empty(),
                "a member's checkpoint without its group's name");
      OnCommit(a->commit);
    } else if (auto* a = std::get_if<MemberFailed>(&action)) {
      INVARIANT(open_is_group_ || current_.call == CoordinatorCall::kStartGroupRound,
                "MemberFailed of a round that is not its group's");
      INVARIANT(current_.call != CoordinatorCall::kEndGroupRound,
                "a member told its group of a failure the group itself ended");
      INVARIANT((open_round_ && *open_round_ == a->checkpoint_id) ||
                    current_.call == CoordinatorCall::kStartGroupRound,
                "MemberFailed for a round that is not the open one");
    } else if (auto* a = std::get_if<SendComplete>(&action)) {
      OnComplete(*a);
    } else if (auto* a = std::get_if<DeleteCheckpoints>(&action)) {
      INVARIANT(current_.call == CoordinatorCall::kDeleteCheckpoint ||
                    current_.call == CoordinatorCall::kCommitted ||
                    current_.call == CoordinatorCall::kPinDropped ||
                    current_.call == CoordinatorCall::kStart,
                "DeleteCheckpoints other than for an operator, a completion, a dropped pin or a "
                "start");
      for (int64_t id : a->checkpoint_ids) {
        INVARIANT(!committing_ || id != *committing_,
                  "a COMMITTING checkpoint was handed to the store to delete");
        INVARIANT(id != last_completed_id_, "the restore point was handed to the store to delete");
        INVARIANT(deletes_outstanding_.insert(id).second, "an id handed for deletion twice");
      }
    } else if (auto* a = std::get_if<PersistCommitMark>(&action)) {
      INVARIANT(!deleted_, "a COMMITTED mark written after Delete");
      INVARIANT(committing_ && *committing_ == a->checkpoint_id,
                "a COMMITTED mark for a checkpoint that is not COMMITTING");
      INVARIANT(EveryTaskCommitted(), "COMMITTED before every expected task committed");
      INVARIANT(a->progress.last_committed_id == a->checkpoint_id,
                "a COMMITTED mark whose progress does not name it");
      INVARIANT(!mark_outstanding_, "a second COMMITTED mark while the store holds one");
      mark_outstanding_ = a->checkpoint_id;
    } else if (auto* a = std::get_if<MemberCommitted>(&action)) {
      INVARIANT(member_, "MemberCommitted of a pipeline that is no group's member");
      INVARIANT(committing_ && *committing_ == a->checkpoint_id,
                "MemberCommitted for a checkpoint that is not COMMITTING");
      INVARIANT(EveryTaskCommitted(), "MemberCommitted before every expected task committed");
    } else if (auto* a = std::get_if<SendAllCommitted>(&action)) {
      INVARIANT(current_.call == CoordinatorCall::kCommitMarked && current_.store_reported &&
                    current_.id == a->checkpoint_id,
                "all_committed other than for the mark the store just reported durable");
      INVARIANT(committing_ && *committing_ == a->checkpoint_id,
                "all_committed for a checkpoint that is not COMMITTING");
      committing_.reset();
      committed_tasks_.clear();
    } else if (auto* a = std::get_if<SendRelease>(&action)) {
      for (int64_t id : a->checkpoint_ids) {
        // DeletePipeline deletes everything, a COMMITTING checkpoint too.
        INVARIANT(!committing_ || id != *committing_ || current_.call == CoordinatorCall::kDelete,
                  "a COMMITTING checkpoint was released");
      }
      if (current_.call == CoordinatorCall::kRegister) {
        // After a restart, the last release again, to the stream just welcomed only.
        INVARIANT(a->to == std::vector<SessionId>{current_.session},
                  "a release sent again to another stream than the one registering");
        continue;
      }
      if (current_.call == CoordinatorCall::kDelete) {
        // The pipeline goes, and with it every checkpoint and savepoint it had (sent by the
        // runtime once the store's delete is durable).
        for (int64_t id : a->checkpoint_ids) {
          INVARIANT(released_.insert(id).second, "an id was released twice");
        }
        continue;
      }
      if (current_.call == CoordinatorCall::kCheckpointsDeleted) {
        for (int64_t id : a->checkpoint_ids) {
          INVARIANT(deleted_now_.count(id), "a durable delete released an id it did not delete");
        }
      } else {
        INVARIANT(current_.call == CoordinatorCall::kCommitted && complete_sent_,
                  "SendRelease other than after the SendComplete of a commit or a delete");
      }
      for (int64_t id : a->checkpoint_ids) {
        INVARIANT(id != last_completed_id_, "the checkpoint just completed was released");
        INVARIANT(current_.call == CoordinatorCall::kCheckpointsDeleted ||
                      !completed_savepoints_.count(id),
                  "a savepoint was released automatically");
        INVARIANT(released_.insert(id).second, "an id was released twice");
      }
    } else if (auto* a = std::get_if<SendAbort>(&action)) {
      INVARIANT(open_round_ && *open_round_ == a->checkpoint_id,
                "SendAbort for a round that is not the open one");
      INVARIANT(!commit_outstanding_ || *commit_outstanding_ != a->checkpoint_id,
                "a round handed to the store was aborted");
      INVARIANT(!complete_sent_, "a completed round was aborted");
    } else if (auto* a = std::get_if<RoundFinished>(&action)) {
      OnRoundFinished(*a, now);
    } else if (auto* a = std::get_if<PersistRecord>(&action)) {
      INVARIANT(!deleted_, "a record persisted after Delete (it would bring the pipeline back)");
      INVARIANT(a->record.generation >= persisted_generation_,
                "a persisted record has an older generation than one persisted before");
      persisted_generation_ = a->record.generation;
      INVARIANT(a->record.spec == spec_, "a persisted record has another spec");
      written_spec_ = a->record.spec;
    } else if (auto* a = std::get_if<PersistProgress>(&action)) {
      INVARIANT(!deleted_, "progress persisted after Delete");
      INVARIANT(a->key == spec_.key, "progress persisted under another key");
      INVARIANT(a->progress.generation >= persisted_generation_,
                "persisted progress has an older generation than one persisted before");
      persisted_generation_ = a->progress.generation;
    } else if (auto* a = std::get_if<EndSession>(&action)) {
      ForgetSession(a->session);
    }
  }
  INVARIANT(status.generation >= generation_, "generation decreased");
  generation_ = status.generation;
  if (counted_failure_) {
    counted_failure_ = false;
    INVARIANT(status.counters.consecutive_failures > 0,
              "a counted failure left consecutive_failures at 0");
    if (status.counters.consecutive_failures > status.spec.tolerable_failures) {
      INVARIANT(status.state == PipelineState::kFailed,
                "more than tolerable_failures consecutive failures, yet not FAILED");
    }
  }
  CheckState();
}

void CheckedCoordinator::OnTrigger(const SendTrigger& t, const PipelineStatus& status,
                                   SteadyTime now) {
  INVARIANT(store_writable_, "a round started while the store fails writes");
  INVARIANT(!deleted_, "trigger after Delete");
  INVARIANT(!shutting_down_, "trigger after BeginShutdown");
  INVARIANT(!open_round_, "a trigger while another round is pending");
  INVARIANT(!committing_, "a trigger while a checkpoint is COMMITTING");
  INVARIANT(t.checkpoint_id > last_trigger_id_, "trigger ids do not strictly increase");
  INVARIANT(t.checkpoint_id > initial_counter_,
            "trigger id at or below the stored counter (may reuse an id from before a restart)");
  if (member_) {
    INVARIANT(current_.call == CoordinatorCall::kStartGroupRound && current_.id == t.checkpoint_id,
              "a member triggered other than its group's round");
    INVARIANT(t.position == group_position_, "a member's trigger lost its group's position");
  } else {
    INVARIANT(t.checkpoint_id <= reserved_confirmed_,
              "trigger id above the highest counter the store confirmed durable");
    INVARIANT(t.checkpoint_id > group_ids_floor_, "an id of a group round used again");
  }
  INVARIANT(status.state == PipelineState::kRunning, "trigger while the pipeline is not RUNNING");
  INVARIANT(status.missing_tasks.empty() &&
                status.registered_tasks == static_cast<int>(status.spec.task_ids.size()),
            "trigger while tasks are missing");
  INVARIANT(t.generation == status.generation, "trigger tagged with a stale generation");
  if (admitting_ && !member_) {
    INVARIANT(admission_ == ModelAdmission::kAdmitted, "a round triggered without admission");
  }
  const std::vector<SessionId> sessions = c_.Sessions();
  INVARIANT(std::set<SessionId>(t.to.begin(), t.to.end()) ==
                    std::set<SessionId>(sessions.begin(), sessions.end()) &&
                !t.to.empty(),
            "trigger not sent to exactly the live sessions");
  if (member_) {
    // The group chose the position.
  } else if (spec_.position_interval > 0) {
    INVARIANT(t.position > 0 && t.position % spec_.position_interval == 0,
              "with a position_interval, a trigger without a multiple of it as its position");
    INVARIANT(t.position > c_.CurrentRestorePoint().position,
              "a trigger's position not above the last checkpoint's");
  } else {
    INVARIANT(t.position == 0, "a position on a trigger without a position_interval");
  }
  open_position_ = t.position;
  if (t.kind == CheckpointKind::kCheckpoint) {
    INVARIANT(t.target.empty(), "a checkpoint trigger with a target");
  } else {
    INVARIANT(!t.target.empty(), "a savepoint trigger without a location");
  }
  const bool periodic = t.kind == CheckpointKind::kCheckpoint &&
                        current_.call != CoordinatorCall::kTriggerNow && !member_;
  if (periodic) {
    const auto savepoint = c_.CurrentSavepoint();
    INVARIANT(!savepoint || savepoint->checkpoint_id != 0,
              "a periodic checkpoint triggered ahead of a queued savepoint");
    if (last_trigger_at_) {
      INVARIANT(now + tolerance_ >= *last_trigger_at_ + Millis(spec_.interval_ms),
                "periodic trigger sooner than interval_ms after the previous trigger");
    }
    if (last_finished_at_) {
      INVARIANT(now + tolerance_ >= *last_finished_at_ + Millis(spec_.min_pause_ms),
                "periodic trigger sooner than min_pause_ms after the previous round finished");
    }
  }
  open_round_ = t.checkpoint_id;
  open_is_group_ = current_.call == CoordinatorCall::kStartGroupRound;
  open_kind_ = t.kind;
  complete_sent_ = false;
  last_trigger_id_ = t.checkpoint_id;
  last_trigger_at_ = now;
}

void CheckedCoordinator::OnCommit(const CheckpointCommit& c) {
  const int64_t id = c.checkpoint.checkpoint_id;
  INVARIANT(open_round_ && *open_round_ == id, "CommitCheckpoint for a round that is not open");
  INVARIANT(c.checkpoint.position == open_position_,
            "a checkpoint committed without its trigger's position");
  INVARIANT(!commit_outstanding_, "a second commit while the store holds one");
  INVARIANT(!handed_.count(id), "the same checkpoint handed to the store twice");
  std::set<std::string> acked;
  for (const auto& [task, state] : c.checkpoint.task_states) acked.insert(task);
  INVARIANT(acked == std::set<std::string>(spec_.task_ids.begin(), spec_.task_ids.end()),
            "a committed checkpoint lacks an ack of some expected task");
  INVARIANT(c.key == spec_.key, "a commit under another key");
  INVARIANT(c.retained == spec_.retained, "a commit trims to another retention than the spec's");
  INVARIANT(c.progress_after.last_completed_id == id,
            "the progress written with a commit does not name it as last completed");
  INVARIANT(c.progress_after.generation >= persisted_generation_,
            "the progress written with a commit has an older generation");
  persisted_generation_ = c.progress_after.generation;
  handed_.insert(id);
  handed_kinds_[id] = c.checkpoint.kind;
  if (c.checkpoint.commit_status == CommitStatus::kCommitting) handed_with_commit_phase_.insert(id);
  commit_outstanding_ = id;
}

void CheckedCoordinator::OnComplete(const SendComplete& s) {
  const int64_t id = s.checkpoint_id;
  INVARIANT(
      current_.call == CoordinatorCall::kCommitted && current_.store_reported && current_.id == id,
      "SendComplete other than for the id the store just reported durable");
  INVARIANT(handed_.count(id), "SendComplete for an id never handed to the store");
  INVARIANT(!completed_.count(id), "SendComplete twice for one id");
  INVARIANT(open_round_ && *open_round_ == id && !complete_sent_,
            "SendComplete for a round that is not the open one");
  completed_.insert(id);
  if (handed_kinds_.count(id) && handed_kinds_[id] != CheckpointKind::kCheckpoint) {
    completed_savepoints_.insert(id);
  }
  completed_here_ = true;
  restored_ = false;
  restore_read_outstanding_.reset();  // the completion is the restore point: its answer is late
  complete_sent_ = true;
  ++expected_completed_count_;
  last_completed_id_ = id;
  INVARIANT(!committing_, "a completion while another checkpoint is COMMITTING");
  if (handed_with_commit_phase_.count(id)) {
    committing_ = id;
    committed_tasks_.clear();
  }
}

void CheckedCoordinator::OnRoundFinished(const RoundFinished& r, SteadyTime now) {
  if (r.checkpoint_id == 0) return;  // a queued savepoint that never started
  INVARIANT(open_round_ && *open_round_ == r.checkpoint_id,
            "RoundFinished for a round that is not the open one");
  if (r.status == CheckpointStatus::kCompleted) {
    // After Delete nobody is told: the round only finishes for its savepoint caller and metrics.
    INVARIANT(complete_sent_ || deleted_, "a round finished COMPLETED without SendComplete");
  } else {
    INVARIANT(!complete_sent_, "a round sent complete then finished as failed");
    INVARIANT(!commit_outstanding_ || *commit_outstanding_ != r.checkpoint_id,
              "a round handed to the store finished as failed before the store answered");
  }
  open_round_.reset();
  complete_sent_ = false;
  last_finished_at_ = now;
  // Declines and expiries of checkpoints count toward tolerable_failures; store failures and
  // aborts do not.
  if ((r.status == CheckpointStatus::kFailed || r.status == CheckpointStatus::kExpired) &&
      r.kind == CheckpointKind::kCheckpoint && r.checkpoint_id != store_failed_id_) {
    counted_failure_ = true;
  }
}

// After every call: the coordinator's view agrees with what its actions said.
void CheckedCoordinator::CheckState() {
  const PipelineStatus status = c_.Describe();
  // A spec change is written whole in the step that made it (progress writes carry no spec);
  // a member's whose part waits for its group's commit, in the step that ends the round.
  INVARIANT(deleted_ || written_spec_ == spec_ || (open_is_group_ && commit_outstanding_),
            "a changed spec was not written");
  INVARIANT(status.generation >= generation_, "generation decreased");
  generation_ = status.generation;
  INVARIANT(c_.HasPendingRound() == open_round_.has_value(),
            "HasPendingRound disagrees with the triggers and finishes seen");
  INVARIANT(admission_ != ModelAdmission::kAdmitted || (open_round_ && !open_is_group_),
            "an admission held without a round of its own");
  INVARIANT(admission_ != ModelAdmission::kAsked ||
                (!open_round_ && status.state == PipelineState::kRunning && !deleted_ &&
                 !shutting_down_ && !restore_read_outstanding_),
            "a place in the admission line held by a pipeline not ready to trigger");
  INVARIANT(status.pending_checkpoint_id == open_round_.value_or(0),
            "pending_checkpoint_id is not the open round");
  if (auto pending = c_.Pending()) {
    const bool with_store = commit_outstanding_ && *commit_outstanding_ == pending->checkpoint_id;
    INVARIANT(pending->completing == with_store,
              "the round is 'completing' exactly while the store holds its commit");
    if (!pending->completing && !deleted_ && !open_is_group_) {  // the group keeps its deadline
      INVARIANT(timeout_ && timeout_->checkpoint_id == pending->checkpoint_id,
                "a pending round without its timeout armed (it could hang forever)");
    }
  }
  if (open_round_ && open_kind_ != CheckpointKind::kCheckpoint) {
    auto view = c_.CurrentSavepoint();
    INVARIANT(view && view->checkpoint_id == *open_round_,
              "CurrentSavepoint does not show the pending savepoint");
  }
  INVARIANT(status.counters.completed_count == expected_completed_count_,
            "completed_count does not match the completes sent");
  INVARIANT(status.last_completed_checkpoint_id == last_completed_id_,
            "last_completed_checkpoint_id is not the last id completed");
  INVARIANT(status.registered_tasks == static_cast<int>(owner_.size()),
            "registered task count disagrees with the registrations and losses seen");
  if (deleted_) {
    INVARIANT(status.sessions == 0, "sessions left after Delete");
    INVARIANT(!open_round_ || commit_outstanding_ == open_round_,
              "a round survived Delete without being with the store");
  }
  // The schedule never silently stops: an idle running pipeline has a wakeup armed or waits for
  // the store to reserve ids. (While the store fails writes no round may start: the schedule
  // waits for it to recover.)
  // While a checkpoint is COMMITTING it waits for the tasks' commits instead, and once every
  // task committed, for its mark: written, or its retry armed.
  const bool all_committed = EveryTaskCommitted();
  if (committing_ && all_committed && !deleted_ && !member_) {  // a member's waits for its group
    INVARIANT(mark_outstanding_ || wakeup_,
              "every task committed, and no COMMITTED mark written nor its retry armed");
  }
  if (!deleted_ && !shutting_down_ && store_writable_ && status.state == PipelineState::kRunning &&
      !open_round_ && !member_ && !committing_) {  // a member's schedule is its group's
    // Or it waits in the admission line, whose answer (OnAdmitted) drives it on, or for the
    // fallback's read (OnRestoreCandidate).
    INVARIANT(wakeup_ || reserve_outstanding_ || admission_ == ModelAdmission::kAsked ||
                  restore_read_outstanding_,
              "RUNNING, idle, and nothing armed: the schedule stopped");
  }
  // A queued savepoint fails once the pipeline is PAUSED, FAILED, STOPPED or deleted, and starts
  // as soon as it can: when the pipeline is RUNNING and idle, its wakeup is due now (or the
  // trigger waits for an id reservation).
  const auto savepoint = c_.CurrentSavepoint();
  const bool queued = savepoint && savepoint->checkpoint_id == 0;
  if (queued) {
    INVARIANT(!deleted_, "a savepoint still queued after Delete");
    INVARIANT(status.state != PipelineState::kPaused && status.state != PipelineState::kFailed &&
                  status.state != PipelineState::kStopped,
              "a savepoint still queued while PAUSED, FAILED or STOPPED");
    if (!shutting_down_ && store_writable_ && status.state == PipelineState::kRunning &&
        !open_round_ && !committing_) {
      const bool ids_left = std::max(last_trigger_id_, initial_counter_) < reserved_confirmed_;
      // Or it waits in the admission line, as a savepoint (ahead of every periodic round), or
      // for the fallback's read (no round starts from a restore point that failed).
      const bool in_line = admission_ == ModelAdmission::kAsked && asked_as_savepoint_;
      INVARIANT(
          in_line || restore_read_outstanding_ ||
              (ids_left ? wakeup_ && *wakeup_ <= clock_.Peek() : wakeup_ || reserve_outstanding_),
          "a queued savepoint could start, but nothing starts it now");
    }
  }
}

}  // namespace ckpt::testing
