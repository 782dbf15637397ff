#pragma once
// GroupCoordinator: one alignment group's rounds (docs/ALIGNMENT.md), as pure logic: members and
// whether each could start a round, the schedule (the interval and min pause, and with
// position_interval the position gate), the group's durable ids, the pending group round (which
// members are done), and how a round ends for each member. Events in, actions out, time from an
// injected clock; no threads, no I/O. The members are PipelineCoordinators on strands of their
// own: the runtime carries the actions to them as messages and brings theirs back as events.
//
// Rules (docs/ALIGNMENT.md, "A group round, step by step" and "Failure cases"):
// - A round starts when every member is ready (RUNNING, every task registered, nothing of its own
//   in flight) and the gates are open; one id for all, above every id any member used before.
// - It completes when every member of the round is done, in one commit of all their checkpoints;
//   only once that is durable does any member hear that it completed.
// - A decline or an expiry in a member fails the round for that member (counted there) and aborts
//   it for the others; a task lost, a member paused, changed, deleted or removed aborts it for all.
//   At the deadline every member not done expires (each counts it), the others are aborted.
// - A member that is not ready holds every round; Explain names it.
// - With commit_timeout_ms (docs/PROTOCOL.md, "Commit phase") the group commits as one: a durable
//   round leaves its members not ready (COMMITTING), each reports once its tasks all committed
//   (OnMemberCommitted), and only when every member of the round has does each get
//   MarkMemberCommitted (its COMMITTED mark, then all_committed to its workers).
//
// Threading: not thread-safe; the runtime calls it on the group's strand only.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "core/actions.h"
#include "core/adaptive_interval.h"
#include "core/clock.h"
#include "core/recent_durations.h"
#include "core/round_admission.h"
#include "core/types.h"

namespace ckpt {

// --- actions: what the runtime does for the group ---
struct StartMemberRound {
  PipelineKey member;
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  int64_t position = 0;  // 0: none
  int64_t timestamp_ms = 0;
};
struct MemberRoundDurable {
  PipelineKey member;
  int64_t checkpoint_id = 0;
};
struct AbortMemberRound {
  PipelineKey member;
  int64_t checkpoint_id = 0;
  MemberOutcome outcome = MemberOutcome::kAborted;
  std::string reason;
};
struct ArmGroupWakeup {
  SteadyTime at;
};
struct ArmGroupDeadline {
  SteadyTime at;
  int64_t checkpoint_id = 0;
};
struct CancelGroupDeadline {};
struct ReserveGroupIds {
  int64_t new_counter = 0;
};
// One durable write for the whole round: every member's checkpoint and the group's progress.
// progress_after.id_counter is a floor: the store keeps the larger of it and the counter it holds
// (a reservation made meanwhile may have passed it).
struct CommitGroupRound {
  int64_t checkpoint_id = 0;
  std::vector<CheckpointCommit> members;
  GroupProgress progress_after;
};
// A round started (the members were sent StartMemberRound): for logs, and for the caller of a
// queued savepoint, who learns its id here.
struct GroupRoundStarted {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kCheckpoint;
  int64_t position = 0;
};
// Every member of a COMMITTING round committed it (or the group no longer tracks that round, after
// a restart): the member writes its COMMITTED mark and tells its workers.
struct MarkMemberCommitted {
  PipelineKey member;
  int64_t checkpoint_id = 0;
};
// A queued savepoint that will not start: its timeout passed first.
struct GroupSavepointDropped {
  CheckpointKind kind = CheckpointKind::kSavepoint;
  std::string reason;
};
// The group's effective interval changed (docs/PROTOCOL.md, "Adaptive interval"): every member's
// GetPipeline shows it (PipelineCoordinator::SetGroupInterval).
struct GroupIntervalChanged {
  int64_t ms = 0;
  std::string reason;
};
// For metrics (ckptd_group_rounds_total{result}) and logs.
enum class GroupRoundResult { kCompleted, kAborted, kFailed, kExpired };
struct GroupRoundFinished {
  int64_t checkpoint_id = 0;
  GroupRoundResult result = GroupRoundResult::kCompleted;
  std::string reason;
};

using GroupAction =
    std::variant<StartMemberRound, MemberRoundDurable, AbortMemberRound, ArmGroupWakeup,
                 ArmGroupDeadline, CancelGroupDeadline, ReserveGroupIds, CommitGroupRound,
                 GroupRoundStarted, GroupSavepointDropped, GroupRoundFinished, MarkMemberCommitted,
                 AskAdmission, LeaveAdmission, GroupIntervalChanged, Log>;
using GroupActions = std::vector<GroupAction>;

// What holds the group now, for `pipeline why` of its members and `group get`.
struct GroupExplanation {
  int64_t pending_checkpoint_id = 0;
  int64_t committing_checkpoint_id = 0;  // a durable round whose members have not all committed
  // The pending round's members that are not done, or (none pending) the members not ready,
  // with what each said holds it.
  std::vector<std::pair<PipelineKey, std::string>> holding;
  bool waiting_for_ids = false;
  bool waiting_for_positions = false;          // the position gate is closed
  std::vector<PipelineKey> without_positions;  // members whose tasks have not all reported one
  int64_t next_trigger_in_ms = -1;             // -1: not known (held, or pending)
  int64_t last_round_id = 0;
  int64_t last_position = 0;
  bool waiting_for_admission = false;  // ready, its round held in the daemon's admission line
  // The group's adaptive interval (docs/PROTOCOL.md, "Adaptive interval"), and why.
  int64_t effective_interval_ms = 0;
  std::string effective_interval_reason;
};

struct GroupOptions {
  int64_t id_block = 100;  // ids reserved per store write
  // The start offset (core/start_spread.h), as a pipeline's: when its members become all ready
  // while the group is overdue, its next periodic round waits the fraction of `start_slot` (else
  // of its name) of min(start_spread, interval); nullopt: of the interval. 0: no offset.
  std::optional<Millis> start_spread = Millis{0};
  std::optional<uint64_t> start_slot;
  // The daemon's admission caps (docs/PROTOCOL.md, "Admission"); null: none. A round asks as one
  // unit counting its members, with the sum of their predicted bytes.
  std::shared_ptr<RoundAdmission> admission;
};

class GroupCoordinator {
 public:
  // `clock` must outlive the coordinator.
  GroupCoordinator(AlignmentGroupSpec spec, GroupProgress progress, const Clock& clock,
                   GroupOptions options = {});

  // First event: the first block of ids is reserved. The schedule continues from the last
  // completed round (progress.last_completed_at_ms, mapped onto the steady clock); a group that
  // never completed one is due as soon as every member is ready (then its start offset, if any).
  GroupActions Start();

  // --- membership ---
  // `member_id_counter`: the member's own id counter; the group's ids go above it. A member
  // joins not ready; it takes part from the first round that starts after it is ready.
  GroupActions AddMember(const PipelineKey& member, int64_t member_id_counter);
  // Leaving aborts a pending round it is part of (for every member), and no later round includes
  // it. A round already with the store stays as it is: the member's checkpoint is in it, and it
  // still gets MemberRoundDurable (a deleted pipeline's runtime ignores it).
  GroupActions RemoveMember(const PipelineKey& member, const std::string& why);

  // A changed policy (same name): applies from the next round; a pending round keeps its
  // deadline.
  GroupActions UpdateSpec(const AlignmentGroupSpec& spec);

  // --- what members report ---
  // `holdup`: why it is not ready ("" when ready), shown by Explain. `predicted_bytes`: its part
  // of the next round's predicted size (its last completed checkpoint's), for admission.
  // `backlog`: a task of the member reports backlog (the group's interval stretches to its
  // max_interval_ms from the next round's end).
  GroupActions OnMemberState(const PipelineKey& member, bool ready, const std::string& holdup,
                             int64_t predicted_bytes = 0, bool backlog = false);
  GroupActions OnMemberPositions(const PipelineKey& member, const MemberPositions& positions);
  // Every task of `member` acked round `checkpoint_id`; `commit` is its part of the group commit.
  // Ignored for any round but the pending one, or from a member not in it.
  // A failure ends the round only from a member still waited for: one that is done has every
  // ack it needs. kTaskLost and kAborted also mark the member not ready until it says otherwise.
  GroupActions OnMemberDone(const PipelineKey& member, int64_t checkpoint_id,
                            CheckpointCommit commit);
  GroupActions OnMemberFailed(const PipelineKey& member, int64_t checkpoint_id,
                              MemberFailure failure, const std::string& reason);
  // Every task of `member` committed round `checkpoint_id`. Once every member of that round has,
  // each gets MarkMemberCommitted; for a round the group does not track as COMMITTING (it
  // restarted since), the member gets it at once.
  GroupActions OnMemberCommitted(const PipelineKey& member, int64_t checkpoint_id);
  int64_t CommittingRoundId() const { return committing_ ? committing_->id : 0; }

  // --- timers ---
  GroupActions OnWakeup();
  GroupActions OnDeadline(int64_t checkpoint_id);
  // The round asked for (AskAdmission) may go: it starts if it still can (else it leaves).
  GroupActions OnAdmitted();

  // --- store completions ---
  GroupActions OnIdsReserved(int64_t counter);
  GroupActions OnIdsReserveFailed(const Status& error);
  GroupActions OnCommitted(int64_t checkpoint_id);
  GroupActions OnCommitFailed(int64_t checkpoint_id, const Status& error);

  // --- operators ---
  struct Outcome {
    Status status;
    GroupActions actions;
  };
  // A round now, past both gates (TriggerCheckpoint or a savepoint of any member). A savepoint
  // asked for while a round is pending, before every member is ready or before ids are reserved
  // waits, and starts as soon as it can (GroupRoundStarted says its id), or is dropped at
  // `timeout` (GroupSavepointDropped); one at a time: a second is FAILED_PRECONDITION. A
  // checkpoint is then FAILED_PRECONDITION (UNAVAILABLE while ids are being reserved).
  // `checkpoint_id` gets the id of a round started now (0 otherwise). A refused call has no
  // actions.
  // While the daemon caps admission a savepoint always waits in the admission line (as queued),
  // and a checkpoint asks `admit_now` first (RoundAdmission::AdmitNow), whose refusal is the
  // answer.
  Outcome RequestRound(CheckpointKind kind, int64_t* checkpoint_id = nullptr,
                       Millis timeout = Millis(300000),
                       const std::function<Status(const AdmissionRequest&)>& admit_now = {});
  // The callers of a queued savepoint went away: it is dropped.
  GroupActions CancelQueuedSavepoint();

  // --- queries ---
  GroupExplanation Explain() const;
  const AlignmentGroupSpec& spec() const { return spec_; }
  const GroupProgress& progress() const { return progress_; }
  std::vector<PipelineKey> Members() const;
  bool HasPendingRound() const { return pending_.has_value(); }
  int64_t PendingRoundId() const { return pending_ ? pending_->id : 0; }
  // The effective interval in force, and why (told to a member when it joins).
  GroupIntervalChanged CurrentInterval() const;
  // Whether the round with the store holds `member`'s part (it hears the outcome, even if it
  // left meanwhile).
  bool CommittingWith(const PipelineKey& member) const;

 private:
  struct Member {
    int64_t id_floor = 0;  // the group's ids go above this
    bool ready = false;
    std::string holdup = "has not reported yet";
    std::optional<MemberPositions> positions;
    int64_t predicted_bytes = 0;
    bool backlog = false;
  };
  struct PendingRound {
    int64_t id = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    int64_t position = 0;
    SteadyTime triggered_at;
    std::set<PipelineKey> waiting;  // members of the round not done yet
    std::vector<CheckpointCommit> done;
    bool committing = false;  // with the store: nothing aborts it now
  };

  // Starts a round if everything allows; `forced`: past the gates (operators).
  GroupActions TryStart(bool forced, std::optional<CheckpointKind> kind);
  bool AllReady() const;
  // The position gate: open without position_interval; else every member's tasks reported one,
  // each at least one interval past the last round's position.
  bool PositionsAllow() const;
  int64_t NextPosition() const;
  // When the time gates open (the start offset, interval since the last trigger, min pause since
  // the last end).
  SteadyTime TimeGateOpensAt() const;
  // The members have just become all ready: no periodic round before the start offset has
  // passed, when the group is overdue (unless a hold is already running).
  void HoldForStartOffset();
  int64_t IdFloor() const;
  // Whether next_id_ (raised above IdFloor) is durably reserved; if not, asks for a block (once).
  bool EnsureIds(GroupActions& out);
  // Ends the pending round for every member: `at_fault` gets `fault_outcome`, the others
  // kAborted (or everyone `everyone`, when set).
  GroupActions EndRound(GroupRoundResult result, const std::string& reason,
                        const std::set<PipelineKey>& at_fault, MemberOutcome fault_outcome,
                        std::optional<MemberOutcome> everyone = std::nullopt);
  void ArmNext(GroupActions& out);
  void ArmWakeup(SteadyTime at, GroupActions& out);
  // Names the members whose tasks have not all reported a position, at most once a minute.
  void WarnAboutMissingPositions(GroupActions& out);
  // Drops a queued savepoint whose timeout passed.
  void ExpireQueuedSavepoint(GroupActions& out);
  // Admission (as a pipeline's, PipelineCoordinator::SettleAdmission): whether a cap is set, what
  // a round asks for, and leaving what is no longer wanted: a place in line when the group is no
  // longer ready, an admission without a round (unless it only waits for its ids).
  bool AdmissionOn() const { return options_.admission && options_.admission->enabled(); }
  // The adaptive interval of the group's rounds: its inputs, fixed when a round ends.
  IntervalInputs AdaptiveIntervalInputs() const;
  // With `out`, a change is told to the members (GroupIntervalChanged).
  void FixEffectiveInterval(GroupActions* out = nullptr);
  AdmissionRequest RequestForAdmission(AdmissionClass line) const;
  void SettleAdmission(GroupActions& out);
  bool WaitingForAdmission() const { return InLine(admission_); }

  AlignmentGroupSpec spec_;
  GroupProgress progress_;
  const Clock& clock_;
  const GroupOptions options_;
  std::map<PipelineKey, Member> members_;
  std::optional<PendingRound> pending_;
  // A durable round with a commit phase whose members have not all committed it.
  struct CommittingRound {
    int64_t id = 0;
    std::set<PipelineKey> members;  // of the round, still in the group
    std::set<PipelineKey> waiting;  // of those, not committed yet
  };
  std::optional<CommittingRound> committing_;
  // Every member of the committing round committed: each marks it.
  void ReleaseCommittedRound(GroupActions& out);
  int64_t next_id_ = 1;         // the next id to hand out, if within progress_.id_counter
  bool reserving_ = false;      // a ReserveGroupIds is with the store
  bool bump_position_ = false;  // the last round failed on a passed position: one more step
  AdmissionState admission_ = AdmissionState::kNone;
  RecentDurations recent_durations_;   // of the group's completed rounds, trigger to durable
  int64_t effective_interval_ms_ = 0;  // FixEffectiveInterval's
  struct QueuedSavepoint {
    CheckpointKind kind = CheckpointKind::kSavepoint;
    SteadyTime deadline;
  };
  std::optional<QueuedSavepoint> queued_;            // a savepoint waiting for its round
  std::optional<SteadyTime> armed_wakeup_;           // the ArmGroupWakeup in force (none re-sent)
  std::optional<SteadyTime> next_position_warning_;  // when members without positions are named
  std::optional<SteadyTime> last_trigger_at_;
  std::optional<SteadyTime> last_finished_at_;
  std::optional<SteadyTime> start_hold_until_;  // HoldForStartOffset's
  SteadyTime baseline_;
};

}  // namespace ckpt
