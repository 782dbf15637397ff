// PipelineRunner and the savepoints operators ask for: a request (the coordinator's, or its
// alignment group's when the pipeline is a member), the observers that wait for its outcome
// (each told every change of phase and exactly one final update), and an observer let go when
// its call is cancelled. A worker's savepoint_request is a stream event (pipeline_runner.cc).
//
// Threading: RequestSavepoint and ForgetSavepointObserver run on any thread and post to strand_;
// everything else here, and every observer's OnSavepointUpdate, runs on strand_.
#include <vector>

#include "common/strand_assert.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

void PipelineRunner::RequestSavepoint(std::string target, bool stop, Millis timeout,
                                      std::shared_ptr<SavepointObserver> observer) {
  PostOperator([target = std::move(target), stop, timeout,
                observer = std::move(observer)](PipelineRunner& r) {
    if (r.group_ && !r.deleted_) {
      auto refuse = [&r, &observer](std::string why) {
        SavepointUpdate refused;
        refused.key = r.key();
        refused.phase = SavepointPhase::kFailed;
        refused.failure_reason = std::move(why);
        observer->OnSavepointUpdate(refused);
      };
      if (!target.empty()) {
        return refuse(
            "a savepoint of an alignment group's member is the whole group's, and goes to each "
            "member's default location: leave out the target");
      }
      // Its updates would be another savepoint's: one group savepoint at a time, asked or
      // running.
      if (auto pending = r.coordinator_.CurrentSavepoint()) {
        return refuse("group savepoint " + std::to_string(pending->checkpoint_id) +
                      " is in progress; ask again once it finished");
      }
      if (r.group_->savepoint_asked) {
        return refuse(
            "a savepoint of this member's group is already asked for and waits for "
            "its round; ask again once it finished");
      }
      r.group_->savepoint_asked = true;
      r.AddSavepointObserver(observer);
      const CheckpointKind kind =
          stop ? CheckpointKind::kSavepointAndStop : CheckpointKind::kSavepoint;
      return r.RequestGroupRound(kind, timeout, [observer](PipelineRunner& m, const Status& s) {
        if (m.group_) m.group_->savepoint_asked = false;
        if (s.ok()) return;  // its round started: its RoundFinished gives the final update
        // Refused or dropped: this caller's alone (others may wait for a running one).
        std::erase(m.occasional().savepoint_observers, observer);
        SavepointUpdate refused;
        refused.key = m.key();
        refused.phase = SavepointPhase::kFailed;
        refused.failure_reason = s.message();
        observer->OnSavepointUpdate(refused);
      });
    }
    auto outcome = r.deleted_ ? PipelineCoordinator::Outcome{r.DeletedStatus(), {}}
                              : r.coordinator_.RequestSavepoint(target, stop, timeout);
    if (!outcome.status.ok()) {
      SavepointUpdate refused;
      refused.key = r.key();
      refused.phase = SavepointPhase::kFailed;
      refused.failure_reason = outcome.status.message();
      refused.refusal = outcome.status.code();
      if (refused.refusal == StatusCode::kResourceExhausted) {
        r.context_->metrics.CountLimit(CountedLimit::kMaxSavepointsPerPipeline);
      }
      observer->OnSavepointUpdate(refused);
      return;
    }
    r.AddSavepointObserver(observer);
    r.Run(std::move(outcome.actions));
  });
}

void PipelineRunner::ForgetSavepointObserver(const SavepointObserver* observer) {
  PostOperator([observer](PipelineRunner& r) {
    if (!r.occasional_) return;
    Occasional& o = *r.occasional_;
    const size_t before = o.savepoint_observers.size();
    std::erase_if(o.savepoint_observers,
                  [observer](const auto& held) { return held.get() == observer; });
    if (o.savepoint_observers.size() == before || !o.savepoint_observers.empty()) return;
    o.last_savepoint_update.reset();
    if (!r.deleted_) r.Run(r.coordinator_.OnSavepointCallersGone());
  });
}

void PipelineRunner::NotifySavepointObservers(const RoundFinished* finished) {
  CKPT_ASSERT_ON_STRAND(strand_);
  SavepointUpdate update;
  update.key = key();
  if (finished) {
    update.savepoint_id = finished->checkpoint_id;
    update.phase = finished->status == CheckpointStatus::kCompleted ? SavepointPhase::kCompleted
                                                                    : SavepointPhase::kFailed;
    update.expected_tasks = static_cast<int>(coordinator_.spec().task_ids.size());
    update.acked_tasks = update.phase == SavepointPhase::kCompleted ? update.expected_tasks : 0;
    update.location = finished->location;
    update.failure_reason = finished->reason;
  } else if (auto view = coordinator_.CurrentSavepoint()) {
    update.savepoint_id = view->checkpoint_id;
    update.phase = view->checkpoint_id ? SavepointPhase::kInProgress : SavepointPhase::kQueued;
    update.acked_tasks = view->acked_tasks;
    update.expected_tasks = view->expected_tasks;
    update.location = view->location;
  } else {
    return;  // between a round's end and the next step: the final update comes with RoundFinished
  }
  // Without observers nothing is kept: a round's update is final, and an observer added later
  // learns of the next one.
  if (!occasional_ || occasional_->savepoint_observers.empty()) return;
  Occasional& o = *occasional_;
  if (o.last_savepoint_update && *o.last_savepoint_update == update) return;
  o.last_savepoint_update = std::make_unique<SavepointUpdate>(update);
  for (const auto& observer : o.savepoint_observers) observer->OnSavepointUpdate(update);
  if (update.final()) {
    o.savepoint_observers.clear();
    o.last_savepoint_update.reset();
  }
}

void PipelineRunner::AddSavepointObserver(const std::shared_ptr<SavepointObserver>& observer) {
  Occasional& o = occasional();
  o.savepoint_observers.push_back(observer);
  if (o.last_savepoint_update) observer->OnSavepointUpdate(*o.last_savepoint_update);
}

}  // namespace ckpt
