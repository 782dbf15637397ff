// Standard gRPC probes and tools: grpc.health.v1 (SERVING only while ready, NOT_SERVING from the
// start of shutdown) and server reflection (lists the daemon's services).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "daemon_fixture.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.pb.h"

namespace ckpt::testing {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class GrpcHealthTest : public DaemonTest {
 protected:
  // Check(service): the status, or UNKNOWN with `rpc_status` set when the call failed.
  HealthCheckResponse::ServingStatus Check(const std::string& service,
                                           grpc::Status* rpc_status = nullptr) {
    auto stub = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status status = stub->Check(&context, request, &response);
    if (rpc_status) *rpc_status = status;
    return status.ok() ? response.status() : HealthCheckResponse::UNKNOWN;
  }
};

TEST_F(GrpcHealthTest, ServingOnceStartedForTheServerAndEachService) {
  StartDaemon();
  EXPECT_EQ(Check(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check("ckpt.v1.WorkerService"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check("ckpt.v1.AdminService"), HealthCheckResponse::SERVING);
  grpc::Status status;
  Check("no.such.Service", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcHealthTest, WatchTurnsNotServingWhenShutdownBegins) {
  // Long enough that the server is still up, refusing nothing, while the grace period runs.
  config_.shutdown_grace_ms = 1000;
  config_.pipelines = {TestSpec("p", {"0"}, 50, 60000)};
  StartDaemon();
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  HealthCheckRequest request;
  auto watch = stub->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  std::thread stopper([this] { daemon_->Shutdown(); });
  // The next update (or the stream's end, if the server went first) must not say SERVING.
  bool saw_not_serving = false;
  while (watch->Read(&response)) {
    if (response.status() == HealthCheckResponse::NOT_SERVING) {
      saw_not_serving = true;
      break;
    }
    ADD_FAILURE() << "unexpected status " << response.status();
  }
  stopper.join();
  EXPECT_TRUE(saw_not_serving) << "the watch ended without NOT_SERVING";
  context.TryCancel();
  watch->Finish();
}

// Lists services through reflection (a bidi stream, driven with the generic async stub).
std::vector<std::string> ListServicesByReflection(std::shared_ptr<grpc::Channel> channel) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto await = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    const auto status =
        cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(10));
    return status == grpc::CompletionQueue::GOT_EVENT && reinterpret_cast<intptr_t>(tag) == want &&
           ok;
  };
  auto call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  std::vector<std::string> names;
  call->StartCall(reinterpret_cast<void*>(1));
  if (!await(1)) return names;
  grpc::reflection::v1::ServerReflectionRequest request;
  request.set_list_services("");
  grpc::ByteBuffer out;
  bool own = false;
  grpc::SerializationTraits<grpc::reflection::v1::ServerReflectionRequest>::Serialize(request, &out,
                                                                                      &own);
  call->Write(out, reinterpret_cast<void*>(2));
  if (!await(2)) return names;
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(3));
  if (!await(3)) return names;
  grpc::reflection::v1::ServerReflectionResponse response;
  if (!grpc::SerializationTraits<grpc::reflection::v1::ServerReflectionResponse>::Deserialize(
           &in, &response)
           .ok()) {
    return names;
  }
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  call->WritesDone(reinterpret_cast<void*>(4));
  await(4);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  await(5);
  return names;
}

TEST_F(GrpcHealthTest, ReflectionListsTheServices) {
  StartDaemon();
  std::vector<std::string> names = ListServicesByReflection(channel_);
  auto has = [&names](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has("ckpt.v1.WorkerService")) << ::testing::PrintToString(names);
  EXPECT_TRUE(has("ckpt.v1.AdminService"));
  EXPECT_TRUE(has("grpc.health.v1.Health"));
}

}  // namespace
}  // namespace ckpt::testing
