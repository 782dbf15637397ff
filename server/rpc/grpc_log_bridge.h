#pragma once
// gRPC writes its own errors (a client speaking garbage HTTP/2, a port scanner, a TLS hello on
// the plain-text port) straight to stderr in its own format, and so does protobuf (a string field
// that is not valid UTF-8). Routed through spdlog instead, they carry ckptd's level, format (text
// or JSON lines), escaping and journald priority like every other line.
//
// A failed TLS handshake is visible only as gRPC's log line ("Handshake failed with fatal error
// ..."): no credentials are needed to cause one, so those lines are counted
// (TlsHandshakeFailures, ckptd_tls_handshake_failures_total) and logged at most once per 10 s
// per reason, with the count of the ones held back.
//
// Threading: call RouteGrpcLogsToSpdlog once from main before the gRPC server starts; the
// callback runs on whichever gRPC thread logs, and spdlog's loggers are thread-safe.

#include <cstdint>
#include <string>

namespace ckpt {

// gRPC's and protobuf's log lines.
void RouteGrpcLogsToSpdlog();

// Failed TLS handshakes gRPC has logged in this process. Any thread.
uint64_t TlsHandshakeFailures();

// What RouteGrpcLogsToSpdlog's callback does with one gRPC line (tests): `file` as gRPC names
// its source file. Returns whether it was logged (a throttled handshake failure is not).
bool LogGrpcLine(int severity, const char* file, int line, const std::string& message);

}  // namespace ckpt
