#pragma once
// HOST:PORT, as the config's listen addresses and the listeners take it. The one parser of it, so
// that what the config accepts is exactly what a listener can bind.

#include <string>

#include "common/status.h"

namespace ckpt {

struct HostPort {
  std::string host;  // without the brackets of an IPv6 address
  std::string port;  // decimal digits, 0 to 65535
};

// "0.0.0.0:7070", "localhost:0", "[::1]:7070". An IPv6 host needs its brackets (gRPC wants them),
// the host no whitespace, the port a number from 0 to 65535. INVALID_ARGUMENT says what is wrong.
Result<HostPort> ParseHostPort(const std::string& address);

// An address clients are sent to (`advertise`, a leader's address read from etcd, the
// `ckpt-leader` trailer): HOST:PORT whose host is an ASCII DNS name (letters, digits, '-', '_',
// dots between labels of at most 63 bytes, 253 in all), an IPv4 address, or a bracketed IPv6
// address, and whose port is 1 to 65535. Anything else (a non-ASCII name, a newline, a space)
// could not go into a gRPC header, and no client could dial it. INVALID_ARGUMENT says why.
Status CheckLeaderAddress(const std::string& address);

// True for 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) and "localhost": hosts only this machine
// can reach.
bool IsLoopbackHost(const std::string& host);

}  // namespace ckpt
