// Every method of both services asks the access policy: the services' descriptors are walked, so
// a method added later without a check fails here. Bearer tokens over loopback plaintext (which
// the daemon accepts there) stand for the principals; the TLS side is tests/e2e/test_security.py.
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include "auth/token_digest.h"
#include "ckpt/v1/admin.grpc.pb.h"
#include "ckpt/v1/worker.grpc.pb.h"
#include "daemon_fixture.h"
#include "rpc/admin_methods.h"
#include "rpc/caller_credentials.h"
#include "rpc/stream_slots.h"

namespace ckpt::testing {
namespace {

class AccessPolicyTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    config_.auth.enabled = true;
    config_.auth.principals = {
        {"ops", "", Sha256Hex("ops-token"), Role::kAdmin, {}},
        {"viewer", "", Sha256Hex("viewer-token"), Role::kViewer, {}},
        {"etl", "", Sha256Hex("etl-token"), Role::kWorker, {"etl"}},
    };
    config_.pipelines = {TestSpec("p", {"a"}, 3600000)};
    config_.pipelines[0].key.job_id = "etl";
    StartDaemon();
  }

  // Calls `method` of `service` with an empty request (a unary call, or the first message of a
  // stream) as the holder of `token` ("" = none); returns the status it ends with.
  grpc::Status CallEmpty(const google::protobuf::MethodDescriptor& method,
                         const std::string& token) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    const std::string path = "/" + method.service()->full_name() + "/" + method.name();
    grpc::ByteBuffer request;  // empty: a valid encoding of every request message
    grpc::Slice empty("");
    request = grpc::ByteBuffer(&empty, 1);
    // On a completion queue this thread drains: no callback runs on a gRPC thread, so nothing
    // of the test is handed across threads out of ThreadSanitizer's sight.
    void* tag = nullptr;
    bool ok = false;
    if (!method.client_streaming() && !method.server_streaming()) {
      auto call = stub.PrepareUnaryCall(&ctx, path, request, &cq_);
      call->StartCall();
      grpc::ByteBuffer response;
      grpc::Status status;
      call->Finish(&response, &status, reinterpret_cast<void*>(4));
      while (cq_.Next(&tag, &ok) && tag != reinterpret_cast<void*>(4)) {
      }
      return status;
    }
    auto call = stub.PrepareCall(&ctx, path, &cq_);
    call->StartCall(reinterpret_cast<void*>(1));
    cq_.Next(&tag, &ok);
    if (method.client_streaming()) {
      call->WritesDone(reinterpret_cast<void*>(2));  // a worker stream with no hello
    } else {
      call->WriteLast(request, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    }
    cq_.Next(&tag, &ok);
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(3));
    while (cq_.Next(&tag, &ok) && tag != reinterpret_cast<void*>(3)) {
    }
    return status;
  }

  void TearDown() override {
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
    DaemonTest::TearDown();
  }

  grpc::CompletionQueue cq_;
};

TEST_F(AccessPolicyTest, EveryAdminMethodAsksThePolicy) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("ckpt.v1.AdminService");
  ASSERT_NE(service, nullptr);
  ASSERT_GT(service->method_count(), 10);
  for (int i = 0; i < service->method_count(); ++i) {
    const auto& method = *service->method(i);
    SCOPED_TRACE(method.name());
    EXPECT_EQ(CallEmpty(method, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CallEmpty(method, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    const grpc::Status as_worker = CallEmpty(method, "etl-token");
    EXPECT_EQ(as_worker.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(as_worker.error_message().find(method.name()), std::string::npos)
        << as_worker.error_message();
    // A viewer is refused exactly the mutations; its reads get past the policy (and may fail
    // for the empty request, but never for the role).
    const grpc::StatusCode as_viewer = CallEmpty(method, "viewer-token").error_code();
    if (AdminMethodAccess(method.name()) == Access::kMutate) {
      EXPECT_EQ(as_viewer, grpc::StatusCode::PERMISSION_DENIED);
    } else {
      EXPECT_NE(as_viewer, grpc::StatusCode::PERMISSION_DENIED);
      EXPECT_NE(as_viewer, grpc::StatusCode::UNAUTHENTICATED);
    }
    const grpc::StatusCode as_admin = CallEmpty(method, "ops-token").error_code();
    EXPECT_NE(as_admin, grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(as_admin, grpc::StatusCode::UNAUTHENTICATED);
  }
  const auto page = daemon_->MetricsText();
  EXPECT_NE(page.find("ckptd_auth_denied_total{reason=\"unknown_token\"}"), std::string::npos);
}

TEST_F(AccessPolicyTest, OnlyWorkerPrincipalsOpenWorkerStreams) {
  const auto& connect = *google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
      "ckpt.v1.WorkerService.Connect");
  EXPECT_EQ(CallEmpty(connect, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallEmpty(connect, "ops-token").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CallEmpty(connect, "viewer-token").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // The worker gets past Connect; its stream without hello ends for want of one.
  EXPECT_EQ(CallEmpty(connect, "etl-token").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(AdminMethods, ReadsAreNamedAndEverythingElseIsAMutation) {
  EXPECT_EQ(AdminMethodAccess("ListPipelines"), Access::kRead);
  EXPECT_EQ(AdminMethodAccess("GetDaemonStatus"), Access::kRead);
  EXPECT_EQ(AdminMethodAccess("DeletePipeline"), Access::kMutate);
  EXPECT_EQ(AdminMethodAccess("SomethingNew"), Access::kMutate);
  EXPECT_EQ(AdminMethodName("/ckpt.v1.AdminService/PausePipeline"), "PausePipeline");
  EXPECT_EQ(AdminMethodName("/ckpt.v1.WorkerService/Connect"), "");
}

TEST(PeerAddress, TakesTheAddressOutOfGrpcsPeerString) {
  EXPECT_EQ(PeerAddress("ipv4:10.0.0.7:5123"), "10.0.0.7");
  EXPECT_EQ(PeerAddress("ipv6:[::1]:5123"), "::1");
  EXPECT_EQ(PeerAddress("ipv6:%5B::1%5D:5123"), "::1");
  EXPECT_EQ(PeerAddress("unix:/run/x.sock"), "unix:/run/x.sock");
}

TEST(StreamSlots, BoundsStreamsInAllAndPerPeer) {
  StreamSlots slots(3, 2);
  EXPECT_EQ(slots.TryTake("a"), StreamSlots::Outcome::kTaken);
  EXPECT_EQ(slots.TryTake("a"), StreamSlots::Outcome::kTaken);
  EXPECT_EQ(slots.TryTake("a"), StreamSlots::Outcome::kPeerFull);
  EXPECT_EQ(slots.TryTake("b"), StreamSlots::Outcome::kTaken);
  EXPECT_EQ(slots.TryTake("c"), StreamSlots::Outcome::kAllTaken);
  slots.Remove("a");
  EXPECT_EQ(slots.total(), 2);
  EXPECT_EQ(slots.TryTake("c"), StreamSlots::Outcome::kTaken);
  slots.Remove("b");
  slots.Remove("c");
  slots.Remove("a");
  slots.Remove("nobody");  // a stream that took no slot gives none back
  EXPECT_EQ(slots.total(), 0);
  EXPECT_EQ(slots.Count("a"), 0);
}

}  // namespace
}  // namespace ckpt::testing
