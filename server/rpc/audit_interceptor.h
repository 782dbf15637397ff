#pragma once
// The audit log: one line per AdminService mutation (CONTRACT.md "Security"), with the principal,
// the method, the job and pipeline, and the outcome the caller was sent. A gRPC server
// interceptor, so that every path out of a handler (a refusal, an early error, the strand's
// answer, a savepoint stream's last message) is logged by one piece of code with the status that
// really went out. Reads are not audited. A caller no principal matches is not either: its
// refusals are counted and logged (rate-limited) by the Gatekeeper, so that an anonymous client
// cannot flood the log.
//
// Threading: gRPC creates one interceptor per audited call; its hooks run one at a time.

#include <grpcpp/support/server_interceptor.h>

#include "rpc/gatekeeper.h"

namespace ckpt {

class AuditInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `gatekeeper` must outlive the server.
  explicit AuditInterceptorFactory(const Gatekeeper& gatekeeper) : gatekeeper_(gatekeeper) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const Gatekeeper& gatekeeper_;
};

}  // namespace ckpt
