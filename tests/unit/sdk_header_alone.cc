// Not a test to run: a source that must compile. It includes <ckpt/worker.h> and nothing else, in
// a target that links only ckpt_sdk (tests/CMakeLists.txt), so the header must stand alone on the
// SDK's public include directory. Boost's, gRPC's and protobuf's headers sit in /usr/include, where
// any target finds them, so a header that leaked them would still compile: the checks below look
// for what those headers define, and fail the build if the public header brought any of them in.
#include <ckpt/worker.h>

#if defined(BOOST_CONFIG_HPP) || defined(BOOST_VERSION) || defined(BOOST_ASIO_VERSION)
#error "ckpt/worker.h brings in Boost: the SDK's public header must name only its own types"
#endif
#if defined(GRPCPP_IMPL_CODEGEN_STATUS_CODE_ENUM_H) || defined(GRPC_SUPPORT_PORT_PLATFORM_H) || \
    defined(GRPC_IMPL_CODEGEN_PORT_PLATFORM_H)
#error "ckpt/worker.h brings in gRPC: the SDK's public header must name only its own types"
#endif
#if defined(GOOGLE_PROTOBUF_VERSION)
#error "ckpt/worker.h brings in protobuf: the SDK's public header must name only its own types"
#endif

namespace {

// What a program does with the SDK, spelled with nothing but the header's own types.
[[maybe_unused]] void ServeOnePipeline(ckpt::sdk::WorkerRuntime& runtime) {
  ckpt::sdk::PipelineHandlers handlers;
  handlers.on_disconnected = [](const ckpt::sdk::Disconnect& disconnect) {
    if (disconnect.code == ckpt::sdk::StatusCode::kNotFound) {
      (void)ckpt::sdk::ToString(disconnect.code);
    }
  };
  std::shared_ptr<ckpt::sdk::PipelineWorker> worker = runtime.AddPipeline({}, std::move(handlers));
  worker->Post([] {});
  worker->RunAfter(std::chrono::milliseconds(10), [] {});
}

}  // namespace
