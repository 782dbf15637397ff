#include "core/path_segment.h"

namespace ckpt {

namespace {

bool IsSafe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

void AppendEscaped(unsigned char c, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '%';
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

}  // namespace

std::string EncodePathSegment(std::string_view id) {
  std::string out;
  out.reserve(id.size());
  const bool dots_only = id == "." || id == "..";
  for (unsigned char c : id) {
    if (IsSafe(c) && !dots_only) {
      out += static_cast<char>(c);
    } else {
      AppendEscaped(c, out);
    }
  }
  return out;
}

bool PathIsUnder(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || path.substr(0, root.size()) != root) return false;
  std::string_view rest = path.substr(root.size());
  if (rest.empty()) return true;
  if (root.back() != '/') {
    if (rest.front() != '/') return false;  // "/data/spx" is not under "/data/sp"
  }
  if (rest.find('\\') != std::string_view::npos) return false;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    std::string segment(rest.substr(0, slash));
    // "%2e" is a dot to whoever decodes the URI (an object store's client, a file system URI).
    for (size_t at = 0; (at = segment.find("%2", at)) != std::string::npos;) {
      const bool dot =
          at + 2 < segment.size() && (segment[at + 2] == 'e' || segment[at + 2] == 'E');
      if (dot) {
        segment.replace(at, 3, ".");
      } else {
        ++at;
      }
    }
    if (segment == "." || segment == "..") return false;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return true;
}

}  // namespace ckpt
