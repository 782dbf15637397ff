#include "ctl/connection.h"

#include <grpc/support/log.h>

#include <algorithm>
#include <cstdlib>

#include "common/channel_security.h"
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

}  // namespace

Connection::Connection(const GlobalOptions& global)
    : address_(global.server),
      security_(global.channel_security),
      channel_(MakeChannel(address_, security_)),
      stub_(v1::AdminService::NewStub(channel_)) {}

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
  return channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

std::string Connection::Describe(const grpc::Status& status,
                                 std::chrono::milliseconds deadline) const {
  CallInfo call;
  call.address = address_;
  call.reached_daemon = Connected();
  call.deadline_ms = deadline.count();
  call.tls = security_.tls;
  call.client_certificate = !security_.cert_pem.empty();
  call.token = !security_.token.empty();
  return DescribeRpcFailure(status, call);
}

}  // namespace ckpt::ctl
