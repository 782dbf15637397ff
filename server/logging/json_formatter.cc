#include "logging/json_formatter.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/printable.h"
#include "logging/log_context.h"

namespace ckpt {
namespace {

void AppendUtcTime(std::chrono::system_clock::time_point time, std::string& out) {
  const auto since_epoch = time.time_since_epoch();
  const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];  // room for any int the compiler imagines in tm's fields
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  out += buf;
}

}  // namespace

void AppendJsonEscaped(std::string_view text, std::string& out) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    const size_t length = Utf8SequenceLength(text.substr(i));
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(text.data() + i, length);
    i += length;
  }
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  std::string_view message(msg.payload.data(), msg.payload.size());
  const PipelineKey* pipeline = CurrentLogPipeline();
  std::string line;
  line.reserve(message.size() + 96);
  line += "{\"time\":\"";
  AppendUtcTime(msg.time, line);
  line += "\",\"level\":\"";
  const auto level = spdlog::level::to_string_view(msg.level);
  line.append(level.data(), level.size());
  line += '"';
  if (pipeline) {
    const std::string prefix = "[" + pipeline->ToString() + "] ";
    if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
    line += ",\"job\":\"";
    AppendJsonEscaped(pipeline->job_id, line);
    line += "\",\"pipeline\":\"";
    AppendJsonEscaped(pipeline->pipeline_id, line);
    line += '"';
  }
  line += ",\"message\":\"";
  // A message is cut to a bounded length, like a text line (log_setup.h).
  const size_t cut =
      message.size() > kMaxLogMessageBytes ? message.size() - kMaxLogMessageBytes : 0;
  AppendJsonEscaped(message.substr(0, message.size() - cut), line);
  if (cut > 0) line += "...(+" + std::to_string(cut) + " bytes)";
  line += "\"}\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace ckpt
