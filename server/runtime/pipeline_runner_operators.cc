// PipelineRunner's operator calls (ckptctl and the admin API, through the daemon), savepoints
// aside (pipeline_runner_savepoints.cc): pause, resume, update, a triggered checkpoint, the delete
// of the pipeline (which waits for its alignment group's round when it is in one) and of a
// checkpoint, the restore loop's pins and Restore, the config file's declared spec, and
// inspection (Inspect, Explain). Each answers its caller once the coordinator has taken the call
// in, or once what it wrote is durable; NOT_FOUND once the pipeline is deleted (PostOperator).
//
// Threading: the public methods run on any thread and post to strand_; what they post, and each
// `done`, runs on strand_ (Delete's `done` on the store's writer).
#include <algorithm>

#include "common/strand_assert.h"
#include "runtime/group_runner.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

using pipeline_runner_internal::SendToSessions;
using pipeline_runner_internal::Sinks;

void PipelineRunner::Pause(StatusDone done) {
  PostOperator([done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_) return done(r.DeletedStatus(), {});
    auto outcome = r.coordinator_.Pause();
    r.Run(std::move(outcome.actions));
    done(outcome.status, r.coordinator_.Describe());
  });
}

void PipelineRunner::Resume(StatusDone done) {
  PostOperator([done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_) return done(r.DeletedStatus(), {});
    auto outcome = r.coordinator_.Resume();
    r.Run(std::move(outcome.actions));
    done(outcome.status, r.coordinator_.Describe());
  });
}

void PipelineRunner::Update(SpecMerge merge, StatusDone done) {
  PostOperator([merge = std::move(merge), done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_) return done(r.DeletedStatus(), {});
    auto spec = merge(r.coordinator_.spec());
    if (!spec.ok()) return done(spec.status(), r.coordinator_.Describe());
    auto outcome = r.coordinator_.UpdateSpec(*spec);
    r.Run(std::move(outcome.actions));
    done(outcome.status, r.coordinator_.Describe());
  });
}

void PipelineRunner::TriggerCheckpoint(
    std::function<void(Status, const std::optional<PendingSummary>&)> done) {
  PostOperator([done = std::move(done)](PipelineRunner& r) mutable {
    if (r.deleted_) return done(r.DeletedStatus(), std::nullopt);
    if (r.group_) {
      // The group's round: answered on this strand after its StartGroupRound (posted first).
      return r.RequestGroupRound(CheckpointKind::kCheckpoint, Millis(0),
                                 [done = std::move(done)](PipelineRunner& m, const Status& s) {
                                   done(s, m.coordinator_.Pending());
                                 });
    }
    PipelineCoordinator::AdmitNow admit_now;
    if (r.context_->admission) {
      admit_now = [&r](const AdmissionRequest& request) {
        return r.context_->admission->AdmitNow(r.admission_ticket(), request);
      };
    }
    auto outcome = r.coordinator_.TriggerCheckpoint(nullptr, admit_now);
    r.Run(std::move(outcome.actions));
    done(outcome.status, r.coordinator_.Pending());
  });
}

void PipelineRunner::Delete(DeleteDone done, const std::string& declared_in) {
  PostOperator([done = std::move(done), declared_in](PipelineRunner& r) mutable {
    r.DeleteNow(std::move(done), declared_in);
  });
}

void PipelineRunner::DeleteNow(DeleteDone done, const std::string& declared_in) {
  CKPT_ASSERT_ON_STRAND(strand_);
  PipelineRunner& r = *this;
  {
    // Deleted already: the first delete frees the name (this one must not: the name may hold a
    // new pipeline by the time it answers).
    if (r.deleted_) return done(r.DeletedStatus(), false);
    if (r.coordinator_.from_config()) {
      return done(
          Status::FailedPrecondition(
              "pipeline " + r.key().ToString() + " is declared in the config file " + declared_in +
              "; remove it from that file and reload (SIGHUP), then delete it"),
          false);
    }
    if (r.group_ && r.group_->deferred_delete) {
      return done(Status::Aborted("a delete of " + r.key().ToString() +
                                  " already waits for its alignment group's round"),
                  false);
    }
    if (r.group_ && r.coordinator_.GroupPartDone()) {
      // Its part of a group round is with the group, whose commit may be with the store: the
      // record goes only once that round ended (a commit landing after the delete would fail
      // the round for every member). Leaving aborts the round unless it is being committed.
      if (Status s = r.coordinator_.CheckDeletable(); !s.ok()) return done(s, false);
      r.group_->runner->RemoveMember(r.key(), "pipeline deleted");
      r.group_->left_for_delete = true;
      r.LogLine(LogLevel::kInfo, "delete waits for the outcome of its alignment group's round");
      r.group_->deferred_delete = [done = std::move(done),
                                   declared_in](PipelineRunner& self) mutable {
        self.DeleteNow(std::move(done), declared_in);
      };
      return;
    }
    auto outcome = r.coordinator_.Delete();
    if (!outcome.status.ok()) {
      if (r.group_ && r.group_->left_for_delete) {
        // It left its group for this delete, which is refused after all (a restore point of
        // another pipeline arrived meanwhile): it joins again, and reports afresh.
        r.group_->left_for_delete = false;
        r.group_->reported = false;
        r.group_->runner->AddMember(r.key(), r.weak_from_this(), r.coordinator_.IdFloor());
        r.ReportToGroup();
      }
      return done(outcome.status, false);
    }
    std::shared_ptr<GroupRunner> group = r.group_ ? r.group_->runner : nullptr;
    r.group_.reset();  // its part of a round it is in goes (MemberFailed, then RemoveMember)
    // The release and the streams' end wait for the delete to be durable: a worker told to
    // delete its state while the record may still come back would lose the restore point.
    Actions now;
    auto release = std::make_shared<std::optional<SendRelease>>();
    for (Action& action : outcome.actions) {
      if (auto* sent = std::get_if<SendRelease>(&action)) {
        *release = std::move(*sent);
      } else if (!std::holds_alternative<EndSession>(action)) {  // every stream ends below
        now.push_back(std::move(action));
      }
    }
    for (Action& action : now) {
      if (auto* failed = std::get_if<MemberFailed>(&action); failed && group) {
        group->MemberFailed(r.key(), failed->checkpoint_id, failed->failure, failed->reason);
      }
    }
    if (group) group->RemoveMember(r.key(), "pipeline deleted");
    r.Run(std::move(now));
    auto leaving = std::make_shared<Sinks>(std::move(r.sessions_));
    r.sessions_.clear();
    r.wakeup_at_ = r.timeout_at_ = kNoDeadline;
    r.ArmTimer();
    if (r.occasional_ && r.occasional_->persist_retry_timer) {
      r.occasional_->persist_retry_timer->cancel();
    }
    r.deleted_ = true;
    r.CountState(std::nullopt);
    if (group) {
      // Its id counter outlives the delete: a pipeline created again under this name continues
      // above every id the group handed out (also those of rounds that never completed).
      r.context_->store.ReserveIds(
          r.key(), std::max(group->durable_id_counter(), r.coordinator_.IdFloor()),
          [self = r.shared_from_this()](Status s) { self->ReportWrite(s); });
    }
    // On the store's writer (sinks take any thread): the operator's answer comes after these.
    r.context_->store.DeletePipeline(r.key(), [self = r.shared_from_this(), leaving, release,
                                               done = std::move(done)](const Status& s) {
      if (s.ok() && *release) SendToSessions(*leaving, **release);
      for (auto& [id, sink] : *leaving) sink->End(self->DeletedStatus());
      self->LogLine(s.ok() ? LogLevel::kInfo : LogLevel::kError,
                    s.ok() ? "pipeline deleted"
                           : "deleting the pipeline's record failed: " + s.ToString() +
                                 "; it comes back at the next start");
      done(s, true);
    });
  }
}

void PipelineRunner::DeleteCheckpoint(int64_t checkpoint_id, std::function<void(Status)> done) {
  PostOperator([checkpoint_id, done = std::move(done)](PipelineRunner& r) mutable {
    if (r.deleted_) return done(r.DeletedStatus());
    auto outcome = r.coordinator_.DeleteCheckpoint(checkpoint_id);
    if (!outcome.status.ok()) return done(outcome.status);
    // Answered when the delete is durable (this one, or the one already under way it joined).
    r.occasional().delete_waiters.emplace_back(checkpoint_id, std::move(done));
    r.Run(std::move(outcome.actions));
  });
}

void PipelineRunner::AddPin(int64_t checkpoint_id, PipelineKey holder,
                            std::function<void(Status)> done) {
  PostOperator(
      [checkpoint_id, holder = std::move(holder), done = std::move(done)](PipelineRunner& r) {
        if (r.deleted_) return done(r.DeletedStatus());
        done(r.coordinator_.AddPin(checkpoint_id, holder));
      });
}

void PipelineRunner::OnPinDropped(int64_t checkpoint_id) {
  Post([checkpoint_id](PipelineRunner& r) { r.Run(r.coordinator_.OnPinDropped(checkpoint_id)); });
}

void PipelineRunner::Restore(PipelineKey source, CompletedCheckpoint checkpoint, StatusDone done) {
  PostOperator([source = std::move(source), checkpoint = std::move(checkpoint),
                done = std::move(done)](PipelineRunner& r) mutable {
    if (r.deleted_) return done(r.DeletedStatus(), {});
    auto outcome = r.coordinator_.Restore(source, std::move(checkpoint));
    if (!outcome.status.ok()) return done(outcome.status, r.coordinator_.Describe());
    // Answered once the new restore point is durable: the last write of the actions.
    Action* persist = nullptr;
    for (Action& action : outcome.actions) {
      if (std::holds_alternative<PersistProgress>(action) ||
          std::holds_alternative<PersistRecord>(action)) {
        persist = &action;
      }
    }
    auto answer = [self = r.shared_from_this(), done = std::move(done)](Status s) mutable {
      self->PostOperator([s = std::move(s), done = std::move(done)](PipelineRunner& r) {
        done(s.ok() ? s : Status::Unavailable("storing the restore point failed: " + s.message()),
             r.coordinator_.Describe());
      });
    };
    if (auto* p = persist ? std::get_if<PersistProgress>(persist) : nullptr) {
      p->then = std::move(answer);
    } else if (auto* w = persist ? std::get_if<PersistRecord>(persist) : nullptr) {
      w->then = std::move(answer);
    } else {
      answer(Status::Ok());  // cannot happen: Restore persists
    }
    r.Run(std::move(outcome.actions));
  });
}

void PipelineRunner::Undeclare(std::function<void(bool)> done) {
  PostOperator([done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_ || !r.coordinator_.from_config()) return done(false);
    r.Run(r.coordinator_.SetFromConfig(false));
    r.LogLine(LogLevel::kInfo,
              "no longer declared in the config file: managed through the API from now on "
              "(ckptctl pipeline delete removes it)");
    done(true);
  });
}

void PipelineRunner::ApplyDeclaredSpec(PipelineSpec spec, std::function<void(Result<bool>)> done) {
  PostOperator([spec = std::move(spec), done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_) return done(r.DeletedStatus());
    if (!r.coordinator_.from_config()) {
      return done(
          Status::FailedPrecondition("created through the API; a reload leaves it as it is"));
    }
    if (r.coordinator_.spec() == spec) return done(false);
    auto outcome = r.coordinator_.UpdateSpec(spec);
    r.Run(std::move(outcome.actions));
    if (!outcome.status.ok()) return done(outcome.status);
    done(true);
  });
}

void PipelineRunner::Inspect(std::function<void(const PipelineCoordinator&)> fn) {
  PostOperator([fn = std::move(fn)](PipelineRunner& r) { fn(r.coordinator_); });
}

void PipelineRunner::Explain(
    int64_t stuck_threshold_ms,
    std::function<void(Status, const Explanation&, const std::string& sentence)> done) {
  PostOperator([stuck_threshold_ms, done = std::move(done)](PipelineRunner& r) {
    if (r.deleted_) return done(r.DeletedStatus(), {}, "");
    Explanation e = r.coordinator_.Explain(stuck_threshold_ms);
    if (e.holdup == Holdup::kWaitingForAdmission && r.context_->admission) {
      DescribeAdmission(r.context_->admission->Look(r.admission_ticket()), e);
    }
    for (TaskHoldup& t : e.tasks) {
      if (auto it = r.sessions_.find(t.session); it != r.sessions_.end()) {
        t.last_message_at_ms = it->second->LastMessageAtMs();
      }
    }
    if (!r.group_)
      return done(Status::Ok(), e, ExplainSentence(r.key(), e, r.context_->clock.WallMs()));
    // A member: what holds its group, asked on the group's strand (answered from there).
    r.group_->runner->Inspect([self = r.shared_from_this(), group_runner = r.group_->runner,
                               e = std::move(e),
                               done = std::move(done)](const GroupCoordinator& group) mutable {
      const GroupExplanation g = group.Explain();
      e.group_pending_checkpoint_id = g.pending_checkpoint_id;
      e.group_holding = g.holding;
      e.group_waiting_for_positions = g.waiting_for_positions;
      e.group_waiting_for_ids = g.waiting_for_ids;
      e.effective_interval_ms = g.effective_interval_ms;  // a member's schedule is its group's
      e.effective_interval_reason = "alignment group's: " + g.effective_interval_reason;
      if (g.waiting_for_admission && e.holdup == Holdup::kWaitingForGroup) {
        // Its group's round waits in the daemon's admission line, as one unit.
        if (auto view = group_runner->LookAtAdmission()) {
          e.holdup = Holdup::kWaitingForAdmission;
          DescribeAdmission(*view, e);
        }
      }
      if (e.holdup == Holdup::kWaitingForGroup && e.pending_checkpoint_id == 0) {
        e.next_trigger_in_ms = g.next_trigger_in_ms;
      }
      done(Status::Ok(), e, ExplainSentence(self->key(), e, self->context_->clock.WallMs()));
    });
  });
}

}  // namespace ckpt
