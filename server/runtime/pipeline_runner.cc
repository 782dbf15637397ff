#include "runtime/pipeline_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include "common/strand_assert.h"
#include "core/printable.h"
#include "logging/log_context.h"
#include "runtime/group_runner.h"

namespace ckpt {

namespace asio = boost::asio;

namespace {

using Sinks = SessionTable<std::shared_ptr<SessionSink>>;

// Sends `message` to each session of message.to that is still registered, in order: a copy to
// each but the last, which gets the message itself (a pipeline mostly has one session, so mostly
// nothing is copied). Runs on the strand; `sessions` is the runner's table, which only strand
// handlers change, and a sink's Send only queues or posts, so no entry goes away during the loop.
template <typename Message>
void SendToSessions(const Sinks& sessions, Message& message) {
  SessionSink* held = nullptr;  // the latest recipient found, not yet sent to
  for (SessionId id : message.to) {
    auto it = sessions.find(id);
    if (it == sessions.end()) continue;
    if (held) held->Send(message);
    held = it->second.get();
  }
  if (held) held->Send(std::move(message));
}

}  // namespace

PipelineRunner::PipelineRunner(asio::io_context& io, const StoredPipeline& stored, bool restarted,
                               std::shared_ptr<const RunnerContext> context,
                               CoordinatorOptions coordinator)
    : context_(std::move(context)),
      strand_(io.get_executor()),
      coordinator_(stored, context_->clock, std::move(coordinator)),
      timer_(strand_),
      restarted_(restarted) {
  pipeline_metrics_.last_completed_at_ms.store(stored.record.last_completed_at_ms,
                                               std::memory_order_relaxed);
  pipeline_metrics_.last_completed_id.store(stored.record.last_completed_id,
                                            std::memory_order_relaxed);
}

template <typename F>
void PipelineRunner::Post(F&& f) {
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable {
    if (self->deleted_) return;  // the one guard: a deleted pipeline hears nothing more
    f(*self);
  });
}

template <typename F>
void PipelineRunner::PostStoreCompletion(F&& f) {
  // Never dropped, not even after Delete: what is durable is complete, and a round that went to
  // the store before the delete is still waited for (the pending gauge, a savepoint's caller).
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(*self); });
}

template <typename F>
void PipelineRunner::PostOperator(F&& f) {
  // Operator calls always run: each answers its caller, with NOT_FOUND once the pipeline is gone.
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(*self); });
}

int64_t PipelineRunner::MicrosSince(SteadyTime start) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(context_->clock.SteadyNow() - start)
      .count();
}

Status PipelineRunner::DeletedStatus() const {
  return Status::NotFound("pipeline " + key().ToString() + " was deleted");
}

void PipelineRunner::Start() {
  Post([](PipelineRunner& r) {
    // Read on the strand, after the registry holds this runner: a change from now on reaches it
    // through SetStoreWritable.
    if (r.context_->store_health && !r.context_->store_health->writable()) {
      r.Run(r.coordinator_.OnStoreWritable(false));
    }
    r.Run(r.coordinator_.Start(r.restarted_));
  });
}

void PipelineRunner::ReportWrite(const Status& result) {
  if (!context_->store_health) return;
  if (result.code() == StatusCode::kUnavailable) {
    Post([](PipelineRunner& r) { r.Run(r.coordinator_.OnStoreWritable(false)); });
  }
  context_->store_health->Report(result);
}

void PipelineRunner::SetStoreWritable(bool writable) {
  Post([writable](PipelineRunner& r) { r.Run(r.coordinator_.OnStoreWritable(writable)); });
}

void PipelineRunner::Register(SessionId session, std::shared_ptr<SessionSink> sink,
                              HelloInfo hello) {
  PostOperator([session, sink = std::move(sink), hello = std::move(hello)](PipelineRunner& r) {
    if (r.deleted_) return sink->End(r.DeletedStatus());  // raced with DeletePipeline
    auto reg = r.coordinator_.OnRegister(session, hello.worker_id, hello.task_ids, hello.takeover,
                                         hello.principal);
    if (!reg.status.ok()) {
      if (reg.status.code() == StatusCode::kPermissionDenied) {
        ++r.context_->metrics.auth_denied_total[static_cast<size_t>(DenyReason::kTakeover)];
      }
      // Rate-limited: a worker in a loop of bad hellos (or an attacker) must not fill the log.
      uint64_t held_back = 0;
      if (r.occasional().refused_hello_log.Allow(std::chrono::steady_clock::now(), &held_back)) {
        r.LogLine(LogLevel::kWarn,
                  "refused hello from worker " + Printable(hello.worker_id) + ": " +
                      reg.status.ToString() +
                      (held_back ? " (" + std::to_string(held_back) + " more refused since)" : ""));
      }
      sink->End(reg.status);
      return;
    }
    r.sessions_[session] = sink;
    r.LogLine(LogLevel::kInfo,
              "worker " + hello.worker_id + " registered " + std::to_string(hello.task_ids.size()) +
                  " task(s) (session " + std::to_string(session) +
                  (hello.principal.empty() ? "" : ", principal " + hello.principal) + ")");
    // Welcome first: the actions may hold a trigger for this very session.
    sink->Send(WelcomeMessage{session, reg.welcome, r.context_->heartbeat_interval_ms,
                              r.context_->lease_ttl_ms});
    r.Run(std::move(reg.actions));
  });
}

void PipelineRunner::Ack(SessionId session, int64_t checkpoint_id, std::string task_id,
                         TaskState state, AckFigures reported, int64_t position) {
  ++context_->metrics.acks_total;
  const SteadyTime received = context_->clock.SteadyNow();
  Post([=, task_id = std::move(task_id), state = std::move(state)](PipelineRunner& r) {
    Actions actions =
        r.coordinator_.OnAck(session, checkpoint_id, task_id, state, reported, position);
    // The round's last ack: its commit starts here, and its fan-in is timed from the read.
    for (const Action& action : actions) {
      if (std::holds_alternative<CommitCheckpoint>(action)) r.round_last_ack_at_ = received;
    }
    r.Run(std::move(actions));
  });
}

void PipelineRunner::Decline(SessionId session, int64_t checkpoint_id, std::string task_id,
                             std::string reason, bool expired, int64_t position) {
  Post([=, task_id = std::move(task_id), reason = std::move(reason)](PipelineRunner& r) {
    r.Run(r.coordinator_.OnDecline(session, checkpoint_id, task_id, reason, expired, position));
  });
}

void PipelineRunner::Positions(SessionId session,
                               std::vector<std::pair<std::string, int64_t>> positions) {
  Post([session, positions = std::move(positions)](PipelineRunner& r) {
    r.Run(r.coordinator_.OnPositions(session, positions));
  });
}

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
    auto outcome = r.coordinator_.TriggerCheckpoint(nullptr);
    r.Run(std::move(outcome.actions));
    done(outcome.status, r.coordinator_.Pending());
  });
}

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

void PipelineRunner::RequestSavepoint(SessionId session, std::string target, bool stop,
                                      JobCheck may_serve) {
  Post([=, target = std::move(target), may_serve = std::move(may_serve)](PipelineRunner& r) {
    if (r.group_) {
      // A savepoint of a member is its group's, taken to each member's default location.
      auto admitted = r.coordinator_.AdmitGroupSavepointRequest(session, target, stop);
      r.Run(std::move(admitted.actions));
      if (!admitted.status.ok()) return;
      const CheckpointKind kind =
          stop ? CheckpointKind::kSavepointAndStop : CheckpointKind::kSavepoint;
      // The group checks the asker against every member's job on its strand, where the
      // membership is: a worker of one job must not stop another job's pipeline.
      std::function<Status(const PipelineKey&)> check;
      if (may_serve) {
        check = [may_serve](const PipelineKey& member) { return may_serve(member.job_id); };
      }
      return r.RequestGroupRound(
          kind, Millis(r.coordinator_.spec().timeout_ms),
          [session](PipelineRunner& m, const Status& s) {
            if (s.ok()) return;
            Actions refused;
            refused.push_back(SendSavepointRefused{session, s.message(), std::nullopt});
            m.Run(std::move(refused));
          },
          std::move(check));
    }
    r.Run(r.coordinator_.OnWorkerSavepointRequest(session, target, stop));
  });
}

void PipelineRunner::SessionEnded(SessionId session, std::string why, bool goodbye) {
  Post([session, why = std::move(why), goodbye](PipelineRunner& r) {
    r.sessions_.erase(session);
    r.Run(r.coordinator_.OnSessionEnded(session, why,
                                        goodbye ? PipelineCoordinator::SessionEnd::kGoodbye
                                                : PipelineCoordinator::SessionEnd::kLost));
  });
}

void PipelineRunner::BeginShutdown(std::function<void()> begun) {
  PostOperator([begun = std::move(begun)](PipelineRunner& r) {
    if (!r.deleted_) r.Run(r.coordinator_.BeginShutdown());
    if (begun) begun();
  });
}

void PipelineRunner::EndAllSessions(Status status) {
  Post([status = std::move(status)](PipelineRunner& r) {
    // Tell the coordinator first, with every sink still in place, so that the abort of a pending
    // round reaches every worker before its stream ends. Over a copy of the ids: Run may end
    // (erase) sessions while it carries out the actions.
    r.Run(r.coordinator_.AbortForShutdown());
    std::vector<SessionId> ids;
    ids.reserve(r.sessions_.size());
    for (const auto& [id, sink] : r.sessions_) ids.push_back(id);
    for (SessionId id : ids) r.Run(r.coordinator_.OnSessionEnded(id, "daemon shutting down"));
    auto sessions = std::move(r.sessions_);
    r.sessions_.clear();
    for (auto& [id, sink] : sessions) sink->End(status);
  });
}

void PipelineRunner::EndSessionsRefused(PrincipalCheck refuse) {
  Post([refuse = std::move(refuse)](PipelineRunner& r) {
    for (const auto& [id, principal] : r.coordinator_.SessionPrincipals()) {
      std::optional<Status> refused = refuse(principal, r.key().job_id);
      if (!refused) continue;
      r.LogLine(LogLevel::kWarn, "ending the stream of principal " + Printable(principal) +
                                     " (session " + std::to_string(id) +
                                     "): the reloaded policy refuses it: " + refused->message());
      if (auto it = r.sessions_.find(id); it != r.sessions_.end()) {
        it->second->End(*refused);
        r.sessions_.erase(it);
      }
      r.Run(r.coordinator_.OnSessionEnded(id, "its principal is no longer allowed"));
    }
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

void PipelineRunner::ReleaseAfterStop() {
  sessions_.clear();
  if (occasional_) occasional_->savepoint_observers.clear();
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
    for (TaskHoldup& t : e.tasks) {
      if (auto it = r.sessions_.find(t.session); it != r.sessions_.end()) {
        t.last_message_at_ms = it->second->LastMessageAtMs();
      }
    }
    if (!r.group_)
      return done(Status::Ok(), e, ExplainSentence(r.key(), e, r.context_->clock.WallMs()));
    // A member: what holds its group, asked on the group's strand (answered from there).
    r.group_->runner->Inspect([self = r.shared_from_this(), e = std::move(e),
                               done = std::move(done)](const GroupCoordinator& group) mutable {
      const GroupExplanation g = group.Explain();
      e.group_pending_checkpoint_id = g.pending_checkpoint_id;
      e.group_holding = g.holding;
      e.group_waiting_for_positions = g.waiting_for_positions;
      e.group_waiting_for_ids = g.waiting_for_ids;
      if (e.holdup == Holdup::kWaitingForGroup && e.pending_checkpoint_id == 0) {
        e.next_trigger_in_ms = g.next_trigger_in_ms;
      }
      done(Status::Ok(), e, ExplainSentence(self->key(), e, self->context_->clock.WallMs()));
    });
  });
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
      context_->metrics.round_fan_in.ObserveMicros(MicrosSince(round_last_ack_at_));
      round_last_ack_at_ = SteadyTime{};
    }
  } else if (auto* a = std::get_if<SendRelease>(&action)) {
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
        a->commit, [self = shared_from_this(), id, queued_at](Status s) {
          self->ReportWrite(s);
          self->context_->metrics.store_commit.ObserveMicros(
              std::chrono::duration_cast<std::chrono::microseconds>(
                  self->context_->clock.SteadyNow() - queued_at)
                  .count());
          // Never dropped: what is durable is complete (the coordinator checks the id and phase).
          // The usual success posts a handler without the Status: smaller, and nothing to move.
          if (s.ok()) {
            self->PostStoreCompletion(
                [id](PipelineRunner& r) { r.Run(r.coordinator_.OnCommitted(id)); });
          } else {
            self->PostStoreCompletion([id, s = std::move(s)](PipelineRunner& r) {
              r.Run(r.coordinator_.OnCommitFailed(id, s));
            });
          }
        });
  } else if (auto* a = std::get_if<MemberDone>(&action)) {
    if (group_) group_->runner->MemberDone(key(), a->checkpoint_id, std::move(a->commit));
  } else if (auto* a = std::get_if<MemberFailed>(&action)) {
    if (a->limit) context_->metrics.CountLimit(*a->limit);
    if (group_) {
      group_->runner->MemberFailed(key(), a->checkpoint_id, a->failure, std::move(a->reason));
    }
  } else if (auto* a = std::get_if<RecordTriggerDelay>(&action)) {
    context_->metrics.trigger_delay.ObserveMicros(a->delay.count());
    if (context_->metrics.trigger_delay_sample)
      context_->metrics.trigger_delay_sample(a->delay.count());
  } else if (auto* a = std::get_if<RoundStuck>(&action)) {
    NoteStuck(a->checkpoint_id);
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

void PipelineRunner::JoinGroup(std::shared_ptr<GroupRunner> group, AlignmentGroupSpec spec) {
  Post([group = std::move(group), spec = std::move(spec)](PipelineRunner& r) mutable {
    r.group_ = std::make_unique<GroupLink>();
    r.group_->runner = group;
    Actions actions = r.coordinator_.SetGroup(std::move(spec));
    // Its ids so far: the group's go above them.
    group->AddMember(r.key(), r.weak_from_this(), r.coordinator_.IdFloor());
    r.LogLine(LogLevel::kInfo, "member of alignment group " + group->name());
    r.Run(std::move(actions));  // and its first report
  });
}

void PipelineRunner::StartGroupRound(int64_t checkpoint_id, CheckpointKind kind, int64_t position) {
  Post([=](PipelineRunner& r) {
    if (!r.group_) return;  // left the group meanwhile
    r.Run(r.coordinator_.StartGroupRound(checkpoint_id, kind, position));
  });
}

void PipelineRunner::GroupRoundDurable(int64_t checkpoint_id) {
  // As a commit's completion: never dropped (a deleted member only reports the outcome).
  PostStoreCompletion([checkpoint_id](PipelineRunner& r) {
    r.Run(r.coordinator_.OnCommitted(checkpoint_id));
    r.RunDeferredDelete();
  });
}

void PipelineRunner::RunDeferredDelete() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!group_ || !group_->deferred_delete || coordinator_.HasPendingRound()) return;
  auto deferred = std::move(group_->deferred_delete);
  group_->deferred_delete = nullptr;
  deferred(*this);
}

void PipelineRunner::EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome,
                                   std::string reason) {
  PostStoreCompletion([=, reason = std::move(reason)](PipelineRunner& r) {
    r.Run(r.coordinator_.EndGroupRound(checkpoint_id, outcome, reason));
    r.RunDeferredDelete();
  });
}

void PipelineRunner::RequestGroupRound(CheckpointKind kind, Millis timeout,
                                       std::function<void(PipelineRunner&, const Status&)> answer,
                                       std::function<Status(const PipelineKey&)> check) {
  CKPT_ASSERT_ON_STRAND(strand_);
  // Weakly: a waiter the group holds must not keep this runner (which holds the group) alive.
  group_->runner->RequestRound(
      kind, timeout,
      [weak = weak_from_this(), answer = std::move(answer)](Status s, int64_t) {
        if (auto self = weak.lock()) {
          self->PostOperator([s = std::move(s), answer](PipelineRunner& r) { answer(r, s); });
        }
      },
      std::move(check));
}

void PipelineRunner::ReportToGroup() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (deleted_) return;
  GroupLink& g = *group_;
  auto [ready, holdup] = coordinator_.GroupReadiness();
  if (!g.reported || ready != g.ready || holdup != g.holdup) {
    g.ready = ready;
    g.holdup = holdup;
    g.runner->MemberState(key(), ready, std::move(holdup));
  }
  // The positions are a scan of the tasks: only when the gate changed.
  const uint64_t version = coordinator_.PositionsVersion();
  if (!g.reported || version != g.positions_version) {
    g.positions_version = version;
    MemberPositions positions = coordinator_.GroupPositions();
    if (!g.reported || !(positions == g.positions)) {
      g.positions = positions;
      g.runner->MemberPositions(key(), positions);
    }
  }
  g.reported = true;
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

PipelineRunner::Occasional& PipelineRunner::occasional() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!occasional_) occasional_ = std::make_unique<Occasional>();
  return *occasional_;
}

void PipelineRunner::AddSavepointObserver(const std::shared_ptr<SavepointObserver>& observer) {
  Occasional& o = occasional();
  o.savepoint_observers.push_back(observer);
  if (o.last_savepoint_update) observer->OnSavepointUpdate(*o.last_savepoint_update);
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

void PipelineRunner::LogLine(LogLevel level, const std::string& text) const {
  // Filtered here as spdlog's default logger would filter it (its level; no backtrace is kept),
  // before setting up the log context: most rounds log one debug line, which is off by default.
  static constexpr spdlog::level::level_enum kSpdlogLevel[] = {
      spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err};
  if (!spdlog::should_log(kSpdlogLevel[static_cast<size_t>(level)])) return;
  const ScopedLogPipeline about(key());  // log.format json gives job and pipeline fields
  switch (level) {
    case LogLevel::kDebug:
      spdlog::debug("[{}/{}] {}", key().job_id, key().pipeline_id, text);
      break;
    case LogLevel::kInfo: spdlog::info("[{}/{}] {}", key().job_id, key().pipeline_id, text); break;
    case LogLevel::kWarn: spdlog::warn("[{}/{}] {}", key().job_id, key().pipeline_id, text); break;
    case LogLevel::kError:
      spdlog::error("[{}/{}] {}", key().job_id, key().pipeline_id, text);
      break;
  }
}

}  // namespace ckpt
