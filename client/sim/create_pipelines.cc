#include "sim/create_pipelines.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "ckpt/v1/admin.grpc.pb.h"
#include "common/channel_security.h"
#include "common/grpc_code_name.h"
#include "common/leader_redirect.h"
#include "common/security_options.h"

namespace ckpt::sim {
namespace {

constexpr std::chrono::milliseconds kDefaultCallDeadline{10'000};
// Between rounds over a list of daemons none of which could take the call.
constexpr std::chrono::milliseconds kNextRoundPause{200};

// A channel per daemon asked, made on first use. Threading: one thread.
class AdminChannels {
 public:
  explicit AdminChannels(const cli::ChannelSecurity& security) : security_(security) {}

  void Connect(const std::string& address) {
    Channel& channel = channels_[address];
    if (channel.stub) return;
    channel.channel = cli::CreateSecuredChannel(address, security_, grpc::ChannelArguments());
    channel.stub = v1::AdminService::NewStub(channel.channel);
  }
  // Both after Connect(address).
  v1::AdminService::Stub& Stub(const std::string& address) { return *channels_[address].stub; }
  bool Connected(const std::string& address) {
    return channels_[address].channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
  }

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::AdminService::Stub> stub;
  };
  const cli::ChannelSecurity& security_;  // must outlive this
  std::map<std::string, Channel> channels_;
};

}  // namespace

v1::PipelineSpec SimPipelineSpec(const SimOptions& options, int index) {
  v1::PipelineSpec spec;
  spec.set_job_id(options.job);
  spec.set_pipeline_id("p" + std::to_string(index));
  for (int task = 0; task < options.tasks_per_pipeline; ++task) {
    spec.add_task_ids(std::to_string(task));
  }
  if (options.interval) spec.set_interval_ms(options.interval->count());
  if (options.timeout) spec.set_timeout_ms(options.timeout->count());
  if (options.position_interval) spec.set_position_interval(*options.position_interval);
  if (options.group_size > 0) spec.set_alignment_group(SimGroupName(options, index));
  return spec;
}

std::string SimGroupName(const SimOptions& options, int index) {
  return options.job + "-g" + std::to_string(index / options.group_size);
}

namespace {

// --group-size: the groups the pipelines join, created (or changed) first. One daemon only:
// every call waits for it to be ready, within `deadline`.
std::string PutGroups(const SimOptions& options, AdminChannels& channels, const std::string& server,
                      const cli::ChannelSecurity& security, std::chrono::milliseconds deadline) {
  channels.Connect(server);
  for (int first = 0; first < options.pipelines; first += options.group_size) {
    v1::AlignmentGroupSpec spec;
    spec.set_name(SimGroupName(options, first));
    if (options.interval) spec.set_interval_ms(options.interval->count());
    if (options.timeout) spec.set_timeout_ms(options.timeout->count());
    if (options.position_interval) spec.set_position_interval(*options.position_interval);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    context.set_wait_for_ready(true);
    cli::AttachBearerToken(security.token, &context);
    v1::AlignmentGroup put;
    const grpc::Status status = channels.Stub(server).PutAlignmentGroup(&context, spec, &put);
    if (!status.ok()) {
      return "cannot create alignment group " + spec.name() + ": " +
             std::string(cli::GrpcCodeName(status.error_code())) + ": " + status.error_message();
    }
  }
  std::fprintf(stderr, "ckpt-worker-sim: %d alignment group(s) of %d ready\n",
               (options.pipelines + options.group_size - 1) / options.group_size,
               options.group_size);
  return "";
}

}  // namespace

std::string CreatePipelines(const SimOptions& options, const cli::ChannelSecurity& security) {
  const std::chrono::milliseconds deadline =
      options.connect_timeout.count() > 0 ? options.connect_timeout : kDefaultCallDeadline;
  const std::vector<std::string> servers =
      options.servers.empty() ? std::vector<std::string>{options.server} : options.servers;
  // One daemon is waited for while it starts; in a list an unreachable one is passed over at once.
  const bool wait_for_ready = servers.size() == 1;
  AdminChannels channels(security);
  cli::LeaderFollower follower(servers);
  const cli::AddressCheck check = [&security](const std::string& address) {
    return cli::CheckTokenTransport(address, security, cli::kSecurityFlagNames);
  };
  if (options.group_size > 0) {
    if (std::string error = PutGroups(options, channels, follower.current(), security, deadline);
        !error.empty()) {
      return error;
    }
  }
  for (int i = 0; i < options.pipelines; ++i) {
    const v1::PipelineSpec spec = SimPipelineSpec(options, i);
    const std::string name = spec.job_id() + "/" + spec.pipeline_id();
    const auto until = std::chrono::system_clock::now() + deadline;
    grpc::Status status;
    std::string gave_up;
    for (;;) {
      grpc::ClientContext context;
      context.set_deadline(until);
      // A daemon still starting is waited for, within the deadline.
      context.set_wait_for_ready(wait_for_ready);
      cli::AttachBearerToken(security.token, &context);
      v1::Pipeline created;
      channels.Connect(follower.current());
      status = channels.Stub(follower.current()).CreatePipeline(&context, spec, &created);
      cli::TryOutcome outcome{status, cli::LeaderTrailer(context),
                              channels.Connected(follower.current())};
      if (cli::RetryElsewhere(outcome, /*follow_leader=*/true, check, &follower, &gave_up)) {
        continue;
      }
      // Every daemon of the list refused or was down: a group electing its leader, or daemons
      // still starting. Another round, as a single daemon is waited for, until the deadline.
      if (gave_up.empty() && status.error_code() == grpc::StatusCode::UNAVAILABLE &&
          std::chrono::system_clock::now() + kNextRoundPause < until &&
          (!outcome.reached || outcome.leader)) {
        std::this_thread::sleep_for(kNextRoundPause);
        follower.Restart();
        continue;
      }
      break;
    }
    if (status.ok()) {
      std::fprintf(stderr, "ckpt-worker-sim: created pipeline %s\n", name.c_str());
    } else if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
      std::fprintf(stderr, "ckpt-worker-sim: pipeline %s exists\n", name.c_str());
    } else if (!gave_up.empty()) {
      return "cannot create pipeline " + name + ": " + gave_up;
    } else {
      std::string message = status.error_message();
      for (char& c : message) {
        if (c == '\n') c = ' ';
      }
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        message = "no answer within " + std::to_string(deadline.count()) +
                  " ms (is ckptd running there?)";
      }
      return "cannot create pipeline " + name + " at " + follower.current() + ": " +
             cli::GrpcCodeName(status.error_code()) + (message.empty() ? "" : ": " + message);
    }
  }
  return "";
}

}  // namespace ckpt::sim
