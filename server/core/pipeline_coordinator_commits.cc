// The commit phase (docs/PROTOCOL.md, "Commit phase"): a completed checkpoint of a pipeline with
// commit_timeout_ms is COMMITTING until every task sent `committed`, then its COMMITTED mark is
// written (retried until durable) and all_committed told. While COMMITTING no round starts. The
// per-task marks, the overdue notice and the mark's write are CommitPhase's (commit_phase.h);
// what COMMITTING holds back is decided here and where each call is refused.
#include <algorithm>

#include "common/name_list.h"
#include "core/pipeline_coordinator.h"
#include "core/printable.h"

namespace ckpt {

PipelineCoordinator::Commits& PipelineCoordinator::commits() {
  if (!commits_) commits_ = std::make_unique<Commits>();
  return *commits_;
}

int64_t PipelineCoordinator::CommitTimeoutMs() const {
  return group_ ? group_->commit_timeout_ms : spec_.commit_timeout_ms;
}

int64_t PipelineCoordinator::CommittingId() const {
  return Committing() ? commits_->phase->checkpoint_id() : 0;
}

Status PipelineCoordinator::RefuseWhileCommitting(const std::string& what) const {
  if (!Committing()) return Status::Ok();
  const CommitPhase& phase = *commits_->phase;
  return Status::FailedPrecondition(
      "checkpoint " + std::to_string(phase.checkpoint_id()) + " of pipeline " +
      spec_.key.ToString() + " is COMMITTING (" + std::to_string(phase.tasks_left()) + " of " +
      std::to_string(expected_.size()) + " tasks have not committed); " + what +
      " waits until it is COMMITTED");
}

void PipelineCoordinator::BeginCommitPhase(int64_t checkpoint_id, CheckpointKind kind, bool phase,
                                           Actions& out) {
  if (!commits_ && !phase) return;  // never had a commit phase, and this round had none
  std::vector<SessionId> unaware = std::move(commits().registered_while_completing);
  commits_->registered_while_completing.clear();
  if (!phase) {
    commits_->phase.reset();
    return;
  }
  // The timeout of now: the spec may have changed while the store wrote it.
  commits_->phase = NewCommitPhase(checkpoint_id, kind, /*group_decides=*/group_ != nullptr);
  // A stream that registered while the round was with the store was welcomed with the
  // checkpoint before this one: it cannot know what this one commits. Its worker comes back and
  // is welcomed with commit_pending.
  const std::string why = "restored to checkpoint " + spec_.key.ToString() + "@" +
                          std::to_string(checkpoint_id) + ": commit pending";
  for (SessionId session : unaware) {
    if (!sessions_.count(session)) continue;
    out.push_back(EndSession{session, Status::Aborted(why)});
    LoseSession(session, why, out);
  }
}

std::unique_ptr<CommitPhase> PipelineCoordinator::NewCommitPhase(int64_t checkpoint_id,
                                                                 CheckpointKind kind,
                                                                 bool group_decides) const {
  const int64_t timeout_ms = CommitTimeoutMs();
  const SteadyTime now = clock_.SteadyNow();
  return std::make_unique<CommitPhase>(CommitPhase::Start{
      checkpoint_id, kind, expected_.size(), now,
      timeout_ms > 0 ? now + Millis(timeout_ms) : SteadyTime::max(), group_decides});
}

Actions PipelineCoordinator::OnTaskCommitted(SessionId session, int64_t checkpoint_id,
                                             const std::string& task_id) {
  Actions out;
  if (!HoldsTask(session, checkpoint_id, task_id, "committed", out)) return out;
  if (!Committing()) {
    out.push_back(IgnoredMessage{IgnoredReason::kNotPending});
    return out;
  }
  CommitPhase& phase = *commits_->phase;
  switch (phase.Committed(checkpoint_id, expected_.IndexOf(task_id), clock_.WallMs())) {
    case CommitPhase::Mark::kOtherCheckpoint:
      out.push_back(IgnoredMessage{IgnoredReason::kNotPending});
      return out;
    case CommitPhase::Mark::kDuplicate:
      out.push_back(IgnoredMessage{IgnoredReason::kDuplicate});
      return out;
    case CommitPhase::Mark::kAwaitingMore: return out;
    case CommitPhase::Mark::kLast: break;
  }
  if (phase.awaits_group()) {
    // The group's round is COMMITTED once every member's tasks committed it.
    out.push_back(MemberCommitted{checkpoint_id});
    return out;
  }
  out.push_back(Log{LogLevel::kDebug, "every task committed checkpoint " +
                                          std::to_string(checkpoint_id) +
                                          "; marking it COMMITTED"});
  MaybeWriteCommitMark(out);
  return out;
}

Actions PipelineCoordinator::OnGroupCommitted(int64_t checkpoint_id) {
  Actions out;
  if (!Committing() || commits_->phase->checkpoint_id() != checkpoint_id ||
      !commits_->phase->awaits_group() || !commits_->phase->all_tasks_committed()) {
    return out;  // stale, or not this member's to mark yet
  }
  commits_->phase->GroupAgreed();
  MaybeWriteCommitMark(out);
  Rearm(out);
  return out;
}

void PipelineCoordinator::MaybeWriteCommitMark(Actions& out) {
  if (!Committing() || deleted_) return;
  CommitPhase& phase = *commits_->phase;
  if (!phase.MarkDue(clock_.SteadyNow())) return;
  // Projected from here on (ProjectedProgress), as a commit is: a later progress write is queued
  // behind this one, and must not take the mark back.
  phase.OnMarkSent(clock_.WallMs());
  out.push_back(PersistCommitMark{spec_.key, ProjectedProgress(), phase.checkpoint_id()});
}

Actions PipelineCoordinator::OnCommitMarked(int64_t checkpoint_id) {
  Actions out;
  if (!Committing() || commits_->phase->checkpoint_id() != checkpoint_id ||
      !commits_->phase->OnMarked()) {
    return out;  // a stale answer (a retry's twin); the mark it wrote is the same
  }
  const CommitPhase& phase = *commits_->phase;
  commits_->last_committed_id = checkpoint_id;
  commits_->last_committed_at_ms = phase.committed_at_ms();
  const SteadyTime now = clock_.SteadyNow();
  last_finished_at_ = std::max(last_finished_at_.value_or(now), now);  // min_pause from COMMITTED
  out.push_back(SendAllCommitted{Sessions(), checkpoint_id});
  const auto took = now - phase.completed_at();
  out.push_back(
      CommitFinished{checkpoint_id, std::chrono::duration_cast<std::chrono::microseconds>(took)});
  out.push_back(Log{phase.overdue() ? LogLevel::kInfo : LogLevel::kDebug,
                    std::string(CheckpointKindName(phase.kind())) + " " +
                        std::to_string(checkpoint_id) + " COMMITTED after " +
                        ShortDuration(std::chrono::duration_cast<Millis>(took).count())});
  Rearm(out);
  if (savepoints_.queued() && !pending_) {
    Actions more = OnWakeup();  // a queued savepoint starts right away
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

Actions PipelineCoordinator::OnCommitMarkFailed(int64_t checkpoint_id, const Status& error) {
  Actions out;
  if (!Committing() || commits_->phase->checkpoint_id() != checkpoint_id ||
      !commits_->phase->mark_in_flight()) {
    return out;
  }
  commits_->phase->OnMarkFailed(clock_.SteadyNow() + options_->reserve_retry);
  out.push_back(Log{LogLevel::kError, "writing the COMMITTED mark of checkpoint " +
                                          std::to_string(checkpoint_id) + " failed (" +
                                          error.ToString() + "); retrying in " +
                                          std::to_string(options_->reserve_retry.count()) + " ms"});
  Rearm(out);
  return out;
}

void PipelineCoordinator::MaybeWarnCommitOverdue(SteadyTime now, Actions& out) {
  if (!Committing() || !commits_->phase->TakeOverdue(now)) return;
  const CommitPhase& phase = *commits_->phase;
  std::vector<std::string> names;
  for (size_t i : phase.TasksLeft(kNamesListed)) {
    names.push_back(Printable(*(expected_.begin() + static_cast<std::ptrdiff_t>(i))));
  }
  out.push_back(CommitOverdue{phase.checkpoint_id()});
  out.push_back(Log{LogLevel::kWarn,
                    "commit of checkpoint " + std::to_string(phase.checkpoint_id()) +
                        " overdue (commit_timeout_ms " + std::to_string(CommitTimeoutMs()) +
                        "): " + std::to_string(phase.tasks_left()) + " of " +
                        std::to_string(expected_.size()) +
                        " tasks have not committed: " + FirstNames(names, phase.tasks_left()) +
                        "; it stays COMMITTING (it is durable: never aborted)"});
}

std::vector<std::pair<std::string, int64_t>> PipelineCoordinator::TaskCommitTimes(
    int64_t checkpoint_id) const {
  std::vector<std::pair<std::string, int64_t>> out;
  if (!commits_ || !commits_->phase || commits_->phase->checkpoint_id() != checkpoint_id) {
    return out;
  }
  out.reserve(expected_.size());
  size_t i = 0;
  for (const std::string& task : expected_) {
    out.emplace_back(task, commits_->phase->TaskCommittedAtMs(i++));
  }
  return out;
}

}  // namespace ckpt
