#include "common/loopback_target.h"

#include <arpa/inet.h>

#include <string>

namespace ckpt::cli {
namespace {

// "host:port", "[v6]:port", "host" or "v6" without a port.
std::string_view HostOf(std::string_view address) {
  if (address.starts_with("[")) {
    const size_t end = address.find(']');
    return end == std::string_view::npos ? std::string_view() : address.substr(1, end - 1);
  }
  const size_t first_colon = address.find(':');
  // More than one colon and no brackets: a bare IPv6 address.
  if (first_colon != std::string_view::npos &&
      address.find(':', first_colon + 1) != std::string_view::npos) {
    return address;
  }
  return address.substr(0, first_colon);
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

// Every address of a comma-separated list (gRPC's ipv4: and ipv6: schemes).
bool AllLoopback(std::string_view list) {
  if (list.empty()) return false;
  for (;;) {
    const size_t comma = list.find(',');
    if (!IsLoopbackHost(HostOf(list.substr(0, comma)))) return false;
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

bool IsLoopbackTarget(std::string_view target) {
  if (target.starts_with("unix:") || target.starts_with("unix-abstract:")) return true;
  if (target.starts_with("ipv4:")) return AllLoopback(target.substr(5));
  if (target.starts_with("ipv6:")) return AllLoopback(target.substr(5));
  if (target.starts_with("dns:")) {
    target.remove_prefix(4);
    // "dns://authority/host:port": the authority is the DNS server, not the daemon.
    if (target.starts_with("//")) {
      const size_t slash = target.find('/', 2);
      if (slash == std::string_view::npos) return false;
      target.remove_prefix(slash + 1);
    }
  } else if (target.find("://") != std::string_view::npos) {
    return false;  // a scheme this check does not know
  }
  return IsLoopbackHost(HostOf(target));
}

}  // namespace ckpt::cli
