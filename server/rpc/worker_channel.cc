#include "rpc/worker_channel.h"

#include "api/proto_convert.h"
#include "core/spec_validation.h"
#include "rpc/status_mapping.h"

namespace ckpt {

std::shared_ptr<PipelineRunner> WorkerChannel::runner() {
  MutexLock lock(runner_mu_);
  return runner_;
}

ChannelEnding WorkerChannel::EndWith(const std::string& why, Status status) {
  ReportEnded(why);
  return ChannelEnding{std::move(status)};
}

std::optional<ChannelEnding> WorkerChannel::Handle(const v1::WorkerMessage& message,
                                                   const std::shared_ptr<SessionSink>& sink,
                                                   const grpc::ServerContextBase& context) {
  if (!hello_seen_) {
    if (!message.has_hello()) {
      return EndWith("no hello",
                     Status::InvalidArgument("the first message on a stream must be hello"));
    }
    hello_seen_ = true;
    return HandleHello(message.hello(), sink, context);
  }
  auto pipeline = runner();
  if (!pipeline) return ChannelEnding{Status::Unavailable("hello was refused")};  // never read
  switch (message.msg_case()) {
    case v1::WorkerMessage::kHello:
      return EndWith("second hello",
                     Status::InvalidArgument("hello was already sent on this stream"));
    case v1::WorkerMessage::kAck: {
      const auto& state = message.ack().state();
      if (state.uri().size() > kMaxUriBytes || state.checksum().size() > kMaxReasonBytes) {
        // Stored with the checkpoint and listed to operators: a state this big is a bug.
        return EndWith("oversized ack",
                       Status::InvalidArgument(
                           "ack state too large: uri at most " + std::to_string(kMaxUriBytes) +
                           " bytes, checksum at most " + std::to_string(kMaxReasonBytes)));
      }
      pipeline->Ack(id_, message.ack().checkpoint_id(), message.ack().task_id(), FromProto(state),
                    FiguresFromProto(message.ack()), message.ack().position());
      return std::nullopt;
    }
    case v1::WorkerMessage::kDecline:
      // The reason goes into the abort sent to every stream of the pipeline: keep it short.
      pipeline->Decline(id_, message.decline().checkpoint_id(), message.decline().task_id(),
                        TruncateReason(message.decline().reason()), message.decline().expired(),
                        message.decline().position());
      return std::nullopt;
    case v1::WorkerMessage::kHeartbeat:
      // The activity time is what a heartbeat is for (the carrier keeps it); positions go to the
      // pipeline, bounded by the tasks a stream may hold (the coordinator keeps only this
      // stream's).
      if (const auto& positions = message.heartbeat().positions(); !positions.empty()) {
        if (positions.size() > static_cast<size_t>(deps_.limits.max_tasks_per_pipeline)) {
          return EndWith(
              "oversized heartbeat",
              Status::InvalidArgument(
                  "heartbeat names " + std::to_string(positions.size()) + " positions, more than " +
                  NameLimit("max_tasks_per_pipeline", deps_.limits.max_tasks_per_pipeline)));
        }
        pipeline->Positions(id_, {positions.begin(), positions.end()});
      }
      if (message.heartbeat().backlog() != backlog_) {
        // Only a change: a heartbeat a second from 100,000 streams must not each post an event.
        backlog_ = message.heartbeat().backlog();
        pipeline->Backlog(id_, backlog_);
      }
      return std::nullopt;
    case v1::WorkerMessage::kSavepointRequest:
      if (auto s = ValidateSavepointTarget(message.savepoint_request().target()); !s.ok()) {
        // Refused on this stream, which goes on: the request is the worker's mistake, its tasks
        // are fine (the target is never copied to the pipeline's strand).
        sink->Send(
            SendSavepointRefused{id_, "savepoint request refused: " + s.message(), std::nullopt});
        return std::nullopt;
      }
      // A member's savepoint is its group's (with stop, a stop of every member): the asker
      // must be allowed every member's job, under the policy of now.
      pipeline->RequestSavepoint(
          id_, message.savepoint_request().target(), message.savepoint_request().stop(),
          [policy = deps_.gatekeeper.policy(), principal = principal_](const std::string& job) {
            auto refusal = policy->CheckRegistered(principal, job);
            return refusal ? refusal->status : Status::Ok();
          });
      return std::nullopt;
    case v1::WorkerMessage::kCommitted:
      // The task id is only compared with the stream's own (a longer one matches none).
      pipeline->Committed(id_, message.committed().checkpoint_id(), message.committed().task_id());
      return std::nullopt;
    case v1::WorkerMessage::kRestoreResult: {
      const v1::RestoreResult& result = message.restore_result();
      // The reason goes into logs and the pipeline's state reason: keep it short.
      pipeline->RestoreResult(id_, result.checkpoint_id(), result.task_id(), result.ok(),
                              TruncateReason(result.reason()));
      return std::nullopt;
    }
    case v1::WorkerMessage::kGoodbye:
      ReportEnded("goodbye", /*goodbye=*/true);
      return ChannelEnding{Status::Ok()};
    case v1::WorkerMessage::MSG_NOT_SET: break;
  }
  // A message kind this build does not know (a newer worker): ignore it, count it.
  deps_.metrics.CountIgnored(IgnoredReason::kUnknownMessage);
  return std::nullopt;
}

std::optional<ChannelEnding> WorkerChannel::CheckHello(const v1::Hello& hello,
                                                       const grpc::ServerContextBase& context,
                                                       std::string* principal) const {
  for (const auto& [id, what] :
       {std::pair{&hello.job_id(), "job_id"}, std::pair{&hello.pipeline_id(), "pipeline_id"},
        std::pair{&hello.worker_id(), "worker_id"}}) {
    if (auto s = ValidateId(*id, what); !s.ok()) return ChannelEnding{s};
    if (auto s = CheckIdLength(*id, what, deps_.limits); !s.ok()) return ChannelEnding{s};
  }
  if (hello.task_ids_size() > deps_.limits.max_tasks_per_pipeline) {
    return ChannelEnding{Status::InvalidArgument(
        "hello names " + std::to_string(hello.task_ids_size()) + " tasks, more than " +
        NameLimit("max_tasks_per_pipeline", deps_.limits.max_tasks_per_pipeline))};
  }
  for (const std::string& task : hello.task_ids()) {
    if (auto s = CheckIdLength(task, "task_id", deps_.limits); !s.ok()) return ChannelEnding{s};
  }
  // Identified again under the policy of now: a reload since the call began may have narrowed
  // or removed this principal.
  auto caller = deps_.gatekeeper.Admit(context, Access::kWorkerStream, method_);
  if (!caller.ok()) return ChannelEnding{caller.status(), /*caller_refused=*/true};
  if (Status s = deps_.gatekeeper.CheckJob(*caller, hello.job_id()); !s.ok()) {
    return ChannelEnding{s};
  }
  *principal = caller->principal;
  return std::nullopt;
}

std::optional<ChannelEnding> WorkerChannel::HandleHello(const v1::Hello& hello,
                                                        const std::shared_ptr<SessionSink>& sink,
                                                        const grpc::ServerContextBase& context) {
  HelloInfo info;
  if (auto refused = CheckHello(hello, context, &info.principal)) return refused;
  info.worker_id = hello.worker_id();
  info.key = PipelineKey{hello.job_id(), hello.pipeline_id()};
  info.task_ids.assign(hello.task_ids().begin(), hello.task_ids().end());
  info.takeover = hello.takeover();
  auto pipeline = deps_.registry.Find(info.key);
  if (!pipeline) {
    if (auto held = deps_.quarantine ? deps_.quarantine->Find(info.key) : std::nullopt) {
      return ChannelEnding{UnreadableStatus(*held)};  // FAILED_PRECONDITION with the key and why
    }
    return ChannelEnding{Status::NotFound("no pipeline " + info.key.ToString())};
  }
  principal_ = info.principal;  // read side only
  // Under runner_mu_ (see the header). Posting does not block.
  MutexLock lock(runner_mu_);
  if (end_reported_) return ChannelEnding{Status::Unavailable("the stream ended")};
  runner_ = pipeline;
  pipeline->Register(id_, sink, std::move(info));
  return std::nullopt;
}

void WorkerChannel::ReportEnded(const std::string& why, bool goodbye) {
  MutexLock lock(runner_mu_);
  if (end_reported_) return;
  end_reported_ = true;
  if (runner_) runner_->SessionEnded(id_, why, goodbye);
}

}  // namespace ckpt
