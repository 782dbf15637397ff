#pragma once
// JsonLogFormatter writes each log message as one JSON object on one line, for log shippers:
//   {"time":"2024-05-01T12:00:00.123Z","level":"info","message":"...","job":"j","pipeline":"p"}
// `job` and `pipeline` appear when the line is about a pipeline (log_context.h); the message then
// loses its "[job/pipeline] " prefix, which the fields replace. Strings are escaped per RFC 8259;
// bytes that are not valid UTF-8 become U+FFFD, so every line parses.
// Threading: spdlog calls format() under its sink's lock; the formatter keeps no state.

#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace ckpt {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// A log message longer than this is cut (text and JSON alike): one line must not carry megabytes
// because a client sent them.
inline constexpr size_t kMaxLogMessageBytes = 16 * 1024;

// `text` as the inside of a JSON string (no quotes), appended to `out`.
void AppendJsonEscaped(std::string_view text, std::string& out);

}  // namespace ckpt
