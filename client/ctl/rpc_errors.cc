#include "ctl/rpc_errors.h"

#include <algorithm>
#include <cctype>

#include "ctl/durations.h"
#include "ctl/names.h"

namespace ckpt::ctl {
namespace {

constexpr char kCannotResolve[] = "cannot resolve the host name";

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

bool Contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// What gRPC's transport said, in a few words; "" when it is not a transport failure we know.
std::string TransportReason(const std::string& message) {
  const std::string m = Lower(message);
  if (Contains(m, "connection refused")) return "connection refused";
  if (Contains(m, "dns resolution failed") || Contains(m, "domain name not found") ||
      Contains(m, "name or service not known") || Contains(m, "could not resolve") ||
      Contains(m, "name resolution")) {
    return kCannotResolve;
  }
  if (Contains(m, "no route to host")) return "no route to host";
  if (Contains(m, "network is unreachable")) return "network is unreachable";
  if (Contains(m, "connection reset")) return "connection reset";
  if (Contains(m, "timed out") || Contains(m, "timeout")) return "connection timed out";
  if (Contains(m, "socket closed") || Contains(m, "connection closed") || Contains(m, "goaway")) {
    return "the connection was closed";
  }
  if (Contains(m, "failed to connect")) return "connection failed";
  if (Contains(m, "handshake")) return "handshake failed (is it a ckptd gRPC port?)";
  return "";
}

std::string CannotReach(const CallInfo& call, const std::string& why) {
  const bool bad_name = why == kCannotResolve;
  return "cannot reach ckptd at " + call.address + ": " + why +
         (bad_name ? " (check --server or CKPTCTL_SERVER)"
                   : " (is it running? set --server or CKPTCTL_SERVER)");
}

}  // namespace

bool IsConnectFailure(const grpc::Status& status, const CallInfo& call) {
  // A connected channel means the daemon itself answered, even with UNAVAILABLE (shutting down).
  if (call.reached_daemon) return false;
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::string DescribeRpcFailure(const grpc::Status& status, const CallInfo& call) {
  const std::string code = StatusCodeName(status.error_code());
  const std::string message = OneLine(status.error_message());
  if (IsConnectFailure(status, call)) {
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return CannotReach(call, "no connection within " + FormatDuration(call.deadline_ms));
    }
    std::string why = TransportReason(message);
    return CannotReach(call, why.empty() ? "UNAVAILABLE" : why);
  }
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "ckptd at " + call.address + " gave no answer within " +
             FormatDuration(call.deadline_ms) + " (DEADLINE_EXCEEDED)";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "ckptd at " + call.address +
             " does not implement this request (UNIMPLEMENTED); is it older than ckptctl?";
    default: break;
  }
  if (message.empty()) return "the request failed (" + code + ")";
  return message + " (" + code + ")";
}

}  // namespace ckpt::ctl
