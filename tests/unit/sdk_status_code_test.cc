// The SDK's status codes against gRPC's: every code keeps gRPC's number and name across the
// boundary (sdk/grpc_status_code.h), and a number gRPC does not define reads as UNKNOWN.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/grpc_code_name.h"
#include "sdk/grpc_status_code.h"

namespace ckpt::sdk::internal {
namespace {

struct CodePair {
  grpc::StatusCode grpc;
  StatusCode sdk;
  const char* name;
};

// Every code gRPC defines, written out by hand: a table derived from either enum would agree with
// it by construction.
constexpr CodePair kEveryCode[] = {
    {grpc::StatusCode::OK, StatusCode::kOk, "OK"},
    {grpc::StatusCode::CANCELLED, StatusCode::kCancelled, "CANCELLED"},
    {grpc::StatusCode::UNKNOWN, StatusCode::kUnknown, "UNKNOWN"},
    {grpc::StatusCode::INVALID_ARGUMENT, StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {grpc::StatusCode::DEADLINE_EXCEEDED, StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
    {grpc::StatusCode::NOT_FOUND, StatusCode::kNotFound, "NOT_FOUND"},
    {grpc::StatusCode::ALREADY_EXISTS, StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
    {grpc::StatusCode::PERMISSION_DENIED, StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
    {grpc::StatusCode::RESOURCE_EXHAUSTED, StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
    {grpc::StatusCode::FAILED_PRECONDITION, StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {grpc::StatusCode::ABORTED, StatusCode::kAborted, "ABORTED"},
    {grpc::StatusCode::OUT_OF_RANGE, StatusCode::kOutOfRange, "OUT_OF_RANGE"},
    {grpc::StatusCode::UNIMPLEMENTED, StatusCode::kUnimplemented, "UNIMPLEMENTED"},
    {grpc::StatusCode::INTERNAL, StatusCode::kInternal, "INTERNAL"},
    {grpc::StatusCode::UNAVAILABLE, StatusCode::kUnavailable, "UNAVAILABLE"},
    {grpc::StatusCode::DATA_LOSS, StatusCode::kDataLoss, "DATA_LOSS"},
    {grpc::StatusCode::UNAUTHENTICATED, StatusCode::kUnauthenticated, "UNAUTHENTICATED"},
};

TEST(SdkStatusCode, TheTableHoldsEveryGrpcCodeOnce) {
  std::set<int> numbers;
  for (const CodePair& pair : kEveryCode) numbers.insert(static_cast<int>(pair.grpc));
  ASSERT_EQ(numbers.size(), std::size(kEveryCode));
  EXPECT_EQ(*numbers.begin(), 0);
  EXPECT_EQ(*numbers.rbegin(), 16);  // gRPC's last code, UNAUTHENTICATED
}

TEST(SdkStatusCode, EveryGrpcCodeKeepsItsNumberAndName) {
  for (const CodePair& pair : kEveryCode) {
    SCOPED_TRACE(pair.name);
    EXPECT_EQ(FromGrpc(pair.grpc), pair.sdk);
    EXPECT_EQ(static_cast<int>(pair.sdk), static_cast<int>(pair.grpc));
    EXPECT_STREQ(ToString(pair.sdk), pair.name);
    // The SDK names codes as ckptctl and ckpt-worker-sim's own gRPC calls do.
    EXPECT_STREQ(ToString(pair.sdk), cli::GrpcCodeName(pair.grpc));
  }
}

TEST(SdkStatusCode, NumbersGrpcDoesNotDefineReadAsUnknown) {
  for (int number : {-1, 17, 1000}) {
    SCOPED_TRACE(number);
    EXPECT_EQ(FromGrpc(static_cast<grpc::StatusCode>(number)), StatusCode::kUnknown);
    EXPECT_STREQ(ToString(static_cast<StatusCode>(number)), "UNKNOWN");
  }
}

}  // namespace
}  // namespace ckpt::sdk::internal
