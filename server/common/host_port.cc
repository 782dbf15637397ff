#include "common/host_port.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace ckpt {

Result<HostPort> ParseHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("expected HOST:PORT, got '" + address + "'");
  }
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (host.empty()) return Status::InvalidArgument("the host is empty in '" + address + "'");
  if (host.find(':') != std::string::npos && !bracketed) {
    return Status::InvalidArgument("an IPv6 host needs brackets, as in [::1]:7070; got '" +
                                   address + "'");
  }
  if (std::any_of(host.begin(), host.end(), [](unsigned char c) { return std::isspace(c); })) {
    return Status::InvalidArgument("the host contains whitespace in '" + address + "'");
  }
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!digits || std::stoi(port) > 65535) {
    return Status::InvalidArgument("the port must be a number from 0 to 65535; got '" + address +
                                   "'");
  }
  return HostPort{std::move(host), std::move(port)};
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

}  // namespace ckpt
