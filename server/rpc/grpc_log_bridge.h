#pragma once
// gRPC writes its own errors (a client speaking garbage HTTP/2, a port scanner, a TLS hello on
// the plain-text port) straight to stderr in its own format, and so does protobuf (a string field
// that is not valid UTF-8). Routed through spdlog instead, they carry ckptd's level, format (text
// or JSON lines), escaping and journald priority like every other line.
//
// Threading: call once from main before the gRPC server starts; the callback runs on whichever
// gRPC thread logs, and spdlog's loggers are thread-safe.

namespace ckpt {

// gRPC's and protobuf's log lines.
void RouteGrpcLogsToSpdlog();

}  // namespace ckpt
