#pragma once
// A failed RPC in words an operator can act on: one line, no gRPC internals.

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

namespace ckpt::ctl {

struct CallInfo {
  std::string address;          // the --server tried
  bool reached_daemon = false;  // the channel was connected when the call ended
  int64_t deadline_ms = 0;      // the call's deadline, for "no answer within ..."
  // What the call presented, for the hint of a refused handshake or call.
  bool tls = false;                 // --ca-file, --cert-file or --key-file
  bool client_certificate = false;  // --cert-file and --key-file
  bool token = false;               // --token-file
};

// Without the "ckptctl: " prefix, e.g.
//   "no pipeline etl/p9 (NOT_FOUND)"                       (the daemon's message and the code)
//   "cannot reach ckptd at 127.0.0.1:7070: connection refused (is it running? set --server or
//    CKPTCTL_SERVER)"
//   "ckptd at 127.0.0.1:7070 gave no answer within 10s (DEADLINE_EXCEEDED)"
//   "cannot reach ckptd at 10.0.0.5:7070: server certificate not trusted: pass --ca-file with the
//    CA that signed it"
//   "cannot reach ckptd at 10.0.0.5:7070: the connection was closed (the daemon may require TLS:
//    pass --ca-file)"
//   "token refused (UNAUTHENTICATED: it belongs to no principal); check --token-file"
//   "no credentials: pass --token-file or --cert-file/--key-file (UNAUTHENTICATED)"
//   "admin only (PERMISSION_DENIED; your principal's role does not allow this)"
// Newlines in the daemon's message become spaces.
std::string DescribeRpcFailure(const grpc::Status& status, const CallInfo& call);

// True when `status` says the daemon was never reached (refused, unresolvable, unroutable, no
// answer while connecting), as opposed to the daemon answering with an error.
bool IsConnectFailure(const grpc::Status& status, const CallInfo& call);

}  // namespace ckpt::ctl
