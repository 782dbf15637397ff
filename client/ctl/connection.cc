#include "ctl/connection.h"

#include <grpc/support/log.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common/channel_security.h"
#include "common/security_options.h"
#include "ctl/rpc_errors.h"

namespace ckpt::ctl {
namespace {

void DiscardLog(gpr_log_func_args*) {}

}  // namespace

void SilenceGrpcLogging() {
  ::setenv("GRPC_VERBOSITY", "NONE", /*overwrite=*/0);
  gpr_set_log_function(&DiscardLog);
}

namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const cli::ChannelSecurity& security) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(Connection::kMaxReplyBytes);
  return cli::CreateSecuredChannel(address, security, args);
}

// main parses --server into global.servers; a GlobalOptions made elsewhere may not have.
std::vector<std::string> ServersOf(const GlobalOptions& global) {
  if (!global.servers.empty()) return global.servers;
  return {global.server};
}

}  // namespace

Connection::Connection(const GlobalOptions& global, Target target)
    : security_(global.channel_security),
      target_(target),
      several_servers_(ServersOf(global).size() > 1),
      follower_(ServersOf(global)) {}

Connection::Channel& Connection::ChannelToLocked(const std::string& address) const {
  Channel& channel = channels_[address];
  if (!channel.stub) {
    channel.channel = MakeChannel(address, security_);
    channel.stub = v1::AdminService::NewStub(channel.channel);
  }
  return channel;
}

v1::AdminService::Stub& Connection::admin() const {
  std::lock_guard<std::mutex> lock(mu_);
  return *ChannelToLocked(follower_.current()).stub;
}

std::string Connection::address() const {
  std::lock_guard<std::mutex> lock(mu_);
  return follower_.current();
}

bool Connection::RetryElsewhere(const grpc::Status& status, const grpc::ClientContext& context,
                                std::string* gave_up) const {
  cli::TryOutcome outcome;
  outcome.status = status;
  outcome.leader = cli::LeaderTrailer(context);
  outcome.reached = Connected();
  // A leader's address comes from a daemon, not from the user: the token goes there only as it
  // would to an address given with --server.
  const cli::AddressCheck check = [this](const std::string& address) {
    return cli::CheckTokenTransport(address, security_, cli::kSecurityFlagNames);
  };
  std::lock_guard<std::mutex> lock(mu_);
  return cli::RetryElsewhere(outcome, target_ == Target::kLeader, check, &follower_, gave_up);
}

std::string Connection::ListAllPipelines(const std::string& job_id,
                                         v1::ListPipelinesResponse* all) const {
  v1::ListPipelinesRequest request;
  request.set_job_id(job_id);
  for (;;) {
    v1::ListPipelinesResponse page;
    if (std::string error = Call(&v1::AdminService::Stub::ListPipelines, request, &page);
        !error.empty()) {
      return error;
    }
    for (auto& p : *page.mutable_pipelines()) *all->add_pipelines() = std::move(p);
    if (page.next_page_token().empty()) return "";
    request.set_page_token(page.next_page_token());
  }
}

std::string Connection::ListCheckpoints(const std::string& job_id, const std::string& pipeline_id,
                                        int64_t limit, v1::ListCheckpointsResponse* all) const {
  v1::ListCheckpointsRequest request;
  request.set_job_id(job_id);
  request.set_pipeline_id(pipeline_id);
  for (;;) {
    const int64_t wanted = limit - all->checkpoints_size();
    request.set_limit(limit == 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(wanted, 1000)));
    v1::ListCheckpointsResponse page;
    if (std::string error = Call(&v1::AdminService::Stub::ListCheckpoints, request, &page);
        !error.empty()) {
      return error;
    }
    for (auto& c : *page.mutable_checkpoints()) {
      if (limit > 0 && all->checkpoints_size() >= limit) break;
      *all->add_checkpoints() = std::move(c);
    }
    // limit 0 asks for the daemon's default: one page.
    if (limit == 0 || page.next_page_token().empty() || all->checkpoints_size() >= limit) {
      return "";
    }
    request.set_page_token(page.next_page_token());
  }
}

void Connection::Prepare(grpc::ClientContext* context, std::chrono::milliseconds deadline) const {
  context->set_deadline(std::chrono::system_clock::now() + deadline);
  context->set_wait_for_ready(false);
  cli::AttachBearerToken(security_.token, context);
}

bool Connection::Connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ChannelToLocked(follower_.current()).channel->GetState(/*try_to_connect=*/false) ==
         GRPC_CHANNEL_READY;
}

std::string Connection::Describe(const grpc::Status& status,
                                 std::chrono::milliseconds deadline) const {
  CallInfo call;
  call.address = address();
  call.reached_daemon = Connected();
  call.deadline_ms = deadline.count();
  call.tls = security_.tls;
  call.client_certificate = !security_.cert_pem.empty();
  call.token = !security_.token.empty();
  std::string text = DescribeRpcFailure(status, call);
  if (several_servers_) {
    std::lock_guard<std::mutex> lock(mu_);
    text += " (asked " + follower_.Asked() + ")";
  }
  return text;
}

}  // namespace ckpt::ctl
