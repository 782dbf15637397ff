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

Status CheckLeaderAddress(const std::string& address) {
  constexpr size_t kMaxName = 253;
  constexpr size_t kMaxLabel = 63;
  if (address.size() > kMaxName + 8) {
    return Status::InvalidArgument("an address of " + std::to_string(address.size()) +
                                   " bytes is longer than any HOST:PORT");
  }
  auto ascii = std::all_of(address.begin(), address.end(),
                           [](unsigned char c) { return c > 0x20 && c < 0x7f; });
  if (!ascii) {
    return Status::InvalidArgument(
        "the address must be printable ASCII (a DNS name in ASCII, punycode for others, an IPv4 "
        "or a bracketed IPv6 address) with a port");
  }
  auto parsed = ParseHostPort(address);
  if (!parsed.ok()) return parsed.status();
  if (parsed->port == "0" || std::stoi(parsed->port) == 0) {
    return Status::InvalidArgument("port 0 in '" + address + "' is not one a client can dial");
  }
  const std::string& host = parsed->host;
  if (address.front() == '[') {
    in6_addr v6{};
    if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) {
      return Status::InvalidArgument("'" + host + "' is not an IPv6 address");
    }
    return Status::Ok();
  }
  if (host.size() > kMaxName) {
    return Status::InvalidArgument("the host name is longer than " + std::to_string(kMaxName) +
                                   " bytes");
  }
  size_t label = 0;
  for (size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      const bool root = i == host.size() && i > 1 && host[i - 1] == '.';  // "a.example."
      if ((label == 0 && !root) || label > kMaxLabel) {
        return Status::InvalidArgument("'" + host +
                                       "' is not a host name (empty label, or one longer "
                                       "than 63 bytes)");
      }
      label = 0;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(host[i]);
    if (!std::isalnum(c) && c != '-' && c != '_') {
      return Status::InvalidArgument("'" + host + "' is not a host name: '" +
                                     std::string(1, host[i]) +
                                     "' is not a letter, digit, '-', '_' or '.'");
    }
    ++label;
  }
  return Status::Ok();
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
