#include "logging/log_setup.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "core/printable.h"
#include "logging/json_formatter.h"

namespace ckpt {
namespace {

// %* in a pattern: the syslog priority of the message's level, for journald's "<N>" prefix.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    char digit = '6';  // info
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: digit = '7'; break;
      case spdlog::level::info: digit = '6'; break;
      case spdlog::level::warn: digit = '4'; break;
      case spdlog::level::err: digit = '3'; break;
      case spdlog::level::critical: digit = '2'; break;
      default: break;
    }
    dest.push_back(digit);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

// %& in a pattern: the message with control characters and invalid UTF-8 escaped (\xNN) and cut
// to kMaxLogMessageBytes, so that nothing a client sent can forge a line or colour a terminal.
class EscapedMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string_view message(msg.payload.data(), msg.payload.size());
    const std::string text = PrintableLine(message, kMaxLogMessageBytes);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessageFlag>();
  }
};

constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %&";

}  // namespace

bool JournalStreamMatches(const char* journal_stream, dev_t device, ino_t inode) {
  if (!journal_stream) return false;
  const std::string_view value(journal_stream);
  const size_t colon = value.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == value.size()) return false;
  char* end = nullptr;
  const std::string dev_text(value.substr(0, colon));
  const std::string ino_text(value.substr(colon + 1));
  const unsigned long long dev = std::strtoull(dev_text.c_str(), &end, 10);
  if (*end != '\0') return false;
  const unsigned long long ino = std::strtoull(ino_text.c_str(), &end, 10);
  if (*end != '\0') return false;
  return dev == static_cast<unsigned long long>(device) &&
         ino == static_cast<unsigned long long>(inode);
}

LogStyle ChooseLogStyle(const std::string& format) {
  if (format == "json") return LogStyle::kJson;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) == 0 &&
      JournalStreamMatches(std::getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino)) {
    return LogStyle::kJournal;
  }
  return isatty(STDERR_FILENO) ? LogStyle::kTerminal : LogStyle::kPlain;
}

void SetUpLogging(LogStyle style, const std::string& level) {
  spdlog::sink_ptr sink;
  if (style == LogStyle::kTerminal) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  auto logger = std::make_shared<spdlog::logger>("ckptd", sink);
  logger->set_formatter(MakeLogFormatter(style));
  logger->set_level(spdlog::level::from_str(level));
  // Warnings and errors reach the file at once: a crash right after one must not lose it.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogStyle style) {
  switch (style) {
    case LogStyle::kJson: return std::make_unique<JsonLogFormatter>();
    case LogStyle::kJournal: {
      auto formatter = std::make_unique<spdlog::pattern_formatter>();
      formatter->add_flag<SyslogPriorityFlag>('*').add_flag<EscapedMessageFlag>('&').set_pattern(
          "<%*>%l %&");
      return formatter;
    }
    case LogStyle::kTerminal:
    case LogStyle::kPlain: break;
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessageFlag>('&').set_pattern(kTextPattern);
  return formatter;
}

const char* LogStyleName(LogStyle style) {
  switch (style) {
    case LogStyle::kJson: return "json";
    case LogStyle::kJournal: return "text for journald";
    case LogStyle::kTerminal: return "text (terminal)";
    case LogStyle::kPlain: return "text";
  }
  return "text";
}

}  // namespace ckpt
