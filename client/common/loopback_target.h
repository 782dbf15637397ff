#pragma once
// Whether a gRPC target stays on this machine: the daemon accepts a bearer token over a plaintext
// channel only from loopback (docs/SECURITY.md, "Identities"), so a client refuses to send one in
// clear text anywhere else, where the daemon would refuse it anyway after it crossed the network.

#include <string_view>

namespace ckpt::cli {

// True for "localhost:7070", "127.0.0.1:7070" (any of 127/8), "[::1]:7070", the same with gRPC's
// "dns:", "dns:///", "ipv4:" or "ipv6:" schemes (every address of a list), and Unix domain sockets
// ("unix:", "unix-abstract:"). False for anything else, including names it cannot tell apart from
// a remote host.
bool IsLoopbackTarget(std::string_view target);

}  // namespace ckpt::cli
