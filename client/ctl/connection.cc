#include "ctl/connection.h"

#include <grpc/support/log.h>

#include <cstdlib>

#include "ctl/rpc_errors.h"

namespace ckpt::ctl {
namespace {

void DiscardLog(gpr_log_func_args*) {}

}  // namespace

void SilenceGrpcLogging() {
  ::setenv("GRPC_VERBOSITY", "NONE", /*overwrite=*/0);
  gpr_set_log_function(&DiscardLog);
}

Connection::Connection(std::string address)
    : address_(std::move(address)),
      channel_(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials())),
      stub_(v1::AdminService::NewStub(channel_)) {}

void Connection::Prepare(grpc::ClientContext* context, std::chrono::milliseconds deadline) {
  context->set_deadline(std::chrono::system_clock::now() + deadline);
  context->set_wait_for_ready(false);
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
  return DescribeRpcFailure(status, call);
}

}  // namespace ckpt::ctl
