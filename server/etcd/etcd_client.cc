#include "etcd/etcd_client.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/host_port.h"
#include "ha/etcd_outcomes.h"

namespace ckpt {
namespace {

// A TLS file, read whole; etcd's certificates are small, a huge file is a mistake.
Result<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::InvalidArgument(std::string("store.etcd.tls.") + what + " " + path +
                                   " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1u << 20)) {
    return Status::InvalidArgument(std::string("store.etcd.tls.") + what + " " + path +
                                   " is larger than 1 MiB");
  }
  return text.str();
}

std::string JoinEndpoints(const std::vector<std::string>& endpoints) {
  std::string out;
  for (const auto& e : endpoints) out += (out.empty() ? "" : ",") + e;
  return out;
}

// Ours for gRPC's; what has no counterpart (a cancelled or unknown call) is UNAVAILABLE: etcd
// could not be asked. etcd's DATA_LOSS (its own CORRUPT alarm) is UNAVAILABLE too: ours means
// ckptd's records are damaged (exit 65), and etcd's alarm says nothing of them.
StatusCode CodeOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND: return StatusCode::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return StatusCode::kAlreadyExists;
    case grpc::StatusCode::FAILED_PRECONDITION: return StatusCode::kFailedPrecondition;
    case grpc::StatusCode::ABORTED: return StatusCode::kAborted;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return StatusCode::kDeadlineExceeded;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return StatusCode::kResourceExhausted;
    case grpc::StatusCode::INTERNAL: return StatusCode::kInternal;
    case grpc::StatusCode::UNAUTHENTICATED: return StatusCode::kUnauthenticated;
    case grpc::StatusCode::PERMISSION_DENIED: return StatusCode::kPermissionDenied;
    default: return StatusCode::kUnavailable;
  }
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdSettings& settings) {
  if (settings.endpoints.empty()) return Status::InvalidArgument("store.etcd.endpoints is empty");
  // "ipv4:" targets take a list of addresses; gRPC's pick_first moves to the next one when the
  // member it uses fails. Names are resolved by the dns resolver, one at a time.
  std::vector<std::string> addresses;
  bool all_ipv4 = true;
  for (const std::string& url : settings.endpoints) {
    const size_t scheme_end = url.find("://");
    if (scheme_end == std::string::npos) {
      return Status::InvalidArgument("store.etcd.endpoints: '" + url + "' is not a URL");
    }
    auto hp = ParseHostPort(url.substr(scheme_end + 3));
    if (!hp.ok()) return Status::InvalidArgument("store.etcd.endpoints: " + hp.status().message());
    if (hp->host.find(':') != std::string::npos ||
        hp->host.find_first_not_of("0123456789.") != std::string::npos) {
      all_ipv4 = false;
    }
    addresses.push_back(hp->host + ":" + hp->port);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (settings.tls.enabled) {
    grpc::SslCredentialsOptions ssl;
    auto ca = ReadPem(settings.tls.ca_file, "ca_file");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!settings.tls.cert_file.empty()) {
      auto cert = ReadPem(settings.tls.cert_file, "cert_file");
      if (!cert.ok()) return cert.status();
      auto key = ReadPem(settings.tls.key_file, "key_file");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  return std::unique_ptr<EtcdClient>(
      new EtcdClient(settings, std::move(addresses), all_ipv4, std::move(credentials)));
}

EtcdClient::EtcdClient(EtcdSettings settings, std::vector<std::string> addresses, bool all_ipv4,
                       std::shared_ptr<grpc::ChannelCredentials> credentials)
    : settings_(std::move(settings)),
      endpoints_text_(JoinEndpoints(settings_.endpoints)),
      addresses_(std::move(addresses)),
      all_ipv4_(all_ipv4),
      credentials_(std::move(credentials)) {
  auto first = MakeStubs(0);
  MutexLock lock(mu_);
  stubs_ = std::move(first);
}

size_t EtcdClient::first_endpoint() const {
  MutexLock lock(mu_);
  return first_;
}

std::shared_ptr<const EtcdClient::Stubs> EtcdClient::MakeStubs(size_t first) const {
  std::string target;
  if (all_ipv4_) {
    target = "ipv4:";
    for (size_t i = 0; i < addresses_.size(); ++i) {
      target += (i == 0 ? "" : ",") + addresses_[(first + i) % addresses_.size()];
    }
  } else {
    // Host names (or IPv6): one endpoint through DNS; a cluster behind a name that resolves to
    // every member fails over the same way.
    target = addresses_[first % addresses_.size()];
  }
  grpc::ChannelArguments args;
  // A txn may carry up to etcd's request limit (1.5 MiB); a range answers at most a page of
  // values (etcd_reads.cc), well under this.
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(4 << 20);
  // Its own connections: a replaced channel must not inherit the old one's backoff through a
  // shared subchannel.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A connection whose peer vanished without a reset (a dead host) is found by pings while a
  // call is open, e.g. a standby's watch. Not more often than etcd's --grpc-keepalive-min-time
  // (5 s by default) allows.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  auto stubs = std::make_shared<Stubs>();
  stubs->channel = grpc::CreateCustomChannel(target, credentials_, args);
  stubs->kv = etcdserverpb::KV::NewStub(stubs->channel);
  stubs->lease = etcdserverpb::Lease::NewStub(stubs->channel);
  stubs->maintenance = etcdserverpb::Maintenance::NewStub(stubs->channel);
  stubs->watch = etcdserverpb::Watch::NewStub(stubs->channel);
  stubs->made = std::chrono::steady_clock::now();
  return stubs;
}

std::shared_ptr<const EtcdClient::Stubs> EtcdClient::stubs() const {
  MutexLock lock(mu_);
  return stubs_;
}

bool EtcdClient::WaitConnected(std::chrono::milliseconds timeout) {
  return stubs()->channel->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

void EtcdClient::Prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::min(timeout, std::chrono::milliseconds(settings_.request_timeout_ms)));
  // A member cut off from its cluster's leader refuses at once (UNAVAILABLE, "no leader") instead
  // of holding the call until its deadline.
  context.AddMetadata("hasleader", "true");
}

Status EtcdClient::Failed(const grpc::Status& status, const char* what,
                          const std::shared_ptr<const Stubs>& used) {
  const bool no_member_answered = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                  status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  if (no_member_answered && std::chrono::steady_clock::now() - used->made >= kMinChannelAge) {
    MutexLock lock(mu_);
    if (stubs_ == used) {  // unless another call replaced it already
      first_ = (first_ + 1) % addresses_.size();
      // Making a channel does not connect (nor block): it is fine under the lock.
      stubs_ = MakeStubs(first_);
    }
  }
  return Status(CodeOf(status.error_code()),
                std::string("etcd ") + endpoints_text_ + ": " + what + ": " +
                    (status.error_message().empty() ? "no answer" : status.error_message()));
}

Result<etcdserverpb::RangeResponse> EtcdClient::Range(const etcdserverpb::RangeRequest& request,
                                                      std::chrono::milliseconds timeout) {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context, timeout);
  etcdserverpb::RangeResponse response;
  grpc::Status status = used->kv->Range(&context, request, &response);
  if (!status.ok()) return Failed(status, "range", used);
  return response;
}

bool EtcdClient::Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response,
                     EtcdError* error) {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context);
  grpc::Status status = used->kv->Txn(&context, request, response);
  if (status.ok()) return true;
  error->status = Failed(status, "txn", used);
  // etcd checks a request's shape (size, operation count, duplicate keys) and the cluster's
  // state (space, rate, auth) before proposing it: those refusals are certain. Everything else
  // may have reached the raft log (ha/etcd_outcomes.h says which is which).
  switch (ActionFor(ClassifyEtcdFailure(error->status))) {
    case HaAction::kFailRequest:
    case HaAction::kFailNotWritable: error->failure = EtcdFailure::kNotApplied; break;
    default: error->failure = EtcdFailure::kUnknownOutcome;
  }
  return false;
}

Result<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(int64_t ttl_seconds) {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context);
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  grpc::Status status = used->lease->LeaseGrant(&context, request, &response);
  if (!status.ok()) return Failed(status, "lease grant", used);
  if (!response.error().empty()) {
    return Status::Unavailable("etcd " + endpoints_text_ + ": lease grant: " + response.error());
  }
  return response;
}

Status EtcdClient::LeaseRevoke(int64_t lease_id) {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context);
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse response;
  grpc::Status status = used->lease->LeaseRevoke(&context, request, &response);
  if (!status.ok()) return Failed(status, "lease revoke", used);
  return Status::Ok();
}

Result<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t lease_id,
                                               std::chrono::milliseconds timeout) {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context, timeout);
  auto stream = used->lease->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool answered = stream->Write(request) && stream->Read(&response);
  stream->WritesDone();
  if (!answered) {
    // The call's deadline bounds this: Finish says why the stream failed.
    grpc::Status status = stream->Finish();
    return Failed(
        status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream ended") : status,
        "lease keepalive", used);
  }
  // The server ends its side once ours is done; Finish collects the status.
  context.TryCancel();
  (void)stream->Finish();
  return response.ttl();
}

Result<etcdserverpb::StatusResponse> EtcdClient::MemberStatus() {
  auto used = stubs();
  grpc::ClientContext context;
  Prepare(context);
  etcdserverpb::StatusResponse response;
  grpc::Status status =
      used->maintenance->Status(&context, etcdserverpb::StatusRequest{}, &response);
  if (!status.ok()) return Failed(status, "status", used);
  return response;
}

std::unique_ptr<EtcdClient::WatchStream> EtcdClient::Watch() {
  auto used = stubs();
  auto watch = std::unique_ptr<WatchStream>(new WatchStream());
  watch->endpoints_text_ = endpoints_text_;
  // A member that lost its cluster's leader ends the stream rather than going quiet (etcd's
  // "require leader" for watches).
  watch->context_.AddMetadata("hasleader", "true");
  watch->stream_ = used->watch->Watch(&watch->context_);
  watch->stubs_ = std::move(used);
  return watch;
}

Status EtcdClient::WatchStream::Finish() {
  grpc::Status status = stream_->Finish();
  if (status.ok()) return Status::Ok();
  return Status(CodeOf(status.error_code()),
                "etcd " + endpoints_text_ + ": watch: " +
                    (status.error_message().empty() ? "no answer" : status.error_message()));
}

}  // namespace ckpt
