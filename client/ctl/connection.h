#pragma once
// The channel to ckptd and the settings every call uses: TLS and the bearer token as the global
// flags say, a deadline, fail-fast (an unreachable daemon is reported at once instead of waited
// for), failures described in one line, and the leader of an HA group followed (a standby's
// UNAVAILABLE names it; an unreachable daemon passes the request to the next of --server).

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ckpt/v1/admin.grpc.pb.h"
#include "common/leader_follower.h"
#include "common/leader_redirect.h"
#include "ctl/command.h"

namespace ckpt::ctl {

// Quiets gRPC's own logging (GRPC_VERBOSITY=NONE unless the user set it, and a no-op log
// function): ckptctl's stderr is one line of its own. Call before the first channel exists.
void SilenceGrpcLogging();

// Threading: safe for concurrent use (the address followed and the channels are guarded by mu_;
// stubs may be used from any thread, gRPC's guarantee). ckptctl itself calls from one thread.
class Connection {
 public:
  static constexpr std::chrono::milliseconds kUnaryDeadline{10'000};
  // Replies may be large (GetPipeline of a pipeline with 100,000 long task ids).
  static constexpr int kMaxReplyBytes = 64 << 20;

  // Whom a request goes to: the leader (every command but status), or the first daemon of
  // --server that answers, whatever its role (status reports the daemon it asked).
  enum class Target { kLeader, kFirstAnswering };

  // Channels to global.servers, secured by global.channel_security.
  explicit Connection(const GlobalOptions& global, Target target = Target::kLeader);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The stub of address(): where the next request goes.
  v1::AdminService::Stub& admin() const;
  std::string address() const;

  // Sets the deadline (from now), wait_for_ready(false) and the bearer token (if any) on a fresh
  // context. Every call of ckptctl goes through here.
  void Prepare(grpc::ClientContext* context, std::chrono::milliseconds deadline) const;

  // After a try at address() ended with `status` (`context` its finished call): true when it is
  // to be tried again, at the new address() (see cli::RetryElsewhere). False: `status` is the
  // answer; *gave_up then says why no further daemon was asked, or is "".
  bool RetryElsewhere(const grpc::Status& status, const grpc::ClientContext& context,
                      std::string* gave_up) const;

  // True when the channel to address() is connected now: an error came from the daemon, not the
  // network.
  bool Connected() const;

  // One line for a failed call (see rpc_errors.h), without the "ckptctl: " prefix; with a list of
  // daemons, the ones asked.
  std::string Describe(const grpc::Status& status, std::chrono::milliseconds deadline) const;

  // Every pipeline (of `job_id`, if not empty), page after page. "" on success.
  std::string ListAllPipelines(const std::string& job_id, v1::ListPipelinesResponse* all) const;
  // Up to `limit` checkpoints (0: the daemon's default page), page after page. "" on success.
  std::string ListCheckpoints(const std::string& job_id, const std::string& pipeline_id,
                              int64_t limit, v1::ListCheckpointsResponse* all) const;

  // A unary call with kUnaryDeadline, following the leader: "" on success, else the failure
  // described.
  template <typename Request, typename Response>
  std::string Call(grpc::Status (v1::AdminService::Stub::*method)(grpc::ClientContext*,
                                                                  const Request&, Response*),
                   const Request& request, Response* response) const {
    for (;;) {
      grpc::ClientContext context;
      Prepare(&context, kUnaryDeadline);
      const grpc::Status status = (admin().*method)(&context, request, response);
      if (status.ok()) return "";
      std::string gave_up;
      if (RetryElsewhere(status, context, &gave_up)) continue;
      return gave_up.empty() ? Describe(status, kUnaryDeadline) : gave_up;
    }
  }

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::AdminService::Stub> stub;
  };
  // The channel to `address`, made on first use; lives as long as the Connection.
  Channel& ChannelToLocked(const std::string& address) const;

  // Constant after construction.
  const cli::ChannelSecurity security_;
  const Target target_;
  const bool several_servers_;

  mutable std::mutex mu_;
  mutable cli::LeaderFollower follower_;             // guarded by mu_
  mutable std::map<std::string, Channel> channels_;  // guarded by mu_
};

}  // namespace ckpt::ctl
