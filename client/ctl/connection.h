#pragma once
// The channel to ckptd and the settings every call uses: TLS and the bearer token as the global
// flags say, a deadline, fail-fast (an unreachable daemon is reported at once instead of waited
// for), and failures described in one line.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "ckpt/v1/admin.grpc.pb.h"
#include "ctl/command.h"

namespace ckpt::ctl {

// Quiets gRPC's own logging (GRPC_VERBOSITY=NONE unless the user set it, and a no-op log
// function): ckptctl's stderr is one line of its own. Call before the first channel exists.
void SilenceGrpcLogging();

// Threading: the stub may be used from any thread (gRPC's guarantee); the Connection itself is
// constant after construction.
class Connection {
 public:
  static constexpr std::chrono::milliseconds kUnaryDeadline{10'000};
  // Replies may be large (GetPipeline of a pipeline with 100,000 long task ids).
  static constexpr int kMaxReplyBytes = 64 << 20;

  // The channel to global.server, secured by global.channel_security.
  explicit Connection(const GlobalOptions& global);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  v1::AdminService::Stub& admin() const { return *stub_; }
  const std::string& address() const { return address_; }

  // Sets the deadline (from now), wait_for_ready(false) and the bearer token (if any) on a fresh
  // context. Every call of ckptctl goes through here.
  void Prepare(grpc::ClientContext* context, std::chrono::milliseconds deadline) const;

  // True when the channel is connected now: an error came from the daemon, not the network.
  bool Connected() const;

  // One line for a failed call (see rpc_errors.h), without the "ckptctl: " prefix.
  std::string Describe(const grpc::Status& status, std::chrono::milliseconds deadline) const;

  // Every pipeline (of `job_id`, if not empty), page after page. "" on success.
  std::string ListAllPipelines(const std::string& job_id, v1::ListPipelinesResponse* all) const;
  // Up to `limit` checkpoints (0: the daemon's default page), page after page. "" on success.
  std::string ListCheckpoints(const std::string& job_id, const std::string& pipeline_id,
                              int64_t limit, v1::ListCheckpointsResponse* all) const;

  // A unary call with kUnaryDeadline: "" on success, else the failure described.
  template <typename Request, typename Response>
  std::string Call(grpc::Status (v1::AdminService::Stub::*method)(grpc::ClientContext*,
                                                                  const Request&, Response*),
                   const Request& request, Response* response) const {
    grpc::ClientContext context;
    Prepare(&context, kUnaryDeadline);
    const grpc::Status status = (stub_.get()->*method)(&context, request, response);
    return status.ok() ? std::string() : Describe(status, kUnaryDeadline);
  }

 private:
  const std::string address_;
  const cli::ChannelSecurity security_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::AdminService::Stub> stub_;
};

}  // namespace ckpt::ctl
