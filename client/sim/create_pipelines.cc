#include "sim/create_pipelines.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>

#include "ckpt/v1/admin.grpc.pb.h"
#include "common/channel_security.h"
#include "common/grpc_code_name.h"

namespace ckpt::sim {
namespace {

constexpr std::chrono::milliseconds kDefaultCallDeadline{10'000};

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
  return spec;
}

std::string CreatePipelines(const SimOptions& options, const cli::ChannelSecurity& security) {
  const std::chrono::milliseconds deadline =
      options.connect_timeout.count() > 0 ? options.connect_timeout : kDefaultCallDeadline;
  const std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(
      cli::CreateSecuredChannel(options.server, security, grpc::ChannelArguments()));
  for (int i = 0; i < options.pipelines; ++i) {
    const v1::PipelineSpec spec = SimPipelineSpec(options, i);
    const std::string name = spec.job_id() + "/" + spec.pipeline_id();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    context.set_wait_for_ready(true);  // a daemon still starting is waited for, within the deadline
    cli::AttachBearerToken(security.token, &context);
    v1::Pipeline created;
    const grpc::Status status = admin->CreatePipeline(&context, spec, &created);
    if (status.ok()) {
      std::fprintf(stderr, "ckpt-worker-sim: created pipeline %s\n", name.c_str());
    } else if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
      std::fprintf(stderr, "ckpt-worker-sim: pipeline %s exists\n", name.c_str());
    } else {
      std::string message = status.error_message();
      for (char& c : message) {
        if (c == '\n') c = ' ';
      }
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        message = "no answer within " + std::to_string(deadline.count()) +
                  " ms (is ckptd running there?)";
      }
      return "cannot create pipeline " + name + " at " + options.server + ": " +
             cli::GrpcCodeName(status.error_code()) + (message.empty() ? "" : ": " + message);
    }
  }
  return "";
}

}  // namespace ckpt::sim
