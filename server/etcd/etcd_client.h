#pragma once
// EtcdClient: one gRPC channel to an etcd cluster (every endpoint of store.etcd; gRPC moves to the
// next member when one fails) and blocking calls of etcd's v3 API with the configured deadline.
// Nothing here knows ckptd's keys: etcd_keys.h, etcd_backend.h and etcd_election.h do.
//
// Threading: every method is safe from any thread (gRPC stubs are). Each call blocks its thread
// for at most request_timeout_ms: never call one on a strand.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "config/etcd_settings.h"
#include "etcd/etcd_v3.grpc.pb.h"

namespace ckpt {

// How a failed etcd call ended, for the write path's rule (DESIGN.md "Beyond one machine"): a
// request etcd refused as invalid was not applied; anything else that failed after it was sent
// may have been (a deadline, a dropped connection mid-request).
enum class EtcdFailure { kNotApplied, kUnknownOutcome };

struct EtcdError {
  Status status;
  EtcdFailure failure = EtcdFailure::kUnknownOutcome;
};

class EtcdClient {
 public:
  // Builds the channel (TLS per settings.tls; the files are read now). Does not connect: the
  // first call does. INVALID_ARGUMENT for unusable endpoints or unreadable TLS files.
  static Result<std::unique_ptr<EtcdClient>> Create(const EtcdSettings& settings);

  // Blocks until the channel is connected to a member, or `timeout` passes: false then.
  bool WaitConnected(std::chrono::milliseconds timeout);

  // The calls. A failed one returns the gRPC status as ours, with etcd's message and which
  // members were asked ("etcd http://127.0.0.1:2379,...: ...").
  Result<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  // A txn's failure also says whether it may have been applied (EtcdFailure).
  bool Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response,
           EtcdError* error);
  Result<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_seconds);
  Status LeaseRevoke(int64_t lease_id);
  // One keepalive on a stream of its own, bounded by the request deadline: the lease's TTL left
  // (0 or less: the lease is gone).
  Result<int64_t> LeaseKeepAliveOnce(int64_t lease_id);
  Result<etcdserverpb::StatusResponse> MemberStatus();

  const EtcdSettings& settings() const { return settings_; }
  // "http://a:2379,http://b:2379": for messages.
  const std::string& endpoints_text() const { return endpoints_text_; }

 private:
  EtcdClient(EtcdSettings settings, std::shared_ptr<grpc::Channel> channel);
  void SetDeadline(grpc::ClientContext& context) const;
  Status Failed(const grpc::Status& status, const char* what) const;

  const EtcdSettings settings_;
  const std::string endpoints_text_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  const std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  const std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance_;
};

// The end of the range of every key starting with `prefix` (etcd's "prefix + 1").
std::string PrefixEnd(const std::string& prefix);

}  // namespace ckpt
