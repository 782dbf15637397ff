// WorkerRuntime: the public face of RuntimeCore.

#include "ckpt/worker.h"
#include "sdk/pipeline_session.h"
#include "sdk/runtime_core.h"

namespace ckpt::sdk {

WorkerRuntime::WorkerRuntime(WorkerRuntimeOptions options)
    : core_(std::make_shared<internal::RuntimeCore>(std::move(options))) {}

namespace {

WorkerRuntimeOptions PlaintextOptions(std::string server_address, int threads, int channels) {
  WorkerRuntimeOptions options;
  options.server_address = std::move(server_address);
  options.threads = threads;
  options.channels = channels;
  return options;
}

}  // namespace

WorkerRuntime::WorkerRuntime(std::string server_address, int threads, int channels)
    : WorkerRuntime(PlaintextOptions(std::move(server_address), threads, channels)) {}

WorkerRuntime::~WorkerRuntime() { core_->Shutdown(); }

std::shared_ptr<PipelineWorker> WorkerRuntime::AddPipeline(PipelineWorkerOptions options,
                                                           PipelineHandlers handlers) {
  auto session =
      std::make_shared<internal::PipelineSession>(core_, std::move(options), std::move(handlers));
  core_->Register(session);
  // The user's handle has its own count: when the last handle goes, the worker stops, and the
  // session lives on internally until its stream has ended.
  return std::shared_ptr<PipelineWorker>(session.get(), [session](PipelineWorker*) mutable {
    session->Stop();
    session.reset();
  });
}

const std::string& WorkerRuntime::server_address() const { return core_->server_address(); }

}  // namespace ckpt::sdk
