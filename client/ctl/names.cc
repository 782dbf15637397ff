#include "ctl/names.h"

namespace ckpt::ctl {
namespace {

// Protobuf's enum name without its type prefix; "" (unknown value) becomes "UNKNOWN(n)".
std::string Strip(const std::string& full_name, const std::string& prefix, int value) {
  if (full_name.empty()) return "UNKNOWN(" + std::to_string(value) + ")";
  if (full_name.compare(0, prefix.size(), prefix) == 0) return full_name.substr(prefix.size());
  return full_name;
}

}  // namespace

std::string ShortName(v1::PipelineState state) {
  return Strip(v1::PipelineState_Name(state), "PIPELINE_STATE_", state);
}

std::string ShortName(v1::CheckpointKind kind) {
  return Strip(v1::CheckpointKind_Name(kind), "CHECKPOINT_KIND_", kind);
}

std::string ShortName(v1::CheckpointStatus status) {
  return Strip(v1::CheckpointStatus_Name(status), "CHECKPOINT_STATUS_", status);
}

std::string ShortName(v1::SavepointStatus status) {
  return Strip(v1::SavepointStatus_Name(status), "SAVEPOINT_STATUS_", status);
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      break;
  }
  return "UNKNOWN";
}

}  // namespace ckpt::ctl
