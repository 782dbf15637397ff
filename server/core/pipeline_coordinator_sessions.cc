// Worker sessions: registration, takeover, loss. Rounds and the schedule are in
// pipeline_coordinator.cc.
#include <algorithm>

#include "common/name_list.h"
#include "core/path_segment.h"
#include "core/pipeline_coordinator.h"
#include "core/spec_validation.h"

namespace ckpt {

PipelineCoordinator::Registration PipelineCoordinator::OnRegister(
    SessionId session, const std::string& worker_id, const std::vector<std::string>& task_ids,
    bool takeover, const std::string& principal) {
  Registration reg;
  if (sessions_.count(session)) {
    reg.status = Status::InvalidArgument("this stream already said hello");
    return reg;
  }
  if (auto s = ValidateId(worker_id, "worker_id"); !s.ok()) {
    reg.status = s;
    return reg;
  }
  if (task_ids.empty()) {
    reg.status = Status::InvalidArgument("hello names no task_ids");
    return reg;
  }
  if (LookingForFallback()) {
    // Its workers would be handed a restore point that is being replaced: they come back soon.
    reg.status = Status::Unavailable(
        "pipeline " + spec_.key.ToString() + " is choosing an older restore point (" +
        occasional_or_none().restore_failure->what + "); try again shortly");
    return reg;
  }
  if (!TaskOwners::Holdable(session)) {  // the runtime's ids never are (task_owners.h)
    reg.status = Status::Internal("stream id " + std::to_string(session) + " is reserved");
    return reg;
  }
  std::set<std::string> seen;
  std::set<SessionId> holders;  // other live streams holding any of these tasks
  for (const auto& task : task_ids) {
    if (auto s = ValidateId(task, "task_id"); !s.ok()) {
      reg.status = s;
      return reg;
    }
    if (!seen.insert(task).second) {
      reg.status = Status::InvalidArgument("task " + task + " is named twice");
      return reg;
    }
    if (!expected_.count(task)) {
      reg.status = Status::InvalidArgument("task " + task + " is not a task of pipeline " +
                                           spec_.key.ToString());
      return reg;
    }
    if (const SessionId owner = OwnerOf(task); owner != TaskOwners::kNobody) {
      const SessionInfo& holder = sessions_.at(owner);
      if (!takeover) {
        reg.status = Status::AlreadyExists(
            "task " + task + " is held by worker " + holder.worker_id +
            " on another live stream (send hello with takeover to replace it)");
        return reg;
      }
      // A worker takes over only its own principal's tasks (or free ones): a principal of another
      // team, even of the same job, cannot knock a stream off its tasks.
      if (holder.principal != principal) {
        reg.status = Status::PermissionDenied(
            "task " + task + " is held by worker " + holder.worker_id + " of principal '" +
            holder.principal + "'; principal '" + principal +
            "' may take over only tasks held by itself or by no one");
        return reg;
      }
      holders.insert(owner);
    }
  }

  Actions& out = reg.actions;
  const bool all_before = AllTasksRegistered();  // a takeover replaces tasks that were all there
  bool returning = false;
  for (const auto& task : task_ids) {
    // Every task was checked against expected_ above.
    returning = returning || task_owner_.ever(expected_.IndexOf(task));
  }
  for (SessionId old : holders) {
    // The newer stream wins: end the old one whole (its other tasks are lost with it).
    out.push_back(EndSession{old, Status::Aborted("tasks taken over by worker " + worker_id)});
    LoseSession(old, "taken over by worker " + worker_id, out);
  }
  SessionInfo info{worker_id, UINT32_MAX, 0, {}, principal, clock_.WallMs()};
  if (auto again = sessions_.find(session); again != sessions_.end()) {
    // A second hello on the same stream: what it held before stays within its range.
    info.first_task = again->second.first_task;
    info.last_task = again->second.last_task;
  }
  for (const auto& task : task_ids) {
    const size_t i = expected_.IndexOf(task);
    task_owner_.Hold(i, expected_.size(), session);
    info.first_task = std::min(info.first_task, static_cast<uint32_t>(i));
    info.last_task = std::max(info.last_task, static_cast<uint32_t>(i));
  }
  if (auto old = sessions_.find(session); old != sessions_.end() && old->second.backlog) {
    --backlog_streams_;  // a second hello on a stream (refused by the edge today) starts afresh
  }
  sessions_[session] = std::move(info);
  if (pending_ && pending_->completing() && pending_->commit_phase()) {
    // Welcomed with the checkpoint before the one with the store (BeginCommitPhase).
    commits().registered_while_completing.push_back(session);
  }
  ForgetPositions(task_ids);  // a task registered anew may resume from an older position
  if (!holders.empty()) {
    // LoseSession bumped the generation for the tasks the old stream held.
  } else if (returning) {
    // The first registrations of a pipeline do not bump the generation; a return after a loss does.
    BumpGeneration("tasks re-registered by worker " + worker_id, out);
  }
  if (AllTasksRegistered()) tasks_missing_since_ms_ = 0;
  if (AllTasksRegistered()) {
    out.push_back(Log{LogLevel::kInfo, "all " + std::to_string(expected_.size()) +
                                           " tasks registered; pipeline " +
                                           PipelineStateName(State())});
    next_missing_warn_at_ = clock_.SteadyNow() + options_->missing_tasks_warn_interval;
    if (!all_before) HoldForStartOffset();
  }
  reg.welcome = WelcomeInfo{
      generation_, State(), last_completed_id_, last_completed_kind_, RestorePointFor(task_ids),
      {}};
  reg.welcome.retained_checkpoint_ids = history_.Ids();
  reg.welcome.last_committed_checkpoint_id = LastCommittedId();
  reg.welcome.restore_withheld = RestoreBlocked();
  // After the welcome (the actions run after it is sent): a release the daemon may have died
  // before sending, again.
  if (history_.resend_release()) out.push_back(SendRelease{{session}, history_.last_released()});
  Rearm(out);
  return reg;
}

std::vector<std::pair<SessionId, std::string>> PipelineCoordinator::SessionPrincipals() const {
  std::vector<std::pair<SessionId, std::string>> out;
  out.reserve(sessions_.size());
  for (const auto& [id, info] : sessions_) out.emplace_back(id, info.principal);
  return out;
}

Actions PipelineCoordinator::OnSessionEnded(SessionId session, const std::string& why,
                                            SessionEnd end) {
  Actions out;
  if (!sessions_.count(session)) return out;
  LoseSession(session, why, out, end);
  Rearm(out);
  return out;
}

void PipelineCoordinator::LoseSession(SessionId session, const std::string& why, Actions& out,
                                      SessionEnd end, std::vector<std::string> departed) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  std::vector<std::string> lost = std::move(departed);
  // A session keeps no list of its tasks: the holders within its range are scanned.
  const size_t past = std::min<size_t>(size_t{it->second.last_task} + 1, expected_.size());
  for (size_t i = it->second.first_task; i < past; ++i) {
    if (task_owner_.at(i) == session) {
      task_owner_.Release(i);
      lost.push_back(*(expected_.begin() + static_cast<std::ptrdiff_t>(i)));
    }
  }
  const std::string worker = it->second.worker_id;
  if (it->second.backlog) --backlog_streams_;  // its backlog ends with it
  sessions_.erase(it);
  if (lost.empty()) return;
  ForgetPositions(lost);
  if (tasks_missing_since_ms_ == 0) tasks_missing_since_ms_ = clock_.WallMs();

  if (end == SessionEnd::kGoodbye) {
    // A worker leaving cleanly (a rescale, a deploy) is news, not a problem.
    out.push_back(Log{LogLevel::kInfo, "worker " + worker + " said goodbye; released task(s) " +
                                           FirstNames(lost) + "; waiting for tasks"});
  } else {
    out.push_back(Log{LogLevel::kWarn, "lost task(s) " + FirstNames(lost) + " of worker " + worker +
                                           " (" + why + "); waiting for tasks"});
  }
  next_missing_warn_at_ = clock_.SteadyNow() + options_->missing_tasks_warn_interval;
  BumpGeneration("task loss", out);
  if (pending_ && !pending_->completing()) {
    // A round already with the store completes anyway; any other is aborted, and a savepoint is
    // queued again while its timeout lasts, unless the pipeline was paused meanwhile (a queued
    // savepoint fails on PAUSED). Task loss does not count toward tolerable_failures.
    const bool savepoint = pending_->kind() != CheckpointKind::kCheckpoint;
    const SavepointQueue::Request requeue{pending_->requested_target(),
                                          pending_->kind() == CheckpointKind::kSavepointAndStop,
                                          pending_->deadline(), pending_->worker_asked()};
    FailRound(CheckpointStatus::kAborted, "task(s) lost: " + FirstNames(lost),
              FailureCause::kAborted, out);
    if (savepoint && !shutting_down_ && sticky_ == StickyState::kActive &&
        clock_.SteadyNow() < requeue.deadline && !savepoints_.queued() && !group_) {
      savepoints_.Offer(requeue);
      for (auto it = out.rbegin(); it != out.rend(); ++it) {
        if (auto* finished = std::get_if<RoundFinished>(&*it)) {
          finished->requeued = true;  // not the savepoint's end: its callers keep waiting
          break;
        }
      }
      out.push_back(Log{LogLevel::kInfo, "savepoint queued again until its tasks are back"});
    }
  }
}

Actions PipelineCoordinator::OnWorkerSavepointRequest(SessionId session, const std::string& target,
                                                      bool stop) {
  return AnswerWorkerSavepoint(session, target, stop, /*for_group=*/false).actions;
}

PipelineCoordinator::Outcome PipelineCoordinator::AdmitGroupSavepointRequest(
    SessionId session, const std::string& target, bool stop) {
  return AnswerWorkerSavepoint(session, target, stop, /*for_group=*/true);
}

PipelineCoordinator::Outcome PipelineCoordinator::AnswerWorkerSavepoint(SessionId session,
                                                                        const std::string& target,
                                                                        bool stop, bool for_group) {
  Outcome outcome;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {  // ended meanwhile: nobody to answer
    outcome.status = Status::Aborted("the stream ended");
    return outcome;
  }
  const SessionInfo& asker = it->second;
  // Every worker request is attributed: who asked, for what.
  const std::string who = "worker " + asker.worker_id +
                          (asker.principal.empty() ? "" : " (principal " + asker.principal + ")");
  const std::string what = std::string(stop ? "savepoint-and-stop" : "savepoint") +
                           (target.empty() ? "" : " to " + target);
  bool over_rate = false;
  if (for_group && !target.empty()) {
    outcome.status = Status::FailedPrecondition(
        "a savepoint of an alignment group's member is the whole group's, and goes to each "
        "member's default location: leave out the target");
  } else {
    outcome.status = SavepointQueue::CheckWorkerTarget(
        target, options_->savepoint_root + "/" + EncodePathSegment(spec_.key.job_id));
    if (outcome.status.ok()) {
      outcome.status = savepoints_.AdmitWorkerRequest(clock_.SteadyNow(),
                                                      options_->savepoint_requests_per_minute);
      over_rate = !outcome.status.ok();
    }
  }
  if (outcome.status.ok()) {
    outcome.actions.push_back(
        Log{LogLevel::kInfo,
            what + " requested by " + who +
                (for_group && group_ ? " for alignment group " + group_->name : std::string())});
    if (for_group) return outcome;  // the runtime asks the group
    // A worker's request uses the pipeline's checkpoint timeout as the savepoint's.
    Outcome asked = RequestSavepoint(target, stop, Millis(spec_.timeout_ms), /*worker_asked=*/true);
    outcome.status = asked.status;
    outcome.actions.insert(outcome.actions.end(), asked.actions.begin(), asked.actions.end());
  }
  if (!outcome.status.ok()) {
    // Answered always; logged at most once per interval per stream: a worker looping on refused
    // requests must not fill the log.
    std::string text = what + " request of " + who + " refused: " + outcome.status.message();
    if (AllowSessionWarning(session, &text)) outcome.actions.push_back(Log{LogLevel::kWarn, text});
    std::optional<CountedLimit> limit;
    if (over_rate) {
      limit = CountedLimit::kSavepointRequestsPerMinute;
    } else if (outcome.status.code() == StatusCode::kResourceExhausted) {
      limit = CountedLimit::kMaxSavepointsPerPipeline;
    }
    outcome.actions.push_back(SendSavepointRefused{session, outcome.status.message(), limit});
  }
  return outcome;
}

bool PipelineCoordinator::AllowSessionWarning(SessionId session, std::string* text) {
  auto info = sessions_.find(session);
  WarnBudget& budget =
      info != sessions_.end() ? info->second.warn_budget : occasional().unknown_warn_budget;
  const SteadyTime now = clock_.SteadyNow();
  if (now < budget.next_at) {
    ++budget.held_back;
    return false;
  }
  if (budget.held_back > 0) {
    *text += " (and " + std::to_string(budget.held_back) + " more such messages not logged)";
  }
  budget.next_at = now + kSessionWarnInterval;
  budget.held_back = 0;
  return true;
}

}  // namespace ckpt
