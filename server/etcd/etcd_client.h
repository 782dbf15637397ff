#pragma once
// EtcdClient: one gRPC channel to an etcd cluster (every endpoint of store.etcd; gRPC moves to the
// next member when one fails) and blocking calls of etcd's v3 API with the configured deadline.
// Nothing here knows ckptd's keys: etcd_keys.h, etcd_backend.h and etcd_election.h do.
//
// Threading: every method is safe from any thread (gRPC stubs are; the channel in use is swapped
// under mu_). Each call blocks its thread for at most request_timeout_ms, except a WatchStream's
// Read, which blocks until an event or the stream's end: never call one on a strand.
//
// Reconnecting: a gRPC channel that met a refused connection backs off for seconds (more with
// each failure) before it tries again, which would cost a leader its lease after an etcd member
// restarted. And gRPC's pick_first stays on a member for as long as its connection stands, even
// when the member no longer answers (its process hung, its host paused: the kernel still takes
// the connection) or has lost its cluster. So a call that could not reach a member that answers
// (UNAVAILABLE, which a member cut off from its cluster's leader gives at once: every call asks
// for one with etcd's `hasleader`; or DEADLINE_EXCEEDED) replaces the channel, at most every
// kMinChannelAge, with one that tries the endpoints starting at the next: the next call goes to
// another member, at once.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "config/etcd_settings.h"
#include "etcd/etcd_v3.grpc.pb.h"

namespace ckpt {

// How a failed etcd call ended, for the write path's rule (docs/DESIGN.md "Beyond one machine"): a
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

  // The calls, each bounded by store.etcd.request_timeout_ms, or by `timeout` where one is given
  // (and shorter). A failed one returns the gRPC status as ours, with etcd's message and which
  // members were asked ("etcd http://127.0.0.1:2379,...: ...").
  Result<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request,
      std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // A txn's failure also says whether it may have been applied (EtcdFailure).
  bool Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response,
           EtcdError* error);
  Result<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_seconds);
  Status LeaseRevoke(int64_t lease_id);
  // One keepalive on a stream of its own: the lease's TTL left (0 or less: the lease is gone).
  Result<int64_t> LeaseKeepAliveOnce(
      int64_t lease_id, std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  Result<etcdserverpb::StatusResponse> MemberStatus();

  // One stream of etcd's Watch service: no deadline, it lasts until it fails or is cancelled.
  // One thread reads (Read blocks); Cancel may come from any thread, and makes Read return false.
  class WatchStream {
   public:
    bool Write(const etcdserverpb::WatchRequest& request) { return stream_->Write(request); }
    bool Read(etcdserverpb::WatchResponse* response) { return stream_->Read(response); }
    void Cancel() { context_.TryCancel(); }
    // Why it ended, once Read returned false.
    Status Finish();

   private:
    friend class EtcdClient;
    std::shared_ptr<const void> stubs_;  // keeps the channel alive
    grpc::ClientContext context_;
    std::unique_ptr<
        grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
        stream_;
    std::string endpoints_text_;
  };
  std::unique_ptr<WatchStream> Watch();

  const EtcdSettings& settings() const { return settings_; }
  // "http://a:2379,http://b:2379": for messages.
  const std::string& endpoints_text() const { return endpoints_text_; }
  // The index (in store.etcd.endpoints) of the endpoint the channel in use tries first (tests).
  size_t first_endpoint() const;

 private:
  static constexpr auto kMinChannelAge = std::chrono::milliseconds(250);

  // One channel and its stubs; replaced whole.
  struct Stubs {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
    std::chrono::steady_clock::time_point made;
  };

  EtcdClient(EtcdSettings settings, std::vector<std::string> addresses, bool all_ipv4,
             std::shared_ptr<grpc::ChannelCredentials> credentials);
  // A channel that tries the endpoints from addresses_[first] on.
  std::shared_ptr<const Stubs> MakeStubs(size_t first) const;
  std::shared_ptr<const Stubs> stubs() const;
  // The call's deadline (the shorter of the setting and `timeout`) and etcd's `hasleader`.
  void Prepare(grpc::ClientContext& context,
               std::chrono::milliseconds timeout = std::chrono::milliseconds::max()) const;
  // Ours for a failed call; one that reached no member that answers also replaces `used` (see
  // Reconnecting).
  Status Failed(const grpc::Status& status, const char* what,
                const std::shared_ptr<const Stubs>& used);

  const EtcdSettings settings_;
  const std::string endpoints_text_;
  // "host:port" of each endpoint, in the configured order.
  const std::vector<std::string> addresses_;
  // Every host an IPv4 address: a channel takes them all ("ipv4:a,b,c"); else one at a time,
  // each through DNS.
  const bool all_ipv4_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  mutable Mutex mu_;
  std::shared_ptr<const Stubs> stubs_ CKPT_GUARDED_BY(mu_);
  size_t first_ CKPT_GUARDED_BY(mu_) = 0;  // the endpoint stubs_ tries first
};

// The end of the range of every key starting with `prefix` (etcd's "prefix + 1").
std::string PrefixEnd(const std::string& prefix);

}  // namespace ckpt
