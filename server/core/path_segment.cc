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

}  // namespace ckpt
