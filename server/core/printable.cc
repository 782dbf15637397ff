#include "core/printable.h"

#include <cstdio>

namespace ckpt {

size_t Utf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  if (lead == 0xE0 && byte(1) < 0xA0) return 0;
  if (lead == 0xED && byte(1) > 0x9F) return 0;
  if (lead == 0xF0 && byte(1) < 0x90) return 0;
  if (lead == 0xF4 && byte(1) > 0x8F) return 0;
  return length;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t length = Utf8SequenceLength(s.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

namespace {

void AppendHex(unsigned char c, std::string& out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

// Appends the escaped form of the character at the start of `text`; returns the bytes consumed.
size_t AppendOne(std::string_view text, std::string& out, bool escape_backslash) {
  const unsigned char c = static_cast<unsigned char>(text[0]);
  if (c == '\\' && escape_backslash) {
    out += "\\\\";
    return 1;
  }
  if (c < 0x20 || c == 0x7F) {
    AppendHex(c, out);
    return 1;
  }
  const size_t length = Utf8SequenceLength(text);
  if (length == 0) {
    AppendHex(c, out);
    return 1;
  }
  // C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) can act as terminal escapes too.
  if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[1]) <= 0x9F) {
    AppendHex(c, out);
    AppendHex(static_cast<unsigned char>(text[1]), out);
    return 2;
  }
  out.append(text.data(), length);
  return length;
}

std::string Escape(std::string_view text, size_t max_bytes, bool escape_backslash) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && i < max_bytes) i += AppendOne(text.substr(i), out, escape_backslash);
  if (i < text.size()) out += "...(+" + std::to_string(text.size() - i) + " bytes)";
  return out;
}

}  // namespace

std::string Printable(std::string_view text, size_t max_bytes) {
  return Escape(text, max_bytes, /*escape_backslash=*/true);
}

std::string PrintableLine(std::string_view text, size_t max_bytes) {
  return Escape(text, max_bytes, /*escape_backslash=*/false);
}

}  // namespace ckpt
