// Log formats: JSON lines (escaping, fields) and the journald check.
#include <gtest/gtest.h>
#include <spdlog/details/log_msg.h>

#include <string>

#include "logging/json_formatter.h"
#include "logging/log_context.h"
#include "logging/log_setup.h"

namespace ckpt {
namespace {

std::string Format(const std::string& text, spdlog::level::level_enum level = spdlog::level::info) {
  spdlog::details::log_msg msg(spdlog::source_loc{}, "ckptd", level, text);
  msg.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1714564800123));
  spdlog::memory_buf_t buf;
  JsonLogFormatter().format(msg, buf);
  return std::string(buf.data(), buf.size());
}

std::string FormatText(const std::string& text, LogStyle style = LogStyle::kPlain) {
  spdlog::details::log_msg msg(spdlog::source_loc{}, "ckptd", spdlog::level::warn, text);
  spdlog::memory_buf_t buf;
  MakeLogFormatter(style)->format(msg, buf);
  return std::string(buf.data(), buf.size());
}

TEST(TextLog, ClientBytesCannotForgeALineNorColourATerminal) {
  for (LogStyle style : {LogStyle::kPlain, LogStyle::kJournal}) {
    const std::string line =
        FormatText("refused hello from worker w\n2026-01-01 critical forged \x1b[31mred", style);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
    EXPECT_NE(line.find("w\\x0a2026-01-01 critical forged \\x1b[31mred"), std::string::npos)
        << line;
    EXPECT_NE(FormatText("a \\x0a b").find("a \\x0a b"), std::string::npos)
        << "what Printable escaped already is left as it is";
  }
}

TEST(TextLog, AHugeMessageIsCut) {
  const std::string line = FormatText(std::string(7 << 20, 'x'));
  EXPECT_LT(line.size(), kMaxLogMessageBytes + 200);
  EXPECT_NE(line.find("bytes)"), std::string::npos);
  EXPECT_LT(Format(std::string(7 << 20, 'x')).size(), kMaxLogMessageBytes + 200) << "JSON too";
}

TEST(JsonLog, OneObjectPerLine) {
  EXPECT_EQ(
      Format("hello", spdlog::level::warn),
      "{\"time\":\"2024-05-01T12:00:00.123Z\",\"level\":\"warning\",\"message\":\"hello\"}\n");
}

TEST(JsonLog, EscapesWhatJsonNeeds) {
  const std::string line = Format("a \"quote\", a \\ and\na newline\t\x01");
  EXPECT_NE(line.find(R"("message":"a \"quote\", a \\ and\na newline\t\u0001")"), std::string::npos)
      << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line, whatever the message";
}

TEST(JsonLog, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_NE(Format("bad \xff\xc3 end").find(R"("message":"bad \ufffd\ufffd end")"),
            std::string::npos);
  EXPECT_NE(Format("ok \xc3\xa9 \xe2\x82\xac").find("ok \xc3\xa9 \xe2\x82\xac"), std::string::npos);
  EXPECT_NE(Format("surrogate \xed\xa0\x80").find(R"(surrogate \ufffd\ufffd\ufffd)"),
            std::string::npos);
}

TEST(JsonLog, PipelineLinesCarryJobAndPipelineFields) {
  const PipelineKey key{"etl", "orders \"eu\""};
  std::string line;
  {
    const ScopedLogPipeline about(key);
    line = Format("[etl/orders \"eu\"] checkpoint 7 completed");
  }
  EXPECT_NE(
      line.find(R"("job":"etl","pipeline":"orders \"eu\"","message":"checkpoint 7 completed")"),
      std::string::npos)
      << line;
  EXPECT_EQ(Format("[etl/orders] not in a scope").find("\"job\""), std::string::npos)
      << "the context ends with its scope";
}

TEST(JsonLog, ScopesNest) {
  const PipelineKey outer{"j", "a"};
  const PipelineKey inner{"j", "b"};
  const ScopedLogPipeline a(outer);
  {
    const ScopedLogPipeline b(inner);
    EXPECT_EQ(CurrentLogPipeline(), &inner);
  }
  EXPECT_EQ(CurrentLogPipeline(), &outer);
}

TEST(JournalStream, MatchesOnlyTheSameDeviceAndInode) {
  EXPECT_TRUE(JournalStreamMatches("8:12345", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("8:12345", 8, 12346));
  EXPECT_FALSE(JournalStreamMatches("9:12345", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches(nullptr, 8, 12345));
  for (const char* bad : {"", ":", "8:", ":12345", "8", "x:1", "8:1x", "8:12345:1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(JournalStreamMatches(bad, 8, 12345));
  }
}

TEST(LogStyle, JsonWhenAsked) { EXPECT_EQ(ChooseLogStyle("json"), LogStyle::kJson); }

}  // namespace
}  // namespace ckpt
