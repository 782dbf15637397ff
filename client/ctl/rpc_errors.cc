#include "ctl/rpc_errors.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/grpc_code_name.h"
#include "ctl/durations.h"
#include "views/enum_names.h"

namespace ckpt::ctl {
namespace {

constexpr char kCannotResolve[] = "cannot resolve the host name";
constexpr char kClosed[] = "the connection was closed";
constexpr char kReset[] = "connection reset";
constexpr char kHandshakeFailed[] = "handshake failed";

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
  if (Contains(m, "connection reset")) return kReset;
  if (Contains(m, "timed out") || Contains(m, "timeout")) return "connection timed out";
  if (Contains(m, "socket closed") || Contains(m, "connection closed") || Contains(m, "goaway")) {
    return kClosed;
  }
  if (Contains(m, "handshake")) return kHandshakeFailed;
  if (Contains(m, "failed to connect")) return "connection failed";
  return "";
}

// A TLS handshake that failed for a reason with one fix, in words that say the fix; "" otherwise.
// The texts are OpenSSL's (gRPC 1.51 on Debian) and BoringSSL's (gRPC's own builds).
std::string TlsFailure(const std::string& message, const CallInfo& call) {
  const std::string m = Lower(message);
  if (Contains(m, "certificate verify failed") || Contains(m, "certificate_verify_failed")) {
    return "server certificate not trusted: pass --ca-file with the CA that signed it";
  }
  // "Peer name <name> is not in peer certificate"
  if (const size_t at = m.find("peer name "), end = m.find(" is not in peer certificate");
      at != std::string::npos && end != std::string::npos && end > at) {
    const size_t name = at + std::strlen("peer name ");
    return "the server certificate is not for " + message.substr(name, end - name) +
           ": pass --tls-server-name with a name it holds";
  }
  if (call.tls && (Contains(m, "wrong version number") || Contains(m, "wrong_version_number"))) {
    return "the daemon does not speak TLS on this port: drop --ca-file, --cert-file and "
           "--key-file, or check --server";
  }
  // gRPC could not build its TLS context from the PEMs (ckptctl checks them first: unexpected).
  if (call.tls && Contains(m, "empty address list")) {
    return "TLS could not be set up; check --ca-file, --cert-file and --key-file";
  }
  return "";
}

// How to fix a connection that ended before any answer, by what the client presented.
std::string ClosedHint(const std::string& why, const CallInfo& call) {
  const bool closed = why == kClosed || why == kReset || why == kHandshakeFailed;
  if (!closed) return "";
  if (!call.tls) return "the daemon may require TLS: pass --ca-file";
  if (!call.client_certificate) {
    return "the daemon may require a client certificate: pass --cert-file and --key-file";
  }
  return "the daemon may not accept the certificate of --cert-file: is it signed by a CA the "
         "daemon trusts?";
}

std::string CannotReach(const CallInfo& call, const std::string& why) {
  std::string hint = ClosedHint(why, call);
  if (hint.empty()) {
    hint = why == kCannotResolve ? "check --server or CKPTCTL_SERVER"
                                 : "is it running? set --server or CKPTCTL_SERVER";
  }
  return "cannot reach ckptd at " + call.address + ": " + why + " (" + hint + ")";
}

// `message` without a leading `phrase` (and the ": " after it), compared without case: the
// daemon's message may start with the words ours does.
std::string WithoutLeading(const std::string& message, const std::string& phrase) {
  if (Lower(message).rfind(Lower(phrase), 0) != 0) return message;
  std::string rest = message.substr(phrase.size());
  if (rest.rfind(": ", 0) == 0) rest.erase(0, 2);
  return rest;
}

// What the daemon refused, by what was presented, then its own words and the code.
std::string Unauthenticated(const std::string& code, const std::string& message,
                            const CallInfo& call) {
  std::string lead, detail, fix;
  if (call.token) {
    lead = "token refused";
    detail = WithoutLeading(message, lead);
    // Only ckpt-hostile's kind of client gets this far: ckptctl itself refuses to send it.
    fix = !call.tls && Contains(Lower(message), "plaintext") ? "pass --ca-file to connect with TLS"
                                                             : "check --token-file";
  } else if (call.client_certificate) {
    lead = "client certificate refused";
    detail = WithoutLeading(message, lead);
    fix = "check --cert-file";
  } else {
    lead = "no credentials: pass --token-file or --cert-file/--key-file";
    detail = WithoutLeading(message, "no credentials");
  }
  return lead + " (" + code + (detail.empty() ? "" : ": " + detail) + ")" +
         (fix.empty() ? "" : "; " + fix);
}

}  // namespace

bool IsConnectFailure(const grpc::Status& status, const CallInfo& call) {
  // A connected channel means the daemon itself answered, even with UNAVAILABLE (shutting down).
  if (call.reached_daemon) return false;
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::string DescribeRpcFailure(const grpc::Status& status, const CallInfo& call) {
  const std::string code = cli::GrpcCodeName(status.error_code());
  const std::string message = OneLine(status.error_message());
  if (IsConnectFailure(status, call)) {
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return CannotReach(call, "no connection within " + FormatDuration(call.deadline_ms));
    }
    if (std::string tls = TlsFailure(message, call); !tls.empty()) {
      return "cannot reach ckptd at " + call.address + ": " + tls;
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
    case grpc::StatusCode::UNAUTHENTICATED: return Unauthenticated(code, message, call);
    case grpc::StatusCode::PERMISSION_DENIED:
      return (message.empty() ? "permission denied" : message) + " (" + code +
             "; your principal's role does not allow this)";
    default: break;
  }
  if (message.empty()) return "the request failed (" + code + ")";
  return message + " (" + code + ")";
}

}  // namespace ckpt::ctl
