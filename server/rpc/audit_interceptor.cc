#include "rpc/audit_interceptor.h"

#include <spdlog/spdlog.h>

#include "ckpt/v1/admin.pb.h"
#include "core/printable.h"
#include "rpc/admin_methods.h"

namespace ckpt {
namespace {

using grpc::experimental::InterceptionHookPoints;

class AuditInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuditInterceptor(grpc::experimental::ServerRpcInfo* info, const Gatekeeper& gatekeeper,
                   std::string_view method)
      : info_(info), gatekeeper_(gatekeeper), method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      ReadTarget(methods->GetRecvMessage());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Log(methods->GetSendStatus());
    }
    methods->Proceed();
  }

 private:
  // The request's job and pipeline: each mutation's request type names them.
  void ReadTarget(void* message) {
    if (message == nullptr) return;
    if (method_ == "CreatePipeline" || method_ == "UpdatePipeline") {
      const auto* spec = static_cast<const v1::PipelineSpec*>(message);
      job_ = spec->job_id();
      pipeline_ = spec->pipeline_id();
    } else if (method_ == "TriggerSavepoint") {
      const auto* request = static_cast<const v1::TriggerSavepointRequest*>(message);
      job_ = request->job_id();
      pipeline_ = request->pipeline_id().empty() ? "*" : request->pipeline_id();
    } else {
      const auto* ref = static_cast<const v1::PipelineRef*>(message);
      job_ = ref->job_id();
      pipeline_ = ref->pipeline_id();
    }
  }

  void Log(const grpc::Status& status) {
    const std::string principal = gatekeeper_.PrincipalOf(*info_->server_context());
    if (principal == "(unidentified)") return;
    spdlog::info("audit: principal={} method={} job={} pipeline={} outcome={}{}{}",
                 Printable(principal), method_, Printable(job_), Printable(pipeline_),
                 CodeName(status.error_code()), status.ok() ? "" : ": ",
                 Printable(status.error_message()));
  }

  static const char* CodeName(grpc::StatusCode code) {
    switch (code) {
      case grpc::StatusCode::OK: return "OK";
      case grpc::StatusCode::CANCELLED: return "CANCELLED";
      case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
      case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
      case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
      case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
      case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
      case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
      case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
      case grpc::StatusCode::ABORTED: return "ABORTED";
      case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
      case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
      case grpc::StatusCode::INTERNAL: return "INTERNAL";
      case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
      default: return "UNKNOWN";
    }
  }

  grpc::experimental::ServerRpcInfo* const info_;
  const Gatekeeper& gatekeeper_;
  const std::string method_;
  std::string job_ = "-";
  std::string pipeline_ = "-";
};

}  // namespace

grpc::experimental::Interceptor* AuditInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const std::string_view method = AdminMethodName(info->method());
  if (method.empty() || AdminMethodAccess(method) != Access::kMutate) return nullptr;
  return new AuditInterceptor(info, gatekeeper_, method);
}

}  // namespace ckpt
