// AdminService, the operators' gRPC API (docs/PROTOCOL.md): one handler per RPC, each admitting
// the caller (rpc/gatekeeper.h: its role for the method), converting the request
// (api/admin_convert.h) and asking the daemon through AdminBackend; unary calls finish from the
// pipeline's strand, store reads run on the admin thread, TriggerSavepoint streams its progress.
// One concept: the API's surface, call by call; what the calls share lives below it (server/api/).
#include "rpc/admin_service.h"

#include <atomic>
#include <charconv>
#include <limits>
#include <optional>

#include "api/admin_convert.h"
#include "api/admin_reads.h"
#include "ckpt_version.h"
#include "core/spec_validation.h"
#include "rpc/admin_methods.h"
#include "rpc/audit_interceptor.h"
#include "rpc/caller_credentials.h"
#include "rpc/status_mapping.h"
#include "runtime/quarantine.h"

namespace ckpt {

namespace {

constexpr int kDefaultCheckpointListLimit = 20;
// The most entries one page of ListPipelines or ListCheckpoints holds.
constexpr size_t kMaxPageSize = 1000;
constexpr int64_t kDefaultSavepointTimeoutMs = 300000;

grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const Status& status) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Finishes the RPC with the pipeline's status once an operator action ran on its strand.
PipelineRunner::StatusDone ReplyWithPipeline(grpc::ServerUnaryReactor* reactor,
                                             v1::Pipeline* resp) {
  return [reactor, resp](const Status& s, const PipelineStatus& status) {
    if (s.ok()) ToProto(status, resp);
    reactor->Finish(ToGrpcStatus(s));
  };
}

// ListPipelines' page token: the last key of the page, hex-encoded (opaque to clients).
std::string PageToken(const PipelineKey& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string raw = key.job_id + '\0' + key.pipeline_id;
  std::string token;
  for (unsigned char c : raw) {
    token += kHex[c >> 4];
    token += kHex[c & 15];
  }
  return token;
}

std::optional<PipelineKey> KeyFromPageToken(const std::string& token) {
  // Two hex digits per byte of job, separator and pipeline.
  if (token.size() % 2 != 0 || token.size() > 2 * (2 * kMaxIdBytes + 1)) return std::nullopt;
  std::string raw;
  for (size_t i = 0; i < token.size(); i += 2) {
    unsigned value = 0;
    auto [end, error] = std::from_chars(token.data() + i, token.data() + i + 2, value, 16);
    if (error != std::errc() || end != token.data() + i + 2) return std::nullopt;
    raw += static_cast<char>(value);
  }
  const size_t separator = raw.find('\0');
  if (separator == std::string::npos) return std::nullopt;
  return PipelineKey{raw.substr(0, separator), raw.substr(separator + 1)};
}

}  // namespace

Status AdminServiceImpl::Admit(grpc::CallbackServerContext& ctx, std::string_view method) const {
  PublishCallObjects();  // before anything of the call goes to another thread
  // First, and before anyone is identified: a client that makes calls and never reads their
  // replies holds memory for each; beyond the limit it gets a status, which costs nothing.
  if (calls_.InFlight(PeerAddress(ctx.peer())) > limits_.max_admin_calls_per_peer) {
    backend_.metrics().CountLimit(CountedLimit::kMaxAdminCallsPerPeer);
    return Status::ResourceExhausted(
        "this client has more than " +
        NameLimit("max_admin_calls_per_peer", limits_.max_admin_calls_per_peer) +
        " AdminService calls in flight (calls whose replies it has not read yet)");
  }
  if (Status s = gatekeeper_.CheckServing(ctx, method); !s.ok()) return s;
  auto caller = gatekeeper_.Admit(ctx, AdminMethodAccess(method), method);
  return caller.ok() ? Status::Ok() : caller.status();
}

Result<std::shared_ptr<PipelineRunner>> AdminServiceImpl::Lookup(
    const std::string& job_id, const std::string& pipeline_id) const {
  if (auto s = ValidateId(job_id, "job_id"); !s.ok()) return s;
  if (auto s = ValidateId(pipeline_id, "pipeline_id"); !s.ok()) return s;
  auto runner = backend_.FindPipeline({job_id, pipeline_id});
  if (runner) return runner;
  // Quarantined: it exists, but no call but Get, List and Delete can act on it.
  if (auto held = backend_.FindUnreadable({job_id, pipeline_id})) return UnreadableStatus(*held);
  return Status::NotFound("no pipeline " + job_id + "/" + pipeline_id);
}

grpc::ServerUnaryReactor* AdminServiceImpl::CreatePipeline(grpc::CallbackServerContext* ctx,
                                                           const v1::PipelineSpec* req,
                                                           v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "CreatePipeline"); !s.ok()) return Reply(ctx, s);
  PipelineSpec spec = SpecFromCreate(*req, backend_.pipeline_defaults());
  std::optional<CheckpointRef> restore_from;
  if (req->has_restore_from()) {
    auto ref = RefFromProto(req->restore_from(), "restore_from");
    if (!ref.ok()) return Reply(ctx, ref.status());
    restore_from = std::move(*ref);
  }
  // Only once every refusal above is past: a call's reactor may be taken once (a second take
  // is an assertion in gRPC, which would end the daemon for a client's input).
  auto* reactor = ctx->DefaultReactor();
  backend_.CreatePipeline(spec, std::move(restore_from),
                          [reactor, resp](Result<std::shared_ptr<PipelineRunner>> runner) {
                            if (!runner.ok()) return reactor->Finish(ToGrpcStatus(runner.status()));
                            (*runner)->Inspect([reactor, resp](const PipelineCoordinator& c) {
                              ToProto(c.Describe(), resp);
                              reactor->Finish(grpc::Status::OK);
                            });
                          });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::UpdatePipeline(grpc::CallbackServerContext* ctx,
                                                           const v1::PipelineSpec* req,
                                                           v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "UpdatePipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  // Merged with the spec of the moment on the strand, in the same step that applies it, so that
  // two concurrent updates of different fields both hold.
  (*runner)->Update(
      [update = *req, limits = limits_](const PipelineSpec& current) -> Result<PipelineSpec> {
        PipelineSpec spec = SpecFromUpdate(update, current);
        if (auto s = ValidateSpec(spec); !s.ok()) return s;
        if (auto s = CheckSpecLimits(spec, limits); !s.ok()) return s;
        return spec;
      },
      ReplyWithPipeline(reactor, resp));
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::DeletePipeline(grpc::CallbackServerContext* ctx,
                                                           const v1::PipelineRef* req,
                                                           v1::DeletePipelineResponse* resp) {
  if (Status s = Admit(*ctx, "DeletePipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) {
    if (auto held = backend_.FindUnreadable({req->job_id(), req->pipeline_id()})) {
      auto* reactor = ctx->DefaultReactor();
      backend_.DeleteUnreadable(held->pipeline,
                                [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); });
      return reactor;
    }
    return Reply(ctx, runner.status());
  }
  auto* reactor = ctx->DefaultReactor();
  backend_.DeletePipeline(*runner,
                          [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::DeleteCheckpoint(grpc::CallbackServerContext* ctx,
                                                             const v1::DeleteCheckpointRequest* req,
                                                             v1::DeleteCheckpointResponse* resp) {
  if (Status s = Admit(*ctx, "DeleteCheckpoint"); !s.ok()) return Reply(ctx, s);
  if (req->checkpoint_id() <= 0) {
    return Reply(ctx, Status::InvalidArgument("checkpoint_id must be a positive id"));
  }
  auto runner = Lookup(req->pipeline().job_id(), req->pipeline().pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  (*runner)->DeleteCheckpoint(req->checkpoint_id(),
                              [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::RestorePipeline(grpc::CallbackServerContext* ctx,
                                                            const v1::RestorePipelineRequest* req,
                                                            v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "RestorePipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->pipeline().job_id(), req->pipeline().pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  if (!req->has_from()) return Reply(ctx, Status::InvalidArgument("`from` is required"));
  auto from = RefFromProto(req->from(), "from");
  if (!from.ok()) return Reply(ctx, from.status());
  auto* reactor = ctx->DefaultReactor();
  backend_.RestorePipeline(*runner, std::move(*from), ReplyWithPipeline(reactor, resp));
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetPipeline(grpc::CallbackServerContext* ctx,
                                                        const v1::PipelineRef* req,
                                                        v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "GetPipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) {
    if (auto held = backend_.FindUnreadable({req->job_id(), req->pipeline_id()})) {
      UnreadableToProto(*held, resp);
      return Reply(ctx, Status::Ok());
    }
    return Reply(ctx, runner.status());
  }
  auto* reactor = ctx->DefaultReactor();
  (*runner)->Inspect([reactor, resp](const PipelineCoordinator& c) {
    ToProto(c.Describe(), resp);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListPipelines(grpc::CallbackServerContext* ctx,
                                                          const v1::ListPipelinesRequest* req,
                                                          v1::ListPipelinesResponse* resp) {
  if (Status s = Admit(*ctx, "ListPipelines"); !s.ok()) return Reply(ctx, s);
  if (req->limit() < 0) return Reply(ctx, Status::InvalidArgument("limit is negative"));
  const size_t limit =
      req->limit() == 0 ? kMaxPageSize : std::min<size_t>(req->limit(), kMaxPageSize);
  std::optional<PipelineKey> after;
  if (!req->page_token().empty()) {
    after = KeyFromPageToken(req->page_token());
    if (!after) {
      return Reply(ctx, Status::InvalidArgument("page_token is not one this daemon handed out"));
    }
  }
  // Running pipelines and quarantined ones (UNREADABLE: listed from their records, no runner).
  struct Entry {
    PipelineKey key;
    std::shared_ptr<PipelineRunner> runner;  // null: quarantined
    const UnreadableRecord* unreadable = nullptr;
  };
  const std::vector<UnreadableRecord> quarantined = backend_.AllUnreadable();
  std::vector<Entry> entries;
  auto wanted = [&](const PipelineKey& key) {
    return (req->job_id().empty() || key.job_id == req->job_id()) && (!after || *after < key);
  };
  for (auto& r : backend_.AllPipelines()) {
    if (wanted(r->key())) entries.push_back({r->key(), std::move(r), nullptr});
  }
  for (const UnreadableRecord& record : quarantined) {
    if (wanted(record.pipeline)) entries.push_back({record.pipeline, nullptr, &record});
  }
  // The page: the first `limit` keys in order (a partial sort, not a sort of every pipeline).
  auto by_key = [](const Entry& a, const Entry& b) { return a.key < b.key; };
  const size_t page = std::min(limit, entries.size());
  std::partial_sort(entries.begin(), entries.begin() + page, entries.end(), by_key);
  if (entries.size() > page) resp->set_next_page_token(PageToken(entries[page - 1].key));
  entries.resize(page);
  std::vector<std::shared_ptr<PipelineRunner>> runners;
  std::vector<size_t> slots;  // each runner's place on the page
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].runner) {
      runners.push_back(entries[i].runner);
      slots.push_back(i);
    }
  }
  auto* reactor = ctx->DefaultReactor();
  if (runners.empty()) {
    for (const Entry& entry : entries) UnreadableToProto(*entry.unreadable, resp->add_pipelines());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // Every pipeline of the page is asked at once, each on its own loop: a page costs one wait
  // behind the busiest loop, not a thousand waits in a row (under load, 10,000 pipelines asked
  // one after the other took 9-14 s to list). The reply stays bounded while the answers arrive:
  // a pipeline's task ids are listed while it has at most 1000 of them and the answers so far
  // stay under kMaxListReplyBytes; otherwise task_ids_omitted (GetPipeline has them) and its
  // missing task names go too (missing_tasks_total stays). Which pipelines keep their names on
  // a page over budget thus depends on the order their answers came in. The answer that comes
  // last moves them into the reply in key order, on its loop. The countdown relies on Inspect
  // running for every pipeline, a deleted one too (PipelineRunner::PostOperator).
  struct Listing {
    // Slot i is written only by the loop of the page's i-th pipeline; `outstanding` (acq_rel)
    // hands every slot to the one that assembles.
    std::vector<v1::Pipeline> answers;
    std::atomic<size_t> outstanding;
    std::atomic<size_t> bytes{0};  // of the answers so far (as a repeated field's entries)
    grpc::ServerUnaryReactor* reactor;
    v1::ListPipelinesResponse* resp;

    void Answer(size_t i, const PipelineCoordinator& c) {
      v1::Pipeline& pipeline = answers[i];
      ToProto(c.Describe(/*with_task_ids=*/c.spec().task_ids.size() <= kMaxListedTaskNames),
              &pipeline);
      size_t size = RepeatedFieldBytes(pipeline.ByteSizeLong());
      if (bytes.load(std::memory_order_relaxed) + size > kMaxListReplyBytes) {
        if (pipeline.spec().task_ids_size() > 0) {
          pipeline.mutable_spec()->clear_task_ids();
          pipeline.set_task_ids_omitted(true);
        }
        pipeline.clear_missing_tasks();
        size = RepeatedFieldBytes(pipeline.ByteSizeLong());
      }
      bytes.fetch_add(size, std::memory_order_relaxed);
      if (outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) Assemble();
    }

    void Assemble() {
      resp->mutable_pipelines()->Reserve(static_cast<int>(answers.size()));
      for (v1::Pipeline& pipeline : answers) *resp->add_pipelines() = std::move(pipeline);
      reactor->Finish(grpc::Status::OK);
    }
  };
  auto listing = std::make_shared<Listing>();
  listing->answers.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].unreadable) UnreadableToProto(*entries[i].unreadable, &listing->answers[i]);
  }
  listing->outstanding.store(runners.size(), std::memory_order_relaxed);
  listing->reactor = reactor;
  listing->resp = resp;
  for (size_t r = 0; r < runners.size(); ++r) {
    runners[r]->Inspect(
        [listing, i = slots[r]](const PipelineCoordinator& c) { listing->Answer(i, c); });
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::PausePipeline(grpc::CallbackServerContext* ctx,
                                                          const v1::PipelineRef* req,
                                                          v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "PausePipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  (*runner)->Pause(ReplyWithPipeline(reactor, resp));
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ResumePipeline(grpc::CallbackServerContext* ctx,
                                                           const v1::PipelineRef* req,
                                                           v1::Pipeline* resp) {
  if (Status s = Admit(*ctx, "ResumePipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  (*runner)->Resume(ReplyWithPipeline(reactor, resp));
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::TriggerCheckpoint(grpc::CallbackServerContext* ctx,
                                                              const v1::PipelineRef* req,
                                                              v1::CheckpointInfo* resp) {
  if (Status s = Admit(*ctx, "TriggerCheckpoint"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  (*runner)->TriggerCheckpoint(
      [reactor, resp](const Status& s, const std::optional<PendingSummary>& pending) {
        if (s.ok() && pending) ToProto(*pending, resp);
        reactor->Finish(ToGrpcStatus(s));
      });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListCheckpoints(grpc::CallbackServerContext* ctx,
                                                            const v1::ListCheckpointsRequest* req,
                                                            v1::ListCheckpointsResponse* resp) {
  if (Status s = Admit(*ctx, "ListCheckpoints"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  if (req->limit() < 0) return Reply(ctx, Status::InvalidArgument("limit is negative"));
  // Bounded before anything is read: limit=2^31-1 must not load every row.
  const int limit = req->limit() == 0
                        ? kDefaultCheckpointListLimit
                        : static_cast<int>(std::min<size_t>(req->limit(), kMaxPageSize));
  int64_t before = 0;  // 0: the first page, which also shows the pending round
  if (!req->page_token().empty()) {
    const auto& token = req->page_token();
    auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), before);
    if (error != std::errc() || end != token.data() + token.size() || before <= 0) {
      return Reply(ctx, Status::InvalidArgument("page_token is not one this daemon handed out"));
    }
  }
  auto* reactor = ctx->DefaultReactor();
  ReadCheckpointHistory(backend_, *runner, limit, before, resp, /*state_bytes=*/nullptr,
                        [reactor](Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ExplainPipeline(grpc::CallbackServerContext* ctx,
                                                            const v1::PipelineRef* req,
                                                            v1::PipelineExplanation* resp) {
  if (Status s = Admit(*ctx, "ExplainPipeline"); !s.ok()) return Reply(ctx, s);
  auto runner = Lookup(req->job_id(), req->pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  (*runner)->Explain(/*stuck_threshold_ms=*/0,
                     [reactor, resp](Status s, const Explanation& e, const std::string& sentence) {
                       if (s.ok()) ToProto(e, sentence, resp);
                       reactor->Finish(ToGrpcStatus(s));
                     });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::PutAlignmentGroup(grpc::CallbackServerContext* ctx,
                                                              const v1::AlignmentGroupSpec* req,
                                                              v1::AlignmentGroup* resp) {
  if (Status s = Admit(*ctx, "PutAlignmentGroup"); !s.ok()) return Reply(ctx, s);
  if (Status s = CheckIdLength(req->name(), "name", limits_); !s.ok()) return Reply(ctx, s);
  // Not over a record that could not be read: its members wait for it, and a put would store
  // a new record while they stay held. It is deleted first.
  if (auto held = backend_.FindUnreadableGroup(req->name())) {
    return Reply(ctx, UnreadableStatus(*held));
  }
  auto* reactor = ctx->DefaultReactor();
  backend_.groups().Put(GroupUpdateFromProto(*req), backend_.pipeline_defaults(),
                        /*from_config=*/false, [reactor, resp](Result<AlignmentGroupView> view) {
                          if (view.ok()) ToProto(*view, resp);
                          reactor->Finish(ToGrpcStatus(view.status()));
                        });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetAlignmentGroup(grpc::CallbackServerContext* ctx,
                                                              const v1::AlignmentGroupRef* req,
                                                              v1::AlignmentGroup* resp) {
  if (Status s = Admit(*ctx, "GetAlignmentGroup"); !s.ok()) return Reply(ctx, s);
  if (Status s = ValidateId(req->name(), "name"); !s.ok()) return Reply(ctx, s);
  if (auto held = backend_.FindUnreadableGroup(req->name())) {
    return Reply(ctx, UnreadableStatus(*held));
  }
  auto* reactor = ctx->DefaultReactor();
  backend_.groups().Describe(req->name(), [reactor, resp](Result<AlignmentGroupView> view) {
    if (view.ok()) ToProto(*view, resp);
    reactor->Finish(ToGrpcStatus(view.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListAlignmentGroups(
    grpc::CallbackServerContext* ctx, const v1::ListAlignmentGroupsRequest* /*req*/,
    v1::ListAlignmentGroupsResponse* resp) {
  if (Status s = Admit(*ctx, "ListAlignmentGroups"); !s.ok()) return Reply(ctx, s);
  for (const AlignmentGroupView& view : backend_.groups().List()) ToProto(view, resp->add_groups());
  return Reply(ctx, Status::Ok());
}

grpc::ServerUnaryReactor* AdminServiceImpl::DeleteAlignmentGroup(
    grpc::CallbackServerContext* ctx, const v1::AlignmentGroupRef* req,
    v1::DeleteAlignmentGroupResponse* /*resp*/) {
  if (Status s = Admit(*ctx, "DeleteAlignmentGroup"); !s.ok()) return Reply(ctx, s);
  if (Status s = ValidateId(req->name(), "name"); !s.ok()) return Reply(ctx, s);
  auto* reactor = ctx->DefaultReactor();
  auto finish = [reactor](Status s) { reactor->Finish(ToGrpcStatus(s)); };
  if (backend_.FindUnreadableGroup(req->name())) {
    backend_.DeleteUnreadableGroup(req->name(), std::move(finish));
  } else {
    backend_.groups().Delete(req->name(), std::move(finish));
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetCheckpoint(grpc::CallbackServerContext* ctx,
                                                          const v1::GetCheckpointRequest* req,
                                                          v1::CheckpointInfo* resp) {
  if (Status s = Admit(*ctx, "GetCheckpoint"); !s.ok()) return Reply(ctx, s);
  const int64_t id = req->checkpoint_id();
  if (id <= 0) return Reply(ctx, Status::InvalidArgument("checkpoint_id must be a positive id"));
  auto runner = Lookup(req->pipeline().job_id(), req->pipeline().pipeline_id());
  if (!runner.ok()) return Reply(ctx, runner.status());
  auto* reactor = ctx->DefaultReactor();
  ReadCheckpoint(backend_, *runner, id, resp,
                 [reactor](Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerWriteReactor<v1::SavepointProgress>* AdminServiceImpl::TriggerSavepoint(
    grpc::CallbackServerContext* ctx, const v1::TriggerSavepointRequest* req) {
  auto refuse = [](const Status& s) {
    class Refusal final : public grpc::ServerWriteReactor<v1::SavepointProgress> {
     public:
      explicit Refusal(const Status& s) { Finish(ToGrpcStatus(s)); }
      void OnDone() override { delete this; }
    };
    return new Refusal(s);
  };
  if (Status s = Admit(*ctx, "TriggerSavepoint"); !s.ok()) return refuse(s);
  if (auto s = ValidateId(req->job_id(), "job_id"); !s.ok()) return refuse(s);
  if (auto s = ValidateSavepointTarget(req->target()); !s.ok()) return refuse(s);
  if (req->timeout_ms() < 0 || req->timeout_ms() > kMaxDurationMs) {
    return refuse(Status::InvalidArgument("timeout_ms must be between 0 (default) and a week"));
  }
  std::vector<std::shared_ptr<PipelineRunner>> runners;
  // A job's UNREADABLE pipelines take no savepoint: each is a FAILED line of the job's result.
  std::vector<UnreadableRecord> unreadable;
  if (!req->pipeline_id().empty()) {
    auto runner = Lookup(req->job_id(), req->pipeline_id());
    if (!runner.ok()) return refuse(runner.status());
    runners.push_back(*runner);
  } else {
    for (auto& r : backend_.AllPipelines()) {
      if (r->key().job_id == req->job_id()) runners.push_back(std::move(r));
    }
    for (UnreadableRecord& record : backend_.AllUnreadable()) {
      if (record.pipeline.job_id == req->job_id()) unreadable.push_back(std::move(record));
    }
    if (runners.empty() && unreadable.empty())
      return refuse(Status::NotFound("job " + req->job_id() + " has no pipelines"));
  }
  std::vector<std::string> ids;
  std::vector<std::weak_ptr<PipelineRunner>> waited_on;
  for (const auto& r : runners) {
    ids.push_back(r->key().pipeline_id);
    waited_on.push_back(r);
  }
  for (const UnreadableRecord& record : unreadable) ids.push_back(record.pipeline.pipeline_id);
  // When the call is over (answered, or cancelled by its caller), the pipelines let go of it at
  // once: 10,000 cancelled calls must not stay alive until their timeouts.
  auto on_done = [this,
                  waited_on = std::move(waited_on)](SavepointStream* stream) CKPT_EXCLUDES(mu_) {
    for (const auto& weak : waited_on) {
      if (auto runner = weak.lock()) runner->ForgetSavepointObserver(stream);
    }
    MutexLock lock(mu_);
    savepoint_streams_.erase(stream);
    backend_.metrics().savepoint_calls = static_cast<int64_t>(savepoint_streams_.size());
    ++backend_.metrics().savepoint_calls_ended_total;
    if (savepoint_streams_.empty()) streams_done_.NotifyAll();
  };
  auto stream = SavepointStream::Create(req->job_id(), ids, std::move(on_done));
  {
    MutexLock lock(mu_);
    savepoint_streams_[stream.get()] = stream;
    backend_.metrics().savepoint_calls = static_cast<int64_t>(savepoint_streams_.size());
  }
  const Millis timeout(req->timeout_ms() > 0 ? req->timeout_ms() : kDefaultSavepointTimeoutMs);
  for (const UnreadableRecord& record : unreadable) {
    SavepointUpdate failed;
    failed.key = record.pipeline;
    failed.phase = SavepointPhase::kFailed;
    failed.failure_reason = UnreadableStatus(record).message();
    stream->OnSavepointUpdate(failed);
  }
  for (const auto& r : runners) r->RequestSavepoint(req->target(), req->stop(), timeout, stream);
  return stream->reactor();
}

void AdminServiceImpl::FinishSavepointStreams(std::chrono::steady_clock::time_point deadline,
                                              const Status& status) {
  std::vector<std::shared_ptr<SavepointStream>> open;
  {
    MutexLock lock(mu_);
    streams_done_.WaitUntil(lock, deadline,
                            [this]() CKPT_REQUIRES(mu_) { return savepoint_streams_.empty(); });
    for (const auto& [ptr, weak] : savepoint_streams_) {
      if (auto stream = weak.lock()) open.push_back(std::move(stream));
    }
  }
  // Outside mu_: ending a stream may run its on_done, which takes mu_.
  for (const auto& stream : open) stream->End(status);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetDaemonStatus(grpc::CallbackServerContext* ctx,
                                                            const v1::GetDaemonStatusRequest* req,
                                                            v1::DaemonStatus* resp) {
  if (Status s = Admit(*ctx, "GetDaemonStatus"); !s.ok()) return Reply(ctx, s);
  const auto& m = backend_.metrics();
  const AdminBackend::Facts facts = backend_.facts();
  resp->set_version(kCkptVersion);
  resp->set_uptime_ms(facts.uptime_ms);
  resp->set_pipelines(static_cast<int32_t>(facts.pipelines));
  resp->set_worker_sessions(static_cast<int32_t>(m.worker_sessions.load()));
  resp->set_io_threads(static_cast<int32_t>(facts.io_threads));
  resp->set_data_dir(facts.data_dir);
  resp->set_checkpoints_completed(static_cast<int64_t>(m.checkpoints_completed_total.load()));
  resp->set_checkpoints_failed(static_cast<int64_t>(m.checkpoints_failed_total.load()));
  resp->set_checkpoints_expired(static_cast<int64_t>(m.checkpoints_expired_total.load()));
  resp->set_pending_checkpoints(m.pending_checkpoints.load());
  switch (facts.leadership.role) {
    case Leadership::Role::kSingle: resp->set_role(v1::DAEMON_ROLE_SINGLE); break;
    case Leadership::Role::kLeader: resp->set_role(v1::DAEMON_ROLE_LEADER); break;
    case Leadership::Role::kStandby: resp->set_role(v1::DAEMON_ROLE_STANDBY); break;
  }
  resp->set_leader_address(facts.leadership.leader_address);
  resp->set_leader_epoch(facts.leadership.epoch);
  return Reply(ctx, Status::Ok());
}

}  // namespace ckpt
