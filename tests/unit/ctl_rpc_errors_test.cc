#include <gtest/gtest.h>

#include "ctl/rpc_errors.h"

namespace ckpt::ctl {
namespace {

CallInfo Call(bool reached) {
  CallInfo call;
  call.address = "127.0.0.1:7070";
  call.reached_daemon = reached;
  call.deadline_ms = 10'000;
  return call;
}

TEST(CtlRpcErrors, TheDaemonsMessageAndTheCode) {
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::NOT_FOUND, "no pipeline job/p"),
                               Call(true)),
            "no pipeline job/p (NOT_FOUND)");
  EXPECT_EQ(DescribeRpcFailure(
                grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "a checkpoint is\npending"),
                Call(true)),
            "a checkpoint is pending (FAILED_PRECONDITION)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::INTERNAL, ""), Call(true)),
            "the request failed (INTERNAL)");
}

TEST(CtlRpcErrors, ConnectionRefusedNamesTheAddressWithoutGrpcNoise) {
  const grpc::Status refused(
      grpc::StatusCode::UNAVAILABLE,
      "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Failed to "
      "connect to remote host: Connection refused");
  EXPECT_TRUE(IsConnectFailure(refused, Call(false)));
  EXPECT_EQ(DescribeRpcFailure(refused, Call(false)),
            "cannot reach ckptd at 127.0.0.1:7070: connection refused (is it running? set "
            "--server or CKPTCTL_SERVER)");
}

TEST(CtlRpcErrors, OtherTransportFailures) {
  const grpc::Status dns(grpc::StatusCode::UNAVAILABLE,
                         "DNS resolution failed for nosuch:7070: C-ares status is not "
                         "ARES_SUCCESS qtype=A name=nosuch is_balancer=0: Domain name not found");
  EXPECT_EQ(DescribeRpcFailure(dns, Call(false)),
            "cannot reach ckptd at 127.0.0.1:7070: cannot resolve the host name (check --server "
            "or CKPTCTL_SERVER)");
  EXPECT_EQ(
      DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"), Call(false)),
      "cannot reach ckptd at 127.0.0.1:7070: the connection was closed (is it running? "
      "set --server or CKPTCTL_SERVER)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, "weird"), Call(false)),
            "cannot reach ckptd at 127.0.0.1:7070: UNAVAILABLE (is it running? set --server or "
            "CKPTCTL_SERVER)");
  EXPECT_EQ(
      DescribeRpcFailure(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
                         Call(false)),
      "cannot reach ckptd at 127.0.0.1:7070: no connection within 10s (is it running? set "
      "--server or CKPTCTL_SERVER)");
}

TEST(CtlRpcErrors, AConnectedDaemonSpeaksForItself) {
  const grpc::Status shutting_down(grpc::StatusCode::UNAVAILABLE, "the daemon is shutting down");
  EXPECT_FALSE(IsConnectFailure(shutting_down, Call(true)));
  EXPECT_EQ(DescribeRpcFailure(shutting_down, Call(true)),
            "the daemon is shutting down (UNAVAILABLE)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "x"), Call(true)),
            "ckptd at 127.0.0.1:7070 gave no answer within 10s (DEADLINE_EXCEEDED)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""), Call(true)),
            "ckptd at 127.0.0.1:7070 does not implement this request (UNIMPLEMENTED); is it older "
            "than ckptctl?");
}

}  // namespace
}  // namespace ckpt::ctl
