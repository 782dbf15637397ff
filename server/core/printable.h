#pragma once
// Client strings (ids, reasons, anything a worker or an operator sent) made safe to print in a
// log line: control characters (C0, DEL, C1) and bytes that are not valid UTF-8 become \xNN,
// format characters (U+202E, ...) \u{NNNN}, a backslash becomes \\, and the text is cut to a
// bounded length, saying how much was left out.
// A client can then neither forge a log line (a "\n2026-... critical ...") nor colour a terminal
// (ANSI escapes), nor write megabytes into the log with one id.
// Threading: pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace ckpt {

// Ids and short strings: enough for any valid id (256 bytes) and the start of anything else.
inline constexpr size_t kMaxPrintedBytes = 300;

// The length of the valid UTF-8 sequence at the start of `s`, or 0 if it is not one (overlong
// forms, surrogates and code points past U+10FFFF are not).
size_t Utf8SequenceLength(std::string_view s);

// Whether `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

// Whether `c` is one of Unicode's format characters (general category Cf: U+200B, U+202E, ...):
// invisible, they reorder or hide what is printed after them (U+202E shows "gnp<U+202E>exe" as
// "gnpexe" reversed), so an id or a log line holding one can read as another.
bool IsFormatCharacter(char32_t c);
// Whether valid UTF-8 `s` holds one.
bool HasFormatCharacter(std::string_view s);

// `text` escaped as above and cut after `max_bytes` of input ("...(+N bytes)").
std::string Printable(std::string_view text, size_t max_bytes = kMaxPrintedBytes);

// A whole log line's text, as the text log formats write it: control characters and invalid
// UTF-8 escaped, a backslash left as it is (the client strings in it went through Printable
// already, and escaping them twice would only obscure them), cut after `max_bytes`.
std::string PrintableLine(std::string_view text, size_t max_bytes);

}  // namespace ckpt
