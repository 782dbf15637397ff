#pragma once
// AdminCallLimit: AdminService calls in flight, per client address, for
// limits.max_admin_calls_per_peer. A call's reply waits in the daemon's memory until its caller
// reads it; a caller that never reads could otherwise pin one reply per call it makes (2,000
// ListPipelines on one connection once held close to a gigabyte). Every AdminService call is
// counted from the moment gRPC makes it until it is gone (its reply read or dropped, the
// connection closed): by a server interceptor, which gRPC creates with the call and destroys with
// it. The handler refuses a call over the limit (AdminServiceImpl::Admit): RESOURCE_EXHAUSTED
// with a status of a few bytes, which is not flow-controlled.
//
// Threading: any thread (StreamSlots' mutex); the interceptors are made and destroyed on gRPC's
// threads.

#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "rpc/stream_slots.h"

namespace ckpt {

class AdminCallLimit {
 public:
  // `ended`: counts the calls gone (for the heap trimmer); must outlive this.
  explicit AdminCallLimit(std::atomic<uint64_t>& ended) : ended_(ended) {}

  // The calls of `peer` (an address, PeerAddress) in flight now, this one included.
  int64_t InFlight(const std::string& peer) const { return calls_.Count(peer); }

  // The interceptor factory to register with the server (ServerBuilder::experimental()).
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeFactory();

 private:
  friend class AdminCallCounting;
  StreamSlots calls_{INT64_MAX, INT64_MAX};
  std::atomic<uint64_t>& ended_;
};

}  // namespace ckpt
