#include "common/server_list.h"

#include <algorithm>
#include <cctype>

namespace ckpt::cli {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// A target gRPC resolves itself ("unix:/run/ckptd.sock", "dns:///ckptd:7070", "xds://..."), not
// HOST:PORT. Only the schemes the loopback check knows, and "://": "ckptd:http" is a bad port.
bool HasScheme(std::string_view entry) {
  for (std::string_view scheme : {"unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:"}) {
    if (entry.starts_with(scheme)) return true;
  }
  return entry.find("://") != std::string_view::npos;
}

// "" when `entry` is HOST:PORT, else why not.
std::string CheckHostPort(std::string_view entry) {
  std::string_view port;
  if (entry.starts_with("[")) {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos) return "an IPv6 address without its closing ']'";
    if (close == 1) return "no host";
    if (close + 1 >= entry.size() || entry[close + 1] != ':') return "no port (HOST:PORT)";
    port = entry.substr(close + 2);
  } else {
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) return "no port (HOST:PORT)";
    if (entry.find(':') != colon) return "an IPv6 address needs brackets: [ADDRESS]:PORT";
    if (colon == 0) return "no host";
    port = entry.substr(colon + 1);
  }
  if (port.empty()) return "no port (HOST:PORT)";
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return "the port is not a number of 1..65535";
  }
  const int number = std::stoi(std::string(port));
  if (number < 1 || number > 65535) return "the port is not a number of 1..65535";
  return "";
}

}  // namespace

std::optional<std::vector<std::string>> ParseServerList(std::string_view text,
                                                        std::string_view option,
                                                        std::string* error) {
  const std::string_view trimmed = Trim(text);
  const std::string name(option);
  if (trimmed.empty()) {
    *error = name + ": no address given";
    return std::nullopt;
  }
  if (trimmed.find(',') == std::string_view::npos || trimmed.starts_with("ipv4:") ||
      trimmed.starts_with("ipv6:")) {
    return std::vector<std::string>{std::string(trimmed)};
  }
  std::vector<std::string> servers;
  size_t index = 0;
  for (std::string_view rest = text;; ++index) {
    const size_t comma = rest.find(',');
    const std::string_view entry = Trim(rest.substr(0, comma));
    const std::string where =
        name + ": entry " + std::to_string(index + 1) + " of \"" + std::string(trimmed) + "\"";
    if (entry.empty()) {
      *error = where + " is empty";
      return std::nullopt;
    }
    if (!HasScheme(entry)) {
      if (const std::string why = CheckHostPort(entry); !why.empty()) {
        *error = where + ", \"" + std::string(entry) + "\": " + why;
        return std::nullopt;
      }
    }
    if (std::find(servers.begin(), servers.end(), entry) != servers.end()) {
      *error = where + ", \"" + std::string(entry) + "\", is listed twice";
      return std::nullopt;
    }
    servers.emplace_back(entry);
    if (comma == std::string_view::npos) return servers;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace ckpt::cli
