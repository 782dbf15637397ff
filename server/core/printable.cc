#include "core/printable.h"

#include <cstdio>
#include <utility>

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

// Unicode's format characters (general category Cf): invisible, they reorder or hide what is
// printed (U+202E turns "gnp.exe" into "exe.png"), so an id holding one reads as another.
constexpr std::pair<char32_t, char32_t> kFormatCharacters[] = {
    {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x180E, 0x180E},
    {0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
    {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
    {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
    {0xE0020, 0xE007F},
};

}  // namespace

bool IsFormatCharacter(char32_t c) {
  for (const auto& [first, last] : kFormatCharacters) {
    if (c >= first && c <= last) return true;
  }
  return false;
}

namespace {

// The code point of the valid UTF-8 sequence of `length` bytes at the start of `s`.
char32_t Decode(std::string_view s, size_t length) {
  const auto lead = static_cast<unsigned char>(s[0]);
  char32_t c = length == 1   ? lead
               : length == 2 ? (lead & 0x1F)
               : length == 3 ? (lead & 0x0F)
                             : (lead & 0x07);
  for (size_t k = 1; k < length; ++k) c = (c << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
  return c;
}

}  // namespace

bool HasFormatCharacter(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t length = Utf8SequenceLength(s.substr(i));
    if (length == 0) return false;
    if (IsFormatCharacter(Decode(s.substr(i), length))) return true;
    i += length;
  }
  return false;
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
  if (length >= 2) {
    if (const char32_t code = Decode(text, length); IsFormatCharacter(code)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(code));
      out += buf;
      return length;
    }
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
