// How PipelineRunner carries out the coordinator's actions (core/actions.h): Run and Execute turn
// each into a send to worker sessions, a wait of the runner's one timer, a store write whose
// completion is posted back to the strand (a failed record or progress write is retried after a
// second), a call to its alignment group, a metric or a log line. With them: the gauges Run
// keeps exact (pending rounds, pipelines by state), the stuck-round notice, the report of each
// store write's outcome to StoreHealth, and the timer (ArmTimer, OnTimer).
//
// Threading: everything here runs on strand_, except ReportWrite and the store callbacks (the
// completions made here and by PersistDone), which run on the store's writer thread: they tell
// StoreHealth and hand what follows to strand_ (Post, PostStoreCompletion).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strand_assert.h"
#include "core/printable.h"
#include "runtime/group_runner.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

using pipeline_runner_internal::SendToSessions;

void PipelineRunner::Run(Actions actions) {
  CKPT_ASSERT_ON_STRAND(strand_);
  // Before the actions too: a round is counted before its trigger goes out, so that whoever hears
  // of the trigger (a worker, then a shutdown reading the gauge) finds the round counted.
  UpdatePendingGauge();
  for (Action& action : actions) {
    try {
      Execute(action);
    } catch (const std::exception& e) {
      // A failure while carrying out an action must not silently stop the schedule: log it with
      // job and pipeline and re-arm the wakeup, which re-evaluates everything.
      LogLine(LogLevel::kError,
              std::string("action failed: ") + e.what() + "; schedule re-armed in 1 s");
      ArmWakeupAt(context_->clock.SteadyNow() + Millis(1000));
    }
  }
  if (occasional_ && !occasional_->savepoint_observers.empty()) NotifySavepointObservers(nullptr);
  UpdatePendingGauge();
  if (!deleted_) CountState(coordinator_.State());
  if (group_) ReportToGroup();
}

AdmissionTicket PipelineRunner::admission_ticket() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (admission_ticket_ == 0) admission_ticket_ = context_->admission->NewTicket();
  return admission_ticket_;
}

void PipelineRunner::AskForAdmission(const AdmissionRequest& request) {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!context_->admission) return;  // the coordinator asks only when the host gave it one
  const uint32_t ask = ++admission_asks_;
  // Weakly: the admission holds this until it admits, and must not keep a deleted runner alive.
  const SteadyTime asked_at = context_->clock.SteadyNow();
  context_->admission->Ask(admission_ticket(), request, [weak = weak_from_this(), ask, asked_at] {
    if (auto self = weak.lock()) {
      self->Post([ask, asked_at](PipelineRunner& r) {
        if (r.admission_asks_ != ask) return;  // left, or asked again, since
        r.context_->metrics.admission_wait.ObserveMicros(r.MicrosSince(asked_at));
        r.Run(r.coordinator_.OnAdmitted());
      });
    }
  });
}

void PipelineRunner::ReleaseAdmission() {
  CKPT_ASSERT_ON_STRAND(strand_);
  ++admission_asks_;  // an answer still on its way is for nothing now
  if (context_->admission && admission_ticket_ != 0) context_->admission->Leave(admission_ticket_);
}

void PipelineRunner::UpdatePendingGauge() {
  CKPT_ASSERT_ON_STRAND(strand_);
  const bool pending = coordinator_.HasPendingRound();
  if (pending == counted_pending_) return;
  context_->metrics.pending_checkpoints += pending ? 1 : -1;
  counted_pending_ = pending;
  pipeline_metrics_.pending.store(pending, std::memory_order_relaxed);
}

void PipelineRunner::CountState(std::optional<PipelineState> state) {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (state == counted_state_) return;
  if (counted_state_) --context_->metrics.pipelines_by_state[static_cast<size_t>(*counted_state_)];
  if (state) {
    ++context_->metrics.pipelines_by_state[static_cast<size_t>(*state)];
    pipeline_metrics_.state.store(static_cast<int>(*state), std::memory_order_relaxed);
  }
  counted_state_ = state;
}

void PipelineRunner::Execute(Action& action) {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (auto* a = std::get_if<SendTrigger>(&action)) {
    ++context_->metrics.triggers_total;
    const SteadyTime start = context_->clock.SteadyNow();
    SendToSessions(sessions_, *a);
    context_->metrics.round_fan_out.ObserveMicros(MicrosSince(start));
    round_last_ack_at_ = SteadyTime{};  // a round that failed after its last ack left it
  } else if (auto* a = std::get_if<SendAbort>(&action)) {
    SendToSessions(sessions_, *a);
  } else if (auto* a = std::get_if<SendComplete>(&action)) {
    SendToSessions(sessions_, *a);
    if (round_last_ack_at_ != SteadyTime{}) {
      const int64_t fan_in = MicrosSince(round_last_ack_at_);
      context_->metrics.round_fan_in.ObserveMicros(fan_in);
      const int64_t in_store =
          std::chrono::duration_cast<std::chrono::microseconds>(round_store_time_).count();
      context_->metrics.round_fan_in_own.ObserveMicros(std::max<int64_t>(0, fan_in - in_store));
      round_last_ack_at_ = SteadyTime{};
    }
  } else if (auto* a = std::get_if<SendRelease>(&action)) {
    SendToSessions(sessions_, *a);
  } else if (auto* a = std::get_if<SendAllCommitted>(&action)) {
    SendToSessions(sessions_, *a);
  } else if (auto* a = std::get_if<SendState>(&action)) {
    SendToSessions(sessions_, *a);
  } else if (auto* a = std::get_if<SendSavepointRefused>(&action)) {
    if (a->limit) context_->metrics.CountLimit(*a->limit);
    if (auto it = sessions_.find(a->session); it != sessions_.end()) {
      it->second->Send(std::move(*a));
    }
  } else if (auto* a = std::get_if<EndSession>(&action)) {
    if (auto it = sessions_.find(a->session); it != sessions_.end()) {
      it->second->End(a->status);
      sessions_.erase(it);
    }
  } else if (auto* a = std::get_if<ArmWakeup>(&action)) {
    ArmWakeupAt(a->at);
  } else if (std::holds_alternative<CancelWakeup>(action)) {
    wakeup_at_ = kNoDeadline;
    ArmTimer();
  } else if (auto* a = std::get_if<ArmTimeout>(&action)) {
    ArmTimeoutAt(a->at, a->checkpoint_id);
  } else if (std::holds_alternative<CancelTimeout>(action)) {
    timeout_at_ = kNoDeadline;
    ArmTimer();
  } else if (auto* a = std::get_if<AskAdmission>(&action)) {
    AskForAdmission(a->request);
  } else if (std::holds_alternative<LeaveAdmission>(action)) {
    ReleaseAdmission();
  } else if (auto* a = std::get_if<ReserveIds>(&action)) {
    const int64_t counter = a->new_counter;
    context_->store.ReserveIds(key(), counter, [self = shared_from_this(), counter](Status s) {
      self->ReportWrite(s);
      self->Post([counter, s = std::move(s)](PipelineRunner& r) {  // a deleted one needs none
        r.Run(s.ok() ? r.coordinator_.OnIdsReserved(counter)
                     : r.coordinator_.OnIdsReserveFailed(s));
      });
    });
  } else if (auto* a = std::get_if<PersistRecord>(&action)) {
    context_->store.PutPipeline(a->record, PersistDone(/*whole_record=*/true, std::move(a->then)));
  } else if (auto* a = std::get_if<PersistProgress>(&action)) {
    context_->store.PutProgress(a->key, a->progress,
                                PersistDone(/*whole_record=*/false, std::move(a->then)));
  } else if (auto* a = std::get_if<PersistCommitMark>(&action)) {
    const int64_t id = a->checkpoint_id;
    context_->store.PutProgress(a->key, a->progress, [self = shared_from_this(), id](Status s) {
      self->ReportWrite(s);
      // Never dropped: a durable mark is COMMITTED (the coordinator checks the id and phase).
      self->PostStoreCompletion([id, s = std::move(s)](PipelineRunner& r) {
        r.Run(s.ok() ? r.coordinator_.OnCommitMarked(id)
                     : r.coordinator_.OnCommitMarkFailed(id, s));
      });
    });
  } else if (auto* a = std::get_if<PinDropped>(&action)) {
    if (context_->on_pin_dropped) context_->on_pin_dropped(a->ref);
  } else if (auto* a = std::get_if<DeleteCheckpoints>(&action)) {
    context_->store.DeleteCheckpoints(
        key(), a->checkpoint_ids,
        [self = shared_from_this(), ids = a->checkpoint_ids](Status s) mutable {
          self->ReportWrite(s);
          self->PostStoreCompletion([ids = std::move(ids), s = std::move(s)](PipelineRunner& r) {
            r.Run(s.ok() ? r.coordinator_.OnCheckpointsDeleted(ids)
                         : r.coordinator_.OnCheckpointsDeleteFailed(ids, s));
            // Their callers learn the outcome, whatever happened to the pipeline meanwhile.
            std::vector<std::function<void(Status)>> answer;
            std::vector<std::pair<int64_t, std::function<void(Status)>>> still;
            std::vector<std::pair<int64_t, std::function<void(Status)>>> waiting;
            if (r.occasional_) waiting = std::move(r.occasional_->delete_waiters);
            for (auto& [id, done] : waiting) {
              const bool mine = std::find(ids.begin(), ids.end(), id) != ids.end();
              if (mine) {
                answer.push_back(std::move(done));
              } else {
                still.emplace_back(id, std::move(done));
              }
            }
            if (!still.empty()) r.occasional().delete_waiters = std::move(still);
            for (auto& done : answer) done(s);
          });
        });
  } else if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
    const int64_t id = a->commit.checkpoint.checkpoint_id;
    const SteadyTime queued_at = context_->clock.SteadyNow();
    context_->store.CommitCheckpoint(
        std::move(a->commit), [self = shared_from_this(), id, queued_at](Status s) {
          self->ReportWrite(s);
          self->context_->metrics.store_commit.ObserveMicros(
              std::chrono::duration_cast<std::chrono::microseconds>(
                  self->context_->clock.SteadyNow() - queued_at)
                  .count());
          // Never dropped: what is durable is complete (the coordinator checks the id and phase).
          // The usual success posts a handler without the Status: smaller, and nothing to move.
          if (s.ok()) {
            // How long the store held the round, for the fan-in's own share (SendComplete).
            const SteadyTime durable_at = self->context_->clock.SteadyNow();
            self->PostStoreCompletion([id, held = durable_at - queued_at](PipelineRunner& r) {
              r.round_store_time_ = held;
              r.Run(r.coordinator_.OnCommitted(id));
            });
          } else {
            self->PostStoreCompletion([id, s = std::move(s)](PipelineRunner& r) {
              r.Run(r.coordinator_.OnCommitFailed(id, s));
            });
          }
        });
  } else if (auto* a = std::get_if<MemberDone>(&action)) {
    if (group_) group_->runner->MemberDone(key(), a->checkpoint_id, std::move(a->commit));
  } else if (auto* a = std::get_if<MemberCommitted>(&action)) {
    if (group_) group_->runner->MemberCommitted(key(), a->checkpoint_id);
  } else if (auto* a = std::get_if<MemberFailed>(&action)) {
    if (a->limit) context_->metrics.CountLimit(*a->limit);
    if (group_) {
      group_->runner->MemberFailed(key(), a->checkpoint_id, a->failure, std::move(a->reason));
    }
  } else if (auto* a = std::get_if<RecordTriggerDelay>(&action)) {
    context_->metrics.trigger_delay.ObserveMicros(a->delay.count());
    context_->metrics.trigger_held.ObserveMicros(a->held.count());
    if (context_->metrics.trigger_delay_sample)
      context_->metrics.trigger_delay_sample(a->delay.count(), a->held.count());
  } else if (auto* a = std::get_if<RoundStuck>(&action)) {
    NoteStuck(a->checkpoint_id);
  } else if (std::holds_alternative<CommitOverdue>(action)) {
    ++context_->metrics.commits_overdue_total;
  } else if (std::holds_alternative<RestoreFailed>(action)) {
    ++context_->metrics.restore_failures_total;
  } else if (auto* a = std::get_if<ReadRestoreCandidate>(&action)) {
    ReadRestoreCandidateOffStrand(a->failed_id, a->checkpoint_id);
  } else if (auto* a = std::get_if<CommitFinished>(&action)) {
    context_->metrics.commit_duration.ObserveMicros(a->duration.count());
  } else if (auto* a = std::get_if<RoundFinished>(&action)) {
    if (a->kind != CheckpointKind::kCheckpoint && !a->requeued) NotifySavepointObservers(a);
    if (a->checkpoint_id == 0) return;  // a savepoint that never started: no checkpoint failed
    switch (a->status) {
      case CheckpointStatus::kAborted: ++context_->metrics.checkpoints_aborted_total; break;
      case CheckpointStatus::kCompleted:
        ++context_->metrics.checkpoints_completed_total;
        ++pipeline_metrics_.checkpoints_completed_total;
        pipeline_metrics_.last_completed_at_ms.store(context_->clock.WallMs(),
                                                     std::memory_order_relaxed);
        pipeline_metrics_.last_completed_id.store(a->checkpoint_id, std::memory_order_relaxed);
        pipeline_metrics_.last_duration_ms.store(
            static_cast<uint32_t>(std::clamp<int64_t>(a->duration.count() / 1000, 0, UINT32_MAX)),
            std::memory_order_relaxed);
        context_->metrics.checkpoint_duration.ObserveMicros(a->duration.count());
        break;
      case CheckpointStatus::kExpired:
        ++context_->metrics.checkpoints_expired_total;
        ++pipeline_metrics_.checkpoints_expired_total;
        break;
      case CheckpointStatus::kPending:  // not a finished round; cannot happen
      case CheckpointStatus::kFailed:
        ++context_->metrics.checkpoints_failed_total;
        ++pipeline_metrics_.checkpoints_failed_total;
        break;
    }
  } else if (auto* a = std::get_if<IgnoredMessage>(&action)) {
    context_->metrics.CountIgnored(a->reason);
  } else if (auto* a = std::get_if<Log>(&action)) {
    LogLine(a->level, a->text);
  }
}

void PipelineRunner::NoteStuck(int64_t checkpoint_id) {
  CKPT_ASSERT_ON_STRAND(strand_);
  ++context_->metrics.checkpoints_stuck_total;
  // At most kStuckLogsPerSecond lines a second for the whole daemon: 100,000 pipelines stuck on
  // one store outage must not flood the log. The others are counted, and said once.
  constexpr int64_t kStuckLogsPerSecond = 10;
  const int64_t second = context_->clock.WallMs() / 1000;
  int64_t seen = context_->metrics.stuck_log_second.load(std::memory_order_relaxed);
  if (seen != second && context_->metrics.stuck_log_second.compare_exchange_strong(
                            seen, second, std::memory_order_relaxed)) {
    context_->metrics.stuck_logged_this_second.store(0, std::memory_order_relaxed);
    if (const uint64_t held = context_->metrics.stuck_logs_held_back.exchange(0); held > 0) {
      spdlog::warn(
          "{} more stuck checkpoint notice(s) not logged (at most {} a second; "
          "ckptd_checkpoints_stuck_total counts them all)",
          held, kStuckLogsPerSecond);
    }
  }
  if (context_->metrics.stuck_logged_this_second.fetch_add(1, std::memory_order_relaxed) >=
      kStuckLogsPerSecond) {
    context_->metrics.stuck_logs_held_back.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Explanation e = coordinator_.Explain();
  for (TaskHoldup& t : e.tasks) {
    if (auto it = sessions_.find(t.session); it != sessions_.end()) {
      t.last_message_at_ms = it->second->LastMessageAtMs();
    }
  }
  // Ids are client input: printed escaped.
  std::string sentence = ExplainSentence(key(), e, context_->clock.WallMs());
  if (e.holdup != Holdup::kRoundSlow) {  // paused meanwhile, say: the round is still the news
    sentence = "stuck: checkpoint " + std::to_string(checkpoint_id) + " pending; " + sentence;
  }
  LogLine(LogLevel::kWarn, Printable(sentence, 2000));
}

void PipelineRunner::ReportWrite(const Status& result) {
  if (!context_->store_health) return;
  if (result.code() == StatusCode::kUnavailable) {
    Post([](PipelineRunner& r) { r.Run(r.coordinator_.OnStoreWritable(false)); });
  }
  context_->store_health->Report(result);
}

MetadataStore::Done PipelineRunner::PersistDone(bool whole_record,
                                                std::function<void(Status)> then) {
  return [self = shared_from_this(), whole_record, then = std::move(then)](const Status& s) {
    self->ReportWrite(s);
    if (then) then(s);
    if (s.ok()) return;
    self->LogLine(LogLevel::kError,
                  "persisting pipeline state failed: " + s.ToString() + "; retrying in 1 s");
    self->Post([whole_record](PipelineRunner& r) {
      // One retry for every failure of the second: sticky, so that a record's failure is not
      // forgotten when a progress write fails after it.
      r.retry_whole_record_ = r.retry_whole_record_ || whole_record;
      std::unique_ptr<StrandTimer>& timer = r.occasional().persist_retry_timer;
      if (!timer) timer = std::make_unique<StrandTimer>(r.strand_);
      timer->expires_after(std::chrono::seconds(1));
      timer->async_wait([self = r.shared_from_this()](const boost::system::error_code& ec) {
        // A retry armed before a Delete must not write the record back.
        if (ec || self->deleted_) return;
        const bool whole = std::exchange(self->retry_whole_record_, false);
        self->Run(self->coordinator_.OnPersistFailed(whole));
      });
    });
  };
}

void PipelineRunner::ArmWakeupAt(SteadyTime at) {
  CKPT_ASSERT_ON_STRAND(strand_);
  wakeup_at_ = at;
  ArmTimer();
}

void PipelineRunner::ArmTimeoutAt(SteadyTime at, int64_t checkpoint_id) {
  CKPT_ASSERT_ON_STRAND(strand_);
  timeout_at_ = at;
  timeout_checkpoint_id_ = checkpoint_id;
  ArmTimer();
}

void PipelineRunner::ArmTimer() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (timer_firing_) return;  // OnTimer arms once, at its end
  const SteadyTime at = std::min(wakeup_at_, timeout_at_);
  if (at == kNoDeadline) {
    // Cancelled rather than left to end as stale: its handler holds the runner (and after a
    // Delete nothing else may).
    if (timer_armed_) timer_.cancel();
    timer_armed_ = false;
    return;
  }
  if (timer_armed_ && timer_.expiry() == at) return;  // a round's timeout, well after its wakeup
  timer_armed_ = true;
  timer_.expires_at(at);  // cancels an earlier wait; its handler sees operation_aborted
  timer_.async_wait([self = shared_from_this(), at](const boost::system::error_code& ec) {
    // A wait already completed when the timer was re-armed or Delete ran still comes here.
    if (ec || self->deleted_) return;
    self->OnTimer(at);
  });
}

void PipelineRunner::OnTimer(SteadyTime at) {
  CKPT_ASSERT_ON_STRAND(strand_);
  // Stale: the deadlines moved since this wait began, and a newer wait (or none) stands for them.
  if (!timer_armed_ || timer_.expiry() != at) return;
  timer_armed_ = false;
  timer_firing_ = true;
  if (timeout_at_ <= at) {
    timeout_at_ = kNoDeadline;
    // The coordinator fences it by id and phase: a round that ended meanwhile is not failed.
    Run(coordinator_.OnTimeout(timeout_checkpoint_id_));
  }
  // A stale wakeup only makes the coordinator look again, which is harmless.
  if (wakeup_at_ <= at && !deleted_) {
    wakeup_at_ = kNoDeadline;
    Run(coordinator_.OnWakeup());
  }
  timer_firing_ = false;
  if (!deleted_) ArmTimer();
}

}  // namespace ckpt
