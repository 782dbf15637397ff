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

// What gRPC 1.51 (Debian, OpenSSL 3) said when each handshake failed.
constexpr char kUntrusted[] =
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Ssl handshake "
    "failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed";
constexpr char kWrongName[] =
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Peer name "
    "ckptd.example is not in peer certificate";
constexpr char kNotTls[] =
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Ssl handshake "
    "failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number";
constexpr char kClosed[] =
    "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7070: Socket "
    "closed";

CallInfo Tls(bool client_certificate) {
  CallInfo call = Call(false);
  call.tls = true;
  call.client_certificate = client_certificate;
  return call;
}

TEST(CtlRpcErrors, AnUntrustedServerCertificateAsksForTheCa) {
  const grpc::Status status(grpc::StatusCode::UNAVAILABLE, kUntrusted);
  const std::string expected =
      "cannot reach ckptd at 127.0.0.1:7070: server certificate not trusted: pass --ca-file with "
      "the CA that signed it";
  EXPECT_EQ(DescribeRpcFailure(status, Tls(false)), expected);
  // BoringSSL's spelling (gRPC's own builds).
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                            "Ssl handshake failed: SSL_ERROR_SSL: "
                                            "error:1000007d:SSL routines:OPENSSL_internal:"
                                            "CERTIFICATE_VERIFY_FAILED"),
                               Tls(false)),
            expected);
}

TEST(CtlRpcErrors, ACertificateForAnotherNameAsksForTheServerName) {
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, kWrongName), Tls(false)),
            "cannot reach ckptd at 127.0.0.1:7070: the server certificate is not for "
            "ckptd.example: pass --tls-server-name with a name it holds");
}

TEST(CtlRpcErrors, TlsToAPlaintextPort) {
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, kNotTls), Tls(false)),
            "cannot reach ckptd at 127.0.0.1:7070: the daemon does not speak TLS on this port: "
            "drop --ca-file, --cert-file and --key-file, or check --server");
}

TEST(CtlRpcErrors, AClosedConnectionHintsAtWhatTheDaemonMayRequire) {
  const grpc::Status closed(grpc::StatusCode::UNAVAILABLE, kClosed);
  EXPECT_EQ(DescribeRpcFailure(closed, Call(false)),
            "cannot reach ckptd at 127.0.0.1:7070: the connection was closed (the daemon may "
            "require TLS: pass --ca-file)");
  EXPECT_EQ(
      DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"), Call(false)),
      "cannot reach ckptd at 127.0.0.1:7070: the connection was closed (the daemon may "
      "require TLS: pass --ca-file)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                            "failed to connect to all addresses; last error: "
                                            "UNKNOWN: ipv4:127.0.0.1:7070: handshake failed"),
                               Call(false)),
            "cannot reach ckptd at 127.0.0.1:7070: handshake failed (the daemon may require TLS: "
            "pass --ca-file)");
  EXPECT_EQ(DescribeRpcFailure(closed, Tls(false)),
            "cannot reach ckptd at 127.0.0.1:7070: the connection was closed (the daemon may "
            "require a client certificate: pass --cert-file and --key-file)");
  EXPECT_EQ(DescribeRpcFailure(closed, Tls(true)),
            "cannot reach ckptd at 127.0.0.1:7070: the connection was closed (the daemon may not "
            "accept the certificate of --cert-file: is it signed by a CA the daemon trusts?)");
}

TEST(CtlRpcErrors, UnauthenticatedSaysWhichCredentialWasRefused) {
  // The daemon's own messages (server/auth/access_policy.cc).
  CallInfo call = Call(true);
  call.token = true;
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                            "token refused: it belongs to no principal"),
                               call),
            "token refused (UNAUTHENTICATED: it belongs to no principal); check --token-file");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, ""), call),
            "token refused (UNAUTHENTICATED); check --token-file");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                            "a bearer token is accepted over plaintext only from "
                                            "loopback; connect with TLS"),
                               call),
            "token refused (UNAUTHENTICATED: a bearer token is accepted over plaintext only from "
            "loopback; connect with TLS); pass --ca-file to connect with TLS");

  call.token = false;
  call.tls = call.client_certificate = true;
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                            "client certificate identity 'worker-1' belongs to "
                                            "no principal"),
                               call),
            "client certificate refused (UNAUTHENTICATED: client certificate identity 'worker-1' "
            "belongs to no principal); check --cert-file");

  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                            "no credentials: connect with TLS and a client "
                                            "certificate, or send a bearer token"),
                               Call(true)),
            "no credentials: pass --token-file or --cert-file/--key-file (UNAUTHENTICATED: connect "
            "with TLS and a client certificate, or send a bearer token)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, ""), Call(true)),
            "no credentials: pass --token-file or --cert-file/--key-file (UNAUTHENTICATED)");
}

TEST(CtlRpcErrors, PermissionDeniedBlamesTheRole) {
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                            "principal 'ops' (viewer) may not call "
                                            "CreatePipeline: it needs the admin role"),
                               Call(true)),
            "principal 'ops' (viewer) may not call CreatePipeline: it needs the admin role "
            "(PERMISSION_DENIED; your principal's role does not allow this)");
  EXPECT_EQ(DescribeRpcFailure(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, ""), Call(true)),
            "permission denied (PERMISSION_DENIED; your principal's role does not allow this)");
}

}  // namespace
}  // namespace ckpt::ctl
