// A pipeline as a member of an alignment group (docs/ALIGNMENT.md): the group starts its rounds
// and makes them durable; the member triggers its tasks, collects their acks and reports back
// (MemberDone, MemberFailed). Rounds of its own are in pipeline_coordinator.cc.
#include <algorithm>

#include "common/name_list.h"
#include "core/pipeline_coordinator.h"
#include "core/printable.h"
#include "core/spec_validation.h"

namespace ckpt {

Actions PipelineCoordinator::SetGroup(std::optional<AlignmentGroupSpec> group, int64_t id_floor) {
  Actions out;
  if (group) {
    group_ = std::make_unique<const AlignmentGroupSpec>(std::move(*group));
    SyncPositionGate();  // a member keeps its tasks' positions for the group's gate
    // Savepoints are the group's from now on; a round of its own already pending ends as its
    // own (the runtime joins a pipeline before it starts, so there is none there).
    FinishQueuedSavepoint("the pipeline joined alignment group " + group_->name, out);
    Rearm(out);  // no periodic trigger of its own from now on
    return out;
  }
  if (!group_) return out;
  const std::string name = group_->name;
  if (pending_ && pending_->of_group() && !pending_->completing()) {
    FailRound(CheckpointStatus::kAborted, "left alignment group " + name, FailureCause::kAborted,
              out);
  }
  group_.reset();
  if (Committing() && commits_->phase->awaits_group()) {
    // On its own now: it marks its part when its tasks committed, without the group.
    commits_->phase->GroupAgreed();
    MaybeWriteCommitMark(out);
  }
  // Its own ids continue above every id the group handed out; reserved before its next round.
  ids_.RaiseAbove(id_floor);
  SyncPositionGate();
  out.push_back(Log{LogLevel::kInfo, "left alignment group " + name + "; checkpoints on its own"});
  MaybeReserveIds(out);
  Rearm(out);
  return out;
}

std::pair<bool, std::string> PipelineCoordinator::GroupReadiness() const {
  if (!group_) return {false, "not a member"};
  if (deleted_) return {false, "deleted"};
  if (shutting_down_) return {false, "the daemon is shutting down"};
  if (sticky_ != StickyState::kActive) return {false, PipelineStateName(State())};
  if (!AllTasksRegistered()) {
    // Asked after every event of a member: the count costs nothing, the names a walk that
    // stops at the third.
    const size_t total = expected_.size() - task_owner_.held();
    std::vector<std::string> names;
    for (const std::string& task : spec_.task_ids) {
      if (names.size() == 3) break;
      if (OwnerOf(task) == TaskOwners::kNobody) names.push_back(Printable(task));
    }
    return {false, "waiting for " + std::to_string(total) + " of " +
                       std::to_string(expected_.size()) + " tasks: " + FirstNames(names, total)};
  }
  if (!store_writable_) return {false, "the store fails writes"};
  if (RestoreBlocked()) {
    const auto* failure = occasional_or_none().restore_failure.get();
    return {false, "its restore point failed" + (failure ? ": " + failure->what : std::string())};
  }
  if (Committing()) {
    return {false, "checkpoint " + std::to_string(CommittingId()) + " is COMMITTING (" +
                       std::to_string(commits_->phase->tasks_left()) + " tasks left)"};
  }
  if (pending_) {
    return {false, std::string(pending_->completing() ? "completing " : "pending ") +
                       CheckpointKindName(pending_->kind()) + " " + std::to_string(pending_->id())};
  }
  return {true, ""};
}

MemberPositions PipelineCoordinator::GroupPositions() const {
  MemberPositions p;
  if (!positions_) return p;
  p.min = positions_->gate().Lowest().value_or(0);
  p.max = positions_->gate().Highest().value_or(0);
  p.all_reported = !expected_.empty() && positions_->gate().reported() >= expected_.size();
  return p;
}

uint64_t PipelineCoordinator::PositionsVersion() const {
  // The gate's own count, and whether there is a gate (made or dropped with the policy).
  // And the task set's size: a task added makes all_reported false without a report.
  return positions_ ? (positions_->gate().version() * 2 + 1) ^ (uint64_t{expected_.size()} << 40)
                    : 0;
}

int64_t PipelineCoordinator::IdFloor() const {
  return std::max(ids_.Highest(), last_completed_id_);
}

Actions PipelineCoordinator::StartGroupRound(int64_t checkpoint_id, CheckpointKind kind,
                                             int64_t position) {
  Actions out;
  if (checkpoint_id < 1 || checkpoint_id > kMaxCheckpointId) {
    out.push_back(MemberFailed{checkpoint_id, MemberFailure::kAborted,
                               "checkpoint id " + std::to_string(checkpoint_id) + " outside 1.." +
                                   std::to_string(kMaxCheckpointId),
                               std::nullopt});
    return out;
  }
  auto [ready, holdup] = GroupReadiness();
  if (!ready) {
    // The group saw it ready a moment ago: messages crossed. It aborts the round for everyone.
    out.push_back(
        MemberFailed{checkpoint_id, MemberFailure::kAborted, "not ready: " + holdup, std::nullopt});
    return out;
  }
  if (kind != CheckpointKind::kCheckpoint) {
    // A group's savepoint is one in every member's history: a member at its cap refuses it for
    // all, as its own savepoint would be refused. Declined, not aborted: an abort tells the group
    // a "not ready" follows, and none would (the member is as ready as before).
    if (Status room = CheckSavepointRoom(); !room.ok()) {
      out.push_back(MemberFailed{checkpoint_id, MemberFailure::kDeclined, room.message(),
                                 CountedLimit::kMaxSavepointsPerPipeline});
      return out;
    }
  }
  const SteadyTime now = clock_.SteadyNow();
  if (commits_) commits_->phase.reset();  // the last one's COMMITTED record: a new round is on
  ids_.RaiseAbove(checkpoint_id);         // ids stay increasing if it leaves
  PendingRound::Start round;
  round.id = checkpoint_id;
  round.kind = kind;
  round.target = kind != CheckpointKind::kCheckpoint ? SavepointLocation("", checkpoint_id) : "";
  round.triggered_at = now;
  round.triggered_at_ms = clock_.WallMs();
  round.deadline = now + Millis(group_->timeout_ms);  // the group's timer, not this pipeline's
  round.stuck_noted = true;                           // no timer here: no stuck notice either
  round.position = position;
  round.of_group = true;
  last_trigger_at_ = now;
  out.push_back(SendTrigger{Sessions(), round.id, kind, round.triggered_at_ms, generation_,
                            round.target, round.position});
  out.push_back(Log{LogLevel::kDebug, std::string("triggered ") + CheckpointKindName(kind) + " " +
                                          std::to_string(round.id) + " of alignment group " +
                                          group_->name});
  pending_ = std::make_unique<PendingRound>(std::move(round));
  Rearm(out);
  return out;
}

Actions PipelineCoordinator::EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome,
                                           const std::string& reason) {
  Actions out;
  // Not pending here: it failed here first (or it is a round of its own).
  if (!pending_ || pending_->id() != checkpoint_id || !pending_->of_group()) return out;
  const bool savepoint = pending_->kind() != CheckpointKind::kCheckpoint;
  const FailureCause counted = savepoint ? FailureCause::kNotCounted : FailureCause::kCounted;
  const std::string why =
      "alignment group " + (group_ ? group_->name : std::string()) + ": " + reason;
  switch (outcome) {
    case MemberOutcome::kAborted:
      FailRound(CheckpointStatus::kAborted, why, FailureCause::kAborted, out, false);
      break;
    case MemberOutcome::kFailed:
      FailRound(CheckpointStatus::kFailed, why, counted, out, false);
      break;
    case MemberOutcome::kExpired:
      FailRound(CheckpointStatus::kExpired, why, counted, out, false);
      break;
    case MemberOutcome::kStoreFailed:
      // The daemon's failure, not the pipeline's (as for a round of its own).
      FailRound(CheckpointStatus::kFailed, why, FailureCause::kNotCounted, out, false);
      break;
  }
  MaybeDecideRestoreFailure(out);  // a restore that failed meanwhile waited for this round
  Rearm(out);
  return out;
}

void PipelineCoordinator::SetGroupInterval(int64_t ms, std::string reason) {
  Occasional& o = occasional();
  o.group_interval_ms = ms;
  o.group_interval_reason = std::move(reason);
}

}  // namespace ckpt
