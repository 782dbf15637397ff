#include "rpc/audit_interceptor.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "ckpt/v1/admin.pb.h"
#include "core/printable.h"
#include "rpc/admin_methods.h"
#include "rpc/status_mapping.h"

namespace ckpt {
namespace {

using grpc::experimental::InterceptionHookPoints;

std::atomic<uint64_t> call_objects_handoff{0};  // see PublishCallObjects

class AuditInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuditInterceptor(grpc::experimental::ServerRpcInfo* info, const Gatekeeper& gatekeeper,
                   SharedThrottle& refusals, std::string_view method)
      : info_(info), gatekeeper_(gatekeeper), refusals_(refusals), method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    AcquireCallObjects();
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      ReadTarget(methods->GetRecvMessage());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Log(methods->GetSendStatus());
    }
    methods->Proceed();
  }

 private:
  // The target of the mutation (its job and pipeline, and the checkpoint or group it names),
  // read as the method's request type. Every mutation of AdminService is named here (the audit
  // test walks them all); a cast to another type would be undefined behaviour.
  void ReadTarget(void* message) {
    if (message == nullptr) return;
    if (method_ == "CreatePipeline" || method_ == "UpdatePipeline") {
      const auto& spec = *static_cast<const v1::PipelineSpec*>(message);
      Take(spec);
      if (!spec.alignment_group().empty()) extra_ = " group=" + Printable(spec.alignment_group());
      if (spec.has_restore_from()) extra_ += " restore_from=" + RefText(spec.restore_from());
    } else if (method_ == "TriggerSavepoint") {
      const auto& request = *static_cast<const v1::TriggerSavepointRequest*>(message);
      Take(request);
      if (request.pipeline_id().empty()) pipeline_ = "*";
    } else if (method_ == "DeletePipeline" || method_ == "PausePipeline" ||
               method_ == "ResumePipeline" || method_ == "TriggerCheckpoint") {
      Take(*static_cast<const v1::PipelineRef*>(message));
    } else if (method_ == "DeleteCheckpoint") {
      const auto& request = *static_cast<const v1::DeleteCheckpointRequest*>(message);
      Take(request.pipeline());
      extra_ = " checkpoint=" + std::to_string(request.checkpoint_id());
    } else if (method_ == "RestorePipeline") {
      const auto& request = *static_cast<const v1::RestorePipelineRequest*>(message);
      Take(request.pipeline());
      extra_ = " from=" + RefText(request.from());
    } else if (method_ == "PutAlignmentGroup") {
      extra_ = " group=" + Printable(static_cast<const v1::AlignmentGroupSpec*>(message)->name());
    } else if (method_ == "DeleteAlignmentGroup") {
      extra_ = " group=" + Printable(static_cast<const v1::AlignmentGroupRef*>(message)->name());
    }
  }
  template <typename Request>
  void Take(const Request& request) {
    job_ = request.job_id();
    pipeline_ = request.pipeline_id();
  }
  static std::string RefText(const v1::CheckpointRef& ref) {
    return Printable(ref.job_id()) + "/" + Printable(ref.pipeline_id()) + "@" +
           std::to_string(ref.checkpoint_id());
  }

  void Log(const grpc::Status& status) {
    const std::optional<std::string> principal = gatekeeper_.PrincipalOf(*info_->server_context());
    if (!principal) return;
    // A known principal refused again and again (a viewer's script in a loop) must not flood
    // the log: refusals share a throttle; what was admitted is logged every time.
    uint64_t held_back = 0;
    const bool refused = status.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
                         status.error_code() == grpc::StatusCode::UNAUTHENTICATED;
    if (refused && !refusals_.Allow(&held_back)) return;
    spdlog::info("audit: principal={} method={} job={} pipeline={}{} outcome={}{}{}{}",
                 Printable(*principal), method_, Printable(job_), Printable(pipeline_), extra_,
                 CodeName(status.error_code()), status.ok() ? "" : ": ",
                 Printable(status.error_message()),
                 held_back ? " (" + std::to_string(held_back) + " refusals not logged since)"
                           : std::string());
  }

  static std::string CodeName(grpc::StatusCode code) { return GrpcCodeName(code); }

  grpc::experimental::ServerRpcInfo* const info_;
  const Gatekeeper& gatekeeper_;
  SharedThrottle& refusals_;
  const std::string method_;
  std::string job_ = "-";
  std::string pipeline_ = "-";
  std::string extra_;  // " checkpoint=N", " group=G", " from=J/P@N": escaped already
};

}  // namespace

void PublishCallObjects() { call_objects_handoff.fetch_add(1, std::memory_order_acq_rel); }
void AcquireCallObjects() { call_objects_handoff.fetch_add(0, std::memory_order_acq_rel); }

grpc::experimental::Interceptor* AuditInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const std::string_view method = AdminMethodName(info->method());
  if (method.empty() || AdminMethodAccess(method) != Access::kMutate) return nullptr;
  return new AuditInterceptor(info, gatekeeper_, refusals_, method);
}

}  // namespace ckpt
