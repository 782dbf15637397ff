#include "core/group_coordinator.h"

#include <algorithm>
#include <limits>

#include "core/spec_validation.h"
#include "core/start_spread.h"

namespace ckpt {

namespace {

std::string MemberName(const PipelineKey& key) { return key.ToString(); }

}  // namespace

GroupCoordinator::GroupCoordinator(AlignmentGroupSpec spec, GroupProgress progress,
                                   const Clock& clock, GroupOptions options)
    : spec_(std::move(spec)),
      progress_(progress),
      clock_(clock),
      options_(options),
      next_id_(std::max(progress.id_counter, progress.last_round_id) + 1),
      baseline_(clock.SteadyNow()) {
  // Ids below the stored counter may have been handed out before a restart: never again.
  progress_.id_counter = next_id_ - 1;
  FixEffectiveInterval();
}

GroupActions GroupCoordinator::Start() {
  const SteadyTime now = clock_.SteadyNow();
  baseline_ = now;
  if (progress_.last_completed_at_ms > 0) {
    // The schedule continues from the last durable round, not from process start: map its
    // wall-clock time onto the steady clock (as a pipeline does).
    const Millis age{std::max<int64_t>(0, clock_.WallMs() - progress_.last_completed_at_ms)};
    last_trigger_at_ = now - age;
    last_finished_at_ = now - age;
  }
  GroupActions out;
  EnsureIds(out);  // a block ahead of the first round, as a pipeline reserves at its start
  ArmNext(out);
  return out;
}

std::vector<PipelineKey> GroupCoordinator::Members() const {
  std::vector<PipelineKey> keys;
  for (const auto& [key, member] : members_) keys.push_back(key);
  return keys;
}

GroupActions GroupCoordinator::AddMember(const PipelineKey& member, int64_t member_id_counter) {
  Member& m = members_[member];
  m.id_floor = std::max(m.id_floor, member_id_counter);
  GroupActions out;
  out.push_back(Log{LogLevel::kInfo, "group " + spec_.name + ": " + MemberName(member) +
                                         " joined (" + std::to_string(members_.size()) +
                                         " members)"});
  return out;
}

GroupActions GroupCoordinator::RemoveMember(const PipelineKey& member, const std::string& why) {
  GroupActions out;
  if (!members_.count(member)) return out;
  // Out of the group first: a round started from here on (EndRound tries the next at once) must
  // not include it. Its abort still goes out: EndRound takes the round's members from pending_.
  members_.erase(member);
  out.push_back(Log{LogLevel::kInfo,
                    "group " + spec_.name + ": " + MemberName(member) + " left (" + why + ")"});
  if (committing_ && committing_->members.erase(member) > 0) {
    // It commits alone from now on; the others no longer wait for it.
    committing_->waiting.erase(member);
    if (committing_->waiting.empty()) {
      if (committing_->members.empty()) {
        committing_.reset();
      } else {
        ReleaseCommittedRound(out);
      }
    }
  }
  const bool in_round =
      pending_ && (pending_->waiting.count(member) ||
                   std::any_of(pending_->done.begin(), pending_->done.end(),
                               [&](const CheckpointCommit& c) { return c.key == member; }));
  GroupActions more = in_round && !pending_->committing
                          ? EndRound(GroupRoundResult::kAborted,
                                     MemberName(member) + " left the group (" + why + ")", {},
                                     MemberOutcome::kAborted, MemberOutcome::kAborted)
                          : TryStart(false, std::nullopt);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

GroupActions GroupCoordinator::OnMemberCommitted(const PipelineKey& member, int64_t checkpoint_id) {
  GroupActions out;
  if (!committing_ || committing_->id != checkpoint_id || !committing_->members.count(member)) {
    // Not a round this group holds COMMITTING (the daemon restarted since, or the member joined
    // after it): the member marks its own part.
    out.push_back(MarkMemberCommitted{member, checkpoint_id});
    return out;
  }
  committing_->waiting.erase(member);
  if (committing_->waiting.empty()) ReleaseCommittedRound(out);
  return out;
}

void GroupCoordinator::ReleaseCommittedRound(GroupActions& out) {
  for (const PipelineKey& member : committing_->members) {
    out.push_back(MarkMemberCommitted{member, committing_->id});
  }
  out.push_back(Log{LogLevel::kDebug, "group " + spec_.name + ": every member committed round " +
                                          std::to_string(committing_->id)});
  committing_.reset();
}

bool GroupCoordinator::CommittingWith(const PipelineKey& member) const {
  return pending_ && pending_->committing &&
         std::any_of(pending_->done.begin(), pending_->done.end(),
                     [&](const CheckpointCommit& c) { return c.key == member; });
}

IntervalInputs GroupCoordinator::AdaptiveIntervalInputs() const {
  const bool backlog = std::any_of(members_.begin(), members_.end(),
                                   [](const auto& entry) { return entry.second.backlog; });
  return IntervalInputs{spec_.interval_ms,         spec_.max_overhead,        spec_.max_interval_ms,
                        recent_durations_.count(), recent_durations_.P95Ms(), backlog};
}

void GroupCoordinator::FixEffectiveInterval(GroupActions* out) {
  EffectiveInterval fixed = DescribeEffectiveInterval(AdaptiveIntervalInputs());
  const bool changed = fixed.ms != effective_interval_ms_;
  effective_interval_ms_ = fixed.ms;
  if (out && changed) out->push_back(GroupIntervalChanged{fixed.ms, std::move(fixed.reason)});
}

GroupIntervalChanged GroupCoordinator::CurrentInterval() const {
  return {effective_interval_ms_, DescribeEffectiveInterval(AdaptiveIntervalInputs()).reason};
}

GroupActions GroupCoordinator::UpdateSpec(const AlignmentGroupSpec& spec) {
  if (spec == spec_) return {};
  spec_ = spec;
  armed_wakeup_.reset();  // the time gate may have moved either way: arm it anew
  GroupActions out;
  FixEffectiveInterval(&out);
  out.push_back(Log{LogLevel::kInfo, "group " + spec_.name + ": policy changed (interval " +
                                         std::to_string(spec_.interval_ms) + " ms)"});
  ArmNext(out);
  return out;
}

GroupActions GroupCoordinator::OnMemberState(const PipelineKey& member, bool ready,
                                             const std::string& holdup, int64_t predicted_bytes,
                                             bool backlog) {
  auto it = members_.find(member);
  if (it == members_.end()) return {};
  const bool all_before = AllReady();
  it->second.ready = ready;
  it->second.holdup = ready ? std::string() : holdup;
  it->second.predicted_bytes = predicted_bytes;
  it->second.backlog = backlog;
  if (!ready) {
    GroupActions out;
    SettleAdmission(out);  // a place in line is for a group ready to go
    return out;
  }
  if (!all_before && AllReady()) HoldForStartOffset();
  return TryStart(false, std::nullopt);
}

GroupActions GroupCoordinator::OnMemberPositions(const PipelineKey& member,
                                                 const MemberPositions& positions) {
  auto it = members_.find(member);
  if (it == members_.end()) return {};
  it->second.positions = positions;
  return TryStart(false, std::nullopt);
}

GroupActions GroupCoordinator::OnMemberDone(const PipelineKey& member, int64_t checkpoint_id,
                                            CheckpointCommit commit) {
  if (!pending_ || pending_->id != checkpoint_id || pending_->committing ||
      !pending_->waiting.count(member)) {
    return {};  // a round that ended meanwhile, or a member not in it
  }
  pending_->waiting.erase(member);
  pending_->done.push_back(std::move(commit));
  if (!pending_->waiting.empty()) return {};
  // Every member is done: one commit for all of them.
  pending_->committing = true;
  GroupActions out;
  out.push_back(CancelGroupDeadline{});
  CommitGroupRound commit_all;
  commit_all.checkpoint_id = pending_->id;
  commit_all.members = pending_->done;
  commit_all.progress_after = progress_;
  commit_all.progress_after.last_round_id = pending_->id;
  commit_all.progress_after.last_position = pending_->position;
  commit_all.progress_after.last_completed_at_ms = clock_.WallMs();
  out.push_back(std::move(commit_all));
  return out;
}

GroupActions GroupCoordinator::OnMemberFailed(const PipelineKey& member, int64_t checkpoint_id,
                                              MemberFailure failure, const std::string& reason) {
  if (!pending_ || pending_->id != checkpoint_id || pending_->committing) return {};
  // Only a member still waited for can fail the round: one that is done has all its acks.
  if (!pending_->waiting.count(member)) return {};
  const std::string why = MemberName(member) + ": " + reason;
  if (failure == MemberFailure::kTaskLost || failure == MemberFailure::kAborted) {
    // Its "not ready" follows this message: until it comes, do not start a round with it.
    Member& m = members_[member];
    m.ready = false;
    m.holdup = reason;
  }
  switch (failure) {
    case MemberFailure::kDeclined:
      return EndRound(GroupRoundResult::kFailed, why, {member}, MemberOutcome::kFailed);
    case MemberFailure::kPassedPosition:
      bump_position_ = true;
      return EndRound(GroupRoundResult::kFailed, why, {member}, MemberOutcome::kFailed);
    case MemberFailure::kExpired:
      return EndRound(GroupRoundResult::kExpired, why, {member}, MemberOutcome::kExpired);
    case MemberFailure::kTaskLost:
    case MemberFailure::kAborted:
      return EndRound(GroupRoundResult::kAborted, why, {}, MemberOutcome::kAborted,
                      MemberOutcome::kAborted);
  }
  return {};
}

GroupActions GroupCoordinator::OnWakeup() {
  armed_wakeup_.reset();
  GroupActions out;
  ExpireQueuedSavepoint(out);
  auto more = TryStart(false, std::nullopt);
  out.insert(out.end(), more.begin(), more.end());
  if (queued_) ArmWakeup(queued_->deadline, out);  // still held: its timeout wakes the group
  return out;
}

GroupActions GroupCoordinator::OnDeadline(int64_t checkpoint_id) {
  if (!pending_ || pending_->id != checkpoint_id || pending_->committing) return {};
  // Every member still waited for held the round: each expires; the others are aborted.
  const std::set<PipelineKey> late = pending_->waiting;
  std::string names;
  for (const auto& key : late) names += (names.empty() ? "" : ", ") + MemberName(key);
  return EndRound(
      GroupRoundResult::kExpired,
      "timed out after " + std::to_string(spec_.timeout_ms) + " ms waiting for " + names, late,
      MemberOutcome::kExpired);
}

GroupActions GroupCoordinator::OnIdsReserved(int64_t counter) {
  reserving_ = false;
  progress_.id_counter = std::max(progress_.id_counter, counter);
  return TryStart(false, std::nullopt);
}

GroupActions GroupCoordinator::OnIdsReserveFailed(const Status& error) {
  reserving_ = false;
  GroupActions out;
  out.push_back(Log{LogLevel::kWarn, "group " + spec_.name + ": could not reserve ids: " +
                                         error.message() + "; retrying at the next wakeup"});
  ArmWakeup(clock_.SteadyNow() + Millis(1000), out);
  return out;
}

GroupActions GroupCoordinator::OnCommitted(int64_t checkpoint_id) {
  if (!pending_ || pending_->id != checkpoint_id || !pending_->committing) return {};
  GroupActions out;
  progress_.last_round_id = pending_->id;
  progress_.last_position = pending_->position;
  progress_.last_completed_at_ms = clock_.WallMs();
  for (const auto& c : pending_->done) {
    out.push_back(MemberRoundDurable{c.key, pending_->id});
  }
  if (spec_.commit_timeout_ms > 0) {
    // COMMITTING in each member from now on: none is ready for the next round until the whole
    // round is COMMITTED, which each member reports (OnMemberState) once it marked it.
    CommittingRound round{pending_->id, {}, {}};
    for (const auto& c : pending_->done) {
      auto m = members_.find(c.key);
      if (m == members_.end()) continue;  // left while the store wrote it: commits alone
      round.members.insert(c.key);
      m->second.ready = false;
      m->second.holdup = "committing group round " + std::to_string(pending_->id);
    }
    round.waiting = round.members;
    if (!round.members.empty()) committing_ = std::move(round);
  }
  out.push_back(GroupRoundFinished{pending_->id, GroupRoundResult::kCompleted, ""});
  last_finished_at_ = clock_.SteadyNow();
  recent_durations_.Add(
      std::chrono::duration_cast<Millis>(*last_finished_at_ - pending_->triggered_at).count());
  pending_.reset();
  FixEffectiveInterval(&out);
  SettleAdmission(out);  // its round ended: the admission it held goes
  auto more = TryStart(false, std::nullopt);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

GroupActions GroupCoordinator::OnCommitFailed(int64_t checkpoint_id, const Status& error) {
  if (!pending_ || pending_->id != checkpoint_id || !pending_->committing) return {};
  pending_->committing = false;  // nothing is durable: it ends like any other failed round
  return EndRound(GroupRoundResult::kFailed, "the store failed the commit: " + error.message(), {},
                  MemberOutcome::kStoreFailed, MemberOutcome::kStoreFailed);
}

GroupCoordinator::Outcome GroupCoordinator::RequestRound(
    CheckpointKind kind, int64_t* checkpoint_id, Millis timeout,
    const std::function<Status(const AdmissionRequest&)>& admit_now) {
  if (checkpoint_id) *checkpoint_id = 0;
  const bool savepoint = kind != CheckpointKind::kCheckpoint;
  if (members_.empty()) {
    return {Status::FailedPrecondition("group " + spec_.name + " has no members"), {}};
  }
  const bool ids_ready = std::max(next_id_, IdFloor() + 1) <= progress_.id_counter;
  // With admission, a savepoint waits in the admission line like one queued behind a round.
  const bool savepoint_waits_in_line = savepoint && AdmissionOn();
  if (!pending_ && AllReady() && ids_ready && !savepoint_waits_in_line) {
    if (AdmissionOn() && admit_now && admission_ != AdmissionState::kAdmitted) {
      // An operator's round does not wait in line: it goes now or is refused, naming the cap.
      if (Status s = admit_now(RequestForAdmission(AdmissionClass::kPeriodic)); !s.ok()) {
        return {std::move(s), {}};
      }
      admission_ = AdmissionState::kAdmitted;  // (a group waiting in line is refused above)
    }
    GroupActions out = TryStart(true, kind);
    if (checkpoint_id && pending_) *checkpoint_id = pending_->id;
    return {Status::Ok(), std::move(out)};
  }
  if (savepoint) {
    if (queued_) {
      return {Status::FailedPrecondition("a savepoint of group " + spec_.name +
                                         " is already waiting for its round"),
              {}};
    }
    queued_ = QueuedSavepoint{kind, clock_.SteadyNow() + timeout};
    GroupActions out = TryStart(false, std::nullopt);
    // Its timeout wakes the group (unless an earlier wakeup comes first and re-arms then).
    if (queued_ && (!armed_wakeup_ || *armed_wakeup_ > queued_->deadline)) {
      ArmWakeup(queued_->deadline, out);
    }
    return {Status::Ok(), std::move(out)};
  }
  // Refused calls carry no actions: the id reservation is TryStart's, at the next wakeup.
  if (pending_) {
    return {
        Status::FailedPrecondition("group round " + std::to_string(pending_->id) + " is pending"),
        {}};
  }
  if (!AllReady()) {
    return {Status::FailedPrecondition("not every member of group " + spec_.name + " is ready"),
            {}};
  }
  return {Status::Unavailable("group " + spec_.name +
                              " is reserving its ids with the store; try again"),
          {}};
}

GroupActions GroupCoordinator::CancelQueuedSavepoint() {
  GroupActions out;
  if (queued_) {
    out.push_back(GroupSavepointDropped{queued_->kind, "nobody waits for it any more"});
    queued_.reset();
    // Out of the savepoints' line; the schedule goes on from here (the next periodic round asks,
    // or the wakeup waits for the gates), not from the dropped savepoint's timeout.
    SettleAdmission(out);
    ArmNext(out);
  }
  return out;
}

void GroupCoordinator::ExpireQueuedSavepoint(GroupActions& out) {
  if (!queued_ || clock_.SteadyNow() < queued_->deadline) return;
  std::string why = "its timeout passed before the round could start";
  if (pending_) {
    why += " (group round " + std::to_string(pending_->id) + " was pending)";
  } else {
    for (const auto& [key, m] : members_) {
      if (!m.ready) {
        why += " (" + MemberName(key) + ": " + m.holdup + ")";
        break;
      }
    }
  }
  out.push_back(GroupSavepointDropped{queued_->kind, why});
  queued_.reset();
}

GroupExplanation GroupCoordinator::Explain() const {
  GroupExplanation e;
  e.effective_interval_ms = effective_interval_ms_;
  e.effective_interval_reason = InForceReason(effective_interval_ms_, AdaptiveIntervalInputs());
  e.last_round_id = progress_.last_round_id;
  e.last_position = progress_.last_position;
  if (committing_) e.committing_checkpoint_id = committing_->id;
  if (pending_) {
    e.pending_checkpoint_id = pending_->id;
    for (const auto& key : pending_->waiting) {
      e.holding.emplace_back(key, "has not acked group round " + std::to_string(pending_->id));
    }
    return e;
  }
  for (const auto& [key, m] : members_) {
    if (committing_ && committing_->waiting.count(key)) {
      e.holding.emplace_back(key,
                             "has not committed group round " + std::to_string(committing_->id));
    } else if (!m.ready) {
      e.holding.emplace_back(key, m.holdup);
    }
    if (spec_.position_interval > 0 && (!m.positions || !m.positions->all_reported)) {
      e.without_positions.push_back(key);
    }
  }
  e.waiting_for_ids = std::max(next_id_, IdFloor() + 1) > progress_.id_counter;
  e.waiting_for_positions = !PositionsAllow();
  e.waiting_for_admission = WaitingForAdmission();
  if (e.holding.empty() && !e.waiting_for_ids && !e.waiting_for_positions) {
    e.next_trigger_in_ms = std::max<int64_t>(
        0, std::chrono::duration_cast<Millis>(TimeGateOpensAt() - clock_.SteadyNow()).count());
  }
  return e;
}

bool GroupCoordinator::AllReady() const {
  if (members_.empty()) return false;
  return std::all_of(members_.begin(), members_.end(),
                     [](const auto& entry) { return entry.second.ready; });
}

bool GroupCoordinator::PositionsAllow() const {
  if (spec_.position_interval <= 0) return true;
  for (const auto& [key, m] : members_) {
    if (!m.positions || !m.positions->all_reported) return false;
    if (m.positions->min < progress_.last_position + spec_.position_interval) return false;
  }
  return true;
}

int64_t GroupCoordinator::NextPosition() const {
  if (spec_.position_interval <= 0) return 0;
  int64_t highest = progress_.last_position;
  for (const auto& [key, m] : members_) {
    if (m.positions) highest = std::max(highest, m.positions->max);
  }
  // The smallest multiple of the interval strictly above every reported position.
  const int64_t step = spec_.position_interval;
  int64_t position = (highest / step + 1) * step;
  if (bump_position_) position += step;  // the last round was passed: one more step, once
  return position;
}

void GroupCoordinator::HoldForStartOffset() {
  const double fraction = options_.start_slot ? StartSlotFraction(*options_.start_slot)
                                              : StartKeyFraction(PipelineKey{"", spec_.name});
  if (auto hold = NewStartHold(clock_.SteadyNow(), start_hold_until_, last_trigger_at_,
                               spec_.interval_ms, fraction, options_.start_spread)) {
    start_hold_until_ = *hold;
  }
}

SteadyTime GroupCoordinator::TimeGateOpensAt() const {
  SteadyTime at = baseline_;
  if (start_hold_until_) at = std::max(at, *start_hold_until_);
  if (last_trigger_at_) at = std::max(at, *last_trigger_at_ + Millis(effective_interval_ms_));
  if (last_finished_at_ && spec_.min_pause_ms > 0) {
    at = std::max(at, *last_finished_at_ + Millis(spec_.min_pause_ms));
  }
  return at;
}

bool GroupCoordinator::EnsureIds(GroupActions& out) {
  // The id: above every id a member used before it joined.
  next_id_ = std::max(next_id_, IdFloor() + 1);
  if (next_id_ <= progress_.id_counter) return true;
  if (next_id_ - 1 > kMaxCheckpointId - options_.id_block) {
    // Unreachable in practice (counters are at most kMaxCheckpointId at load): no id above the
    // bound, which a member's history could not hold. No round starts; said at each attempt.
    out.push_back(Log{LogLevel::kError, "group " + spec_.name +
                                            ": checkpoint ids are exhausted (the next would be " +
                                            std::to_string(next_id_) + "); no round starts"});
    return false;
  }
  if (!reserving_) {
    reserving_ = true;
    out.push_back(ReserveGroupIds{next_id_ - 1 + options_.id_block});
  }
  return false;
}

int64_t GroupCoordinator::IdFloor() const {
  int64_t floor = progress_.last_round_id;
  for (const auto& [key, m] : members_) floor = std::max(floor, m.id_floor);
  return floor;
}

GroupActions GroupCoordinator::TryStart(bool forced, std::optional<CheckpointKind> kind) {
  GroupActions out;
  if (pending_ || !AllReady()) {
    SettleAdmission(out);
    return out;
  }
  const bool savepoint_waits = queued_.has_value();
  if (!forced && !savepoint_waits) {
    if (!PositionsAllow()) {  // OnMemberPositions tries again
      WarnAboutMissingPositions(out);
      SettleAdmission(out);
      return out;
    }
    if (clock_.SteadyNow() < TimeGateOpensAt()) {
      ArmWakeup(TimeGateOpensAt(), out);
      SettleAdmission(out);
      return out;
    }
  }
  if (!forced && admission_ != AdmissionState::kAdmitted && AdmissionOn()) {
    // Ready and due, but the daemon caps the rounds in flight: the round waits in line as one
    // unit (OnAdmitted tries again). A savepoint queued meanwhile moves it ahead.
    const AdmissionState waiting =
        savepoint_waits ? AdmissionState::kWaitingSavepoint : AdmissionState::kWaitingPeriodic;
    if (admission_ != waiting) {
      admission_ = waiting;
      out.push_back(AskAdmission{RequestForAdmission(savepoint_waits ? AdmissionClass::kSavepoint
                                                                     : AdmissionClass::kPeriodic)});
    }
    return out;
  }
  if (!EnsureIds(out)) return out;  // OnIdsReserved tries again (an admission stays held)
  PendingRound round;
  round.id = next_id_++;
  round.kind = kind ? *kind : queued_ ? queued_->kind : CheckpointKind::kCheckpoint;
  if (!kind && queued_) queued_.reset();
  round.position = NextPosition();
  bump_position_ = false;  // applied to this round: once, not cumulative
  round.triggered_at = clock_.SteadyNow();
  const int64_t now_ms = clock_.WallMs();
  for (const auto& [key, m] : members_) {
    round.waiting.insert(key);
    out.push_back(StartMemberRound{key, round.id, round.kind, round.position, now_ms});
  }
  out.push_back(ArmGroupDeadline{round.triggered_at + Millis(spec_.timeout_ms), round.id});
  out.push_back(GroupRoundStarted{round.id, round.kind, round.position});
  last_trigger_at_ = round.triggered_at;
  pending_ = std::move(round);
  // Keep a block ahead: the next round should not wait on the store.
  if (!reserving_ && progress_.id_counter - next_id_ < options_.id_block / 2 &&
      progress_.id_counter <= kMaxCheckpointId - options_.id_block) {
    reserving_ = true;
    out.push_back(ReserveGroupIds{progress_.id_counter + options_.id_block});
  }
  return out;
}

AdmissionRequest GroupCoordinator::RequestForAdmission(AdmissionClass line) const {
  AdmissionRequest request;
  request.line = line;
  request.due = TimeGateOpensAt();
  request.rounds = static_cast<int64_t>(members_.size());
  request.bytes = 0;
  for (const auto& [key, m] : members_) {
    request.bytes = AddPredictedBytes(request.bytes, m.predicted_bytes);
  }
  return request;
}

GroupActions GroupCoordinator::OnAdmitted() {
  if (!WaitingForAdmission()) return {};  // it left meanwhile
  admission_ = AdmissionState::kAdmitted;
  return TryStart(false, std::nullopt);
}

void GroupCoordinator::SettleAdmission(GroupActions& out) {
  switch (admission_) {
    case AdmissionState::kNone: return;
    case AdmissionState::kAdmitted:
      // In flight with its round. (Admitted and waiting for its ids, TryStart does not settle.)
      if (pending_) return;
      break;
    case AdmissionState::kWaitingPeriodic:
    case AdmissionState::kWaitingSavepoint:
      if (!pending_ && AllReady() && (admission_ == AdmissionState::kWaitingPeriodic || queued_)) {
        return;
      }
      break;
  }
  admission_ = AdmissionState::kNone;
  out.push_back(LeaveAdmission{});
}

GroupActions GroupCoordinator::EndRound(GroupRoundResult result, const std::string& reason,
                                        const std::set<PipelineKey>& at_fault,
                                        MemberOutcome fault_outcome,
                                        std::optional<MemberOutcome> everyone) {
  GroupActions out;
  if (!pending_) return out;
  out.push_back(CancelGroupDeadline{});
  std::set<PipelineKey> in_round = pending_->waiting;
  for (const auto& c : pending_->done) in_round.insert(c.key);
  for (const auto& key : in_round) {
    const MemberOutcome outcome = everyone              ? *everyone
                                  : at_fault.count(key) ? fault_outcome
                                                        : MemberOutcome::kAborted;
    out.push_back(AbortMemberRound{key, pending_->id, outcome, reason});
  }
  out.push_back(GroupRoundFinished{pending_->id, result, reason});
  out.push_back(Log{result == GroupRoundResult::kAborted ? LogLevel::kInfo : LogLevel::kWarn,
                    "group " + spec_.name + ": round " + std::to_string(pending_->id) +
                        " ended for every member: " + reason});
  last_finished_at_ = clock_.SteadyNow();
  pending_.reset();
  FixEffectiveInterval(&out);
  SettleAdmission(out);  // its round ended: the admission it held goes
  ArmNext(out);
  return out;
}

void GroupCoordinator::ArmNext(GroupActions& out) {
  auto more = TryStart(false, std::nullopt);
  out.insert(out.end(), more.begin(), more.end());
}

void GroupCoordinator::ArmWakeup(SteadyTime at, GroupActions& out) {
  if (armed_wakeup_ == at) return;  // every report would arm the same time again
  armed_wakeup_ = at;
  out.push_back(ArmGroupWakeup{at});
}

void GroupCoordinator::WarnAboutMissingPositions(GroupActions& out) {
  const SteadyTime now = clock_.SteadyNow();
  if (next_position_warning_ && now < *next_position_warning_) return;
  std::string names;
  for (const auto& [key, m] : members_) {
    if (!m.positions || !m.positions->all_reported) {
      names += (names.empty() ? "" : ", ") + MemberName(key);
    }
  }
  if (names.empty()) return;  // every task reports; the positions are only not far enough yet
  next_position_warning_ = now + std::chrono::minutes(1);
  out.push_back(Log{LogLevel::kWarn, "group " + spec_.name + " has position_interval " +
                                         std::to_string(spec_.position_interval) +
                                         " but tasks of " + names +
                                         " have not reported positions; no round starts until "
                                         "they do"});
}

}  // namespace ckpt
