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
};

// Without the "ckptctl: " prefix, e.g.
//   "no pipeline etl/p9 (NOT_FOUND)"                       (the daemon's message and the code)
//   "cannot reach ckptd at 127.0.0.1:7070: connection refused (is it running? set --server or
//    CKPTCTL_SERVER)"
//   "ckptd at 127.0.0.1:7070 gave no answer within 10s (DEADLINE_EXCEEDED)"
// Newlines in the daemon's message become spaces.
std::string DescribeRpcFailure(const grpc::Status& status, const CallInfo& call);

// True when `status` says the daemon was never reached (refused, unresolvable, unroutable, no
// answer while connecting), as opposed to the daemon answering with an error.
bool IsConnectFailure(const grpc::Status& status, const CallInfo& call);

}  // namespace ckpt::ctl
