#pragma once
// AdminService: the operator API (proto/ckpt/v1/admin.proto), over gRPC's callback API. Every
// handler first asks the gatekeeper whether its caller may make the call (rpc/admin_methods.h).
// Handlers convert protos to domain types, post the work to the pipeline's strand (or to the
// daemon's admin pool when it must read the store), and finish the RPC from there: no handler
// blocks a gRPC thread.
//
// Threading: handlers run on gRPC's threads; the service holds only its backend and the set of
// open savepoint streams (guarded by mu_).

#include <chrono>
#include <condition_variable>
#include <memory>
#include <unordered_map>
#include <vector>

#include "api/admin_backend.h"
#include "ckpt/v1/admin.grpc.pb.h"
#include "common/mutex.h"
#include "core/limits.h"
#include "rpc/admin_call_limit.h"
#include "rpc/gatekeeper.h"
#include "rpc/savepoint_stream.h"

namespace ckpt {

class AdminServiceImpl final : public v1::AdminService::CallbackService {
 public:
  // `backend` and `gatekeeper` must outlive the service.
  // `calls` counts the calls in flight per client (limits.max_admin_calls_per_peer); its
  // interceptor factory must be registered with the server.
  AdminServiceImpl(AdminBackend& backend, const Gatekeeper& gatekeeper, Limits limits,
                   const AdminCallLimit& calls)
      : backend_(backend), gatekeeper_(gatekeeper), limits_(limits), calls_(calls) {}

  // Daemon shutdown, once every savepoint has its outcome: waits until `deadline` for the open
  // TriggerSavepoint calls to write their final message and end, then ends the rest with
  // `status`. Blocks the calling (controlling) thread.
  void FinishSavepointStreams(std::chrono::steady_clock::time_point deadline, const Status& status);

  grpc::ServerUnaryReactor* CreatePipeline(grpc::CallbackServerContext* ctx,
                                           const v1::PipelineSpec* req,
                                           v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* UpdatePipeline(grpc::CallbackServerContext* ctx,
                                           const v1::PipelineSpec* req,
                                           v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* DeletePipeline(grpc::CallbackServerContext* ctx,
                                           const v1::PipelineRef* req,
                                           v1::DeletePipelineResponse* resp) override;
  grpc::ServerUnaryReactor* GetPipeline(grpc::CallbackServerContext* ctx,
                                        const v1::PipelineRef* req, v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* ListPipelines(grpc::CallbackServerContext* ctx,
                                          const v1::ListPipelinesRequest* req,
                                          v1::ListPipelinesResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteCheckpoint(grpc::CallbackServerContext* ctx,
                                             const v1::DeleteCheckpointRequest* req,
                                             v1::DeleteCheckpointResponse* resp) override;
  grpc::ServerUnaryReactor* RestorePipeline(grpc::CallbackServerContext* ctx,
                                            const v1::RestorePipelineRequest* req,
                                            v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* PausePipeline(grpc::CallbackServerContext* ctx,
                                          const v1::PipelineRef* req, v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* ResumePipeline(grpc::CallbackServerContext* ctx,
                                           const v1::PipelineRef* req, v1::Pipeline* resp) override;
  grpc::ServerUnaryReactor* TriggerCheckpoint(grpc::CallbackServerContext* ctx,
                                              const v1::PipelineRef* req,
                                              v1::CheckpointInfo* resp) override;
  grpc::ServerUnaryReactor* ListCheckpoints(grpc::CallbackServerContext* ctx,
                                            const v1::ListCheckpointsRequest* req,
                                            v1::ListCheckpointsResponse* resp) override;
  grpc::ServerUnaryReactor* ExplainPipeline(grpc::CallbackServerContext* ctx,
                                            const v1::PipelineRef* req,
                                            v1::PipelineExplanation* resp) override;
  grpc::ServerUnaryReactor* GetCheckpoint(grpc::CallbackServerContext* ctx,
                                          const v1::GetCheckpointRequest* req,
                                          v1::CheckpointInfo* resp) override;
  grpc::ServerWriteReactor<v1::SavepointProgress>* TriggerSavepoint(
      grpc::CallbackServerContext* ctx, const v1::TriggerSavepointRequest* req) override;
  grpc::ServerUnaryReactor* GetDaemonStatus(grpc::CallbackServerContext* ctx,
                                            const v1::GetDaemonStatusRequest* req,
                                            v1::DaemonStatus* resp) override;
  grpc::ServerUnaryReactor* PutAlignmentGroup(grpc::CallbackServerContext* ctx,
                                              const v1::AlignmentGroupSpec* req,
                                              v1::AlignmentGroup* resp) override;
  grpc::ServerUnaryReactor* GetAlignmentGroup(grpc::CallbackServerContext* ctx,
                                              const v1::AlignmentGroupRef* req,
                                              v1::AlignmentGroup* resp) override;
  grpc::ServerUnaryReactor* ListAlignmentGroups(grpc::CallbackServerContext* ctx,
                                                const v1::ListAlignmentGroupsRequest* req,
                                                v1::ListAlignmentGroupsResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteAlignmentGroup(grpc::CallbackServerContext* ctx,
                                                 const v1::AlignmentGroupRef* req,
                                                 v1::DeleteAlignmentGroupResponse* resp) override;

 private:
  // The runner of an existing pipeline, or a NOT_FOUND / INVALID_ARGUMENT status.
  Result<std::shared_ptr<PipelineRunner>> Lookup(const std::string& job_id,
                                                 const std::string& pipeline_id) const;

  // Whether the caller may make `method` (rpc/admin_methods.h says which access it needs): OK,
  // or the refusal to answer with (counted and logged by the gatekeeper).
  Status Admit(grpc::CallbackServerContext& ctx, std::string_view method) const;

  AdminBackend& backend_;
  const Gatekeeper& gatekeeper_;
  const Limits limits_;
  const AdminCallLimit& calls_;
  Mutex mu_;
  CondVar streams_done_;  // savepoint_streams_ became empty
  // The open TriggerSavepoint calls, until their OnDone.
  std::unordered_map<SavepointStream*, std::weak_ptr<SavepointStream>> savepoint_streams_
      CKPT_GUARDED_BY(mu_);
};

}  // namespace ckpt
