// PipelineRunner's own life and the events that reach it from workers and from the daemon:
// construction and Start, a worker stream's register, acks, declines, positions, savepoint
// request and end, the store's health, shutdown, a reloaded access policy; and what every file
// of the runner uses (DeletedStatus, MicrosSince, occasional(), LogLine). Elsewhere:
// pipeline_runner_operators.cc (operator calls), pipeline_runner_savepoints.cc (operators'
// savepoints and their observers), pipeline_runner_group.cc (an alignment group's member),
// pipeline_runner_actions.cc (carrying out the coordinator's actions: sends, the timer, store
// writes, metrics); pipeline_runner_internal.h (posting to the strand).
//
// Threading: the public methods run on any thread and post to strand_ (pipeline_runner.h); the
// handlers they post, ReleaseAfterStop excepted (after the io_context stopped), run on strand_.
#include "runtime/pipeline_runner.h"

#include <spdlog/spdlog.h>

#include "common/strand_assert.h"
#include "core/printable.h"
#include "logging/log_context.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

namespace asio = boost::asio;

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

PipelineRunner::~PipelineRunner() {
  // A runner dropped while its round flew or waited (a shutdown; a delete whose round was with
  // the store) must not hold its place for ever.
  if (admission_ticket_ != 0 && context_->admission) context_->admission->Leave(admission_ticket_);
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

void PipelineRunner::Committed(SessionId session, int64_t checkpoint_id, std::string task_id) {
  Post([session, checkpoint_id, task_id = std::move(task_id)](PipelineRunner& r) {
    r.Run(r.coordinator_.OnTaskCommitted(session, checkpoint_id, task_id));
  });
}

void PipelineRunner::RestoreResult(SessionId session, int64_t checkpoint_id, std::string task_id,
                                   bool ok, std::string reason) {
  Post([=, task_id = std::move(task_id), reason = std::move(reason)](PipelineRunner& r) {
    r.Run(r.coordinator_.OnRestoreResult(session, checkpoint_id, task_id, ok, reason));
  });
}

void PipelineRunner::Positions(SessionId session,
                               std::vector<std::pair<std::string, int64_t>> positions) {
  Post([session, positions = std::move(positions)](PipelineRunner& r) {
    r.Run(r.coordinator_.OnPositions(session, positions));
  });
}

void PipelineRunner::Backlog(SessionId session, bool backlog) {
  Post(
      [session, backlog](PipelineRunner& r) { r.Run(r.coordinator_.OnBacklog(session, backlog)); });
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

void PipelineRunner::ReleaseAfterStop() {
  sessions_.clear();
  if (occasional_) occasional_->savepoint_observers.clear();
}

PipelineRunner::Occasional& PipelineRunner::occasional() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!occasional_) occasional_ = std::make_unique<Occasional>();
  return *occasional_;
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
