// WriteTasksJson (and the SQLite rows' IdsToJson) write what dump() writes, byte for byte; the
// writer refuses what dump() refuses (strings that are not UTF-8); ReadTasksJson reads it back.

#include "store/task_json.h"

#include "sqlite/sqlite_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

namespace ckpt {
namespace {

using nlohmann::json;

// dump()'s text, or nullopt where dump() throws.
std::optional<std::string> Dumped(const CompletedCheckpoint& cp) {
  try {
    return TasksJson(cp).dump();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> Written(const CompletedCheckpoint& cp) {
  std::string text;
  if (!WriteTasksJson(cp, &text)) return std::nullopt;
  return text;
}

CompletedCheckpoint WithTask(const std::string& id, TaskState state) {
  CompletedCheckpoint cp;
  cp.task_states[id] = std::move(state);
  return cp;
}

TEST(TaskJsonWriter, WritesWhatDumpWritesForPlainTasks) {
  CompletedCheckpoint cp;
  cp.task_states["0"] = {"s3://b/p/chk-1/0", 4096, "crc32c:1a2b3c4d"};
  cp.task_states["1"] = {"", 0, ""};
  EXPECT_EQ(Written(cp), Dumped(cp));
  EXPECT_EQ(*Written(cp),
            R"({"0":{"checksum":"crc32c:1a2b3c4d","size_bytes":4096,"uri":"s3://b/p/chk-1/0"},)"
            R"("1":{"checksum":"","size_bytes":0,"uri":""}})");
  EXPECT_EQ(Written(CompletedCheckpoint{}), Dumped(CompletedCheckpoint{}));
}

TEST(TaskJsonWriter, WritesFiguresInDumpsKeyOrderAndLeavesZerosOut) {
  CompletedCheckpoint cp;
  cp.task_states["a"] = {"u", -1, "c"};
  cp.task_states["b"] = {"u", INT64_MAX, "c"};
  cp.task_states["c"] = {"u", INT64_MIN, "c"};
  TaskFigures a;
  a.task_id = "a";
  a.worker_id = "w-1";
  a.acked_at_ms = 1700000000000;
  a.reported.sync_duration_ms = 3;
  a.reported.async_duration_ms = 0;
  a.reported.alignment_duration_ms = 7;
  a.reported.bytes_processed_during_alignment = 1 << 20;
  TaskFigures c;  // all zero: as if it had none
  c.task_id = "c";
  cp.task_figures = {a, c};
  EXPECT_EQ(Written(cp), Dumped(cp));
}

TEST(TaskJsonWriter, EscapesAsDumpEscapes) {
  std::string every_byte_below_0x80;
  for (int c = 1; c < 0x80; ++c) every_byte_below_0x80.push_back(static_cast<char>(c));
  for (const std::string& text :
       {every_byte_below_0x80, std::string("nul\0inside", 10), std::string("\"\\/\b\f\n\r\t"),
        std::string("ünïcødé ✓ 𝄞"), std::string("\x7f")}) {
    const CompletedCheckpoint cp = WithTask(text, {text, 1, text});
    ASSERT_TRUE(Dumped(cp).has_value());
    EXPECT_EQ(Written(cp), Dumped(cp)) << json(text).dump();
  }
}

TEST(TaskJsonWriter, RefusesWhatIsNotUtf8AsDumpDoes) {
  for (const std::string& bad : {
           std::string("\xff"),              // never a UTF-8 byte
           std::string("\xc0\xaf"),          // overlong '/'
           std::string("\xe0\x80\xaf"),      // overlong, three bytes
           std::string("\xf0\x80\x80\xaf"),  // overlong, four bytes
           std::string("\xed\xa0\x80"),      // a surrogate
           std::string("\xf4\x90\x80\x80"),  // above U+10FFFF
           std::string("\xe2\x9c"),          // cut short
           std::string("a\x80z"),            // a continuation without a lead
       }) {
    for (const CompletedCheckpoint& cp :
         {WithTask(bad, {"u", 1, "c"}), WithTask("t", {bad, 1, "c"}),
          WithTask("t", {"u", 1, bad})}) {
      EXPECT_FALSE(Written(cp).has_value());
      EXPECT_FALSE(Dumped(cp).has_value());
    }
  }
  CompletedCheckpoint cp = WithTask("t", {"u", 1, "c"});
  cp.task_figures.push_back(TaskFigures{});
  cp.task_figures.back().task_id = "t";
  cp.task_figures.back().worker_id = "w\xfe";
  EXPECT_FALSE(Written(cp).has_value());
  EXPECT_FALSE(Dumped(cp).has_value());
}

// Random strings of random bytes (valid UTF-8 or not), random figures: the writer and dump()
// agree on every one, and what is written reads back as it was.
TEST(TaskJsonWriter, AgreesWithDumpOnRandomTasks) {
  std::mt19937_64 random(20261206);
  // Mostly ASCII and valid multi-byte code points; one byte in a hundred is a random one (often
  // breaking the UTF-8), so that both outcomes come often.
  auto text = [&] {
    std::string s;
    const int chars = static_cast<int>(random() % 12);
    for (int i = 0; i < chars; ++i) {
      const uint64_t pick = random() % 100;
      if (pick < 70) {
        s.push_back(static_cast<char>(random() % 0x80));
      } else if (pick < 99) {
        uint32_t code = 0x80 + static_cast<uint32_t>(random() % (0x110000 - 0x80));
        if (code >= 0xD800 && code <= 0xDFFF) code = 0xE000;
        if (code < 0x800) {
          s.push_back(static_cast<char>(0xC0 | (code >> 6)));
        } else if (code < 0x10000) {
          s.push_back(static_cast<char>(0xE0 | (code >> 12)));
          s.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        } else {
          s.push_back(static_cast<char>(0xF0 | (code >> 18)));
          s.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
          s.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        }
        s.push_back(static_cast<char>(0x80 | (code & 0x3F)));
      } else {
        s.push_back(static_cast<char>(0x80 + random() % 0x80));
      }
    }
    return s;
  };
  int valid = 0;
  for (int round = 0; round < 5000; ++round) {
    CompletedCheckpoint cp;
    const int tasks = 1 + static_cast<int>(random() % 3);
    for (int t = 0; t < tasks; ++t) {
      const std::string id = text();
      cp.task_states[id] = {text(), static_cast<int64_t>(random()), text()};
      if (random() % 2) {
        TaskFigures f;
        f.task_id = id;
        f.worker_id = random() % 2 ? text() : "";
        f.acked_at_ms = static_cast<int64_t>(random() % 3);
        f.reported.sync_duration_ms = static_cast<int64_t>(random() % 3);
        f.reported.async_duration_ms = static_cast<int64_t>(random() % 3);
        f.reported.alignment_duration_ms = static_cast<int64_t>(random() % 3);
        f.reported.bytes_processed_during_alignment = static_cast<int64_t>(random() % 3);
        cp.task_figures.push_back(f);
      }
    }
    std::sort(cp.task_figures.begin(), cp.task_figures.end(),
              [](const TaskFigures& a, const TaskFigures& b) { return a.task_id < b.task_id; });
    const auto written = Written(cp);
    ASSERT_EQ(written, Dumped(cp)) << "round " << round;
    if (!written) continue;
    ++valid;
    std::map<std::string, TaskState> states;
    ASSERT_TRUE(ReadTasksJson(json::parse(*written), &states, nullptr));
    EXPECT_EQ(states, cp.task_states);
  }
  EXPECT_GT(valid, 1000) << "enough of the random tasks were valid UTF-8 to be written";
  EXPECT_LT(valid, 4000) << "and enough were not";
}

}  // namespace
}  // namespace ckpt

namespace ckpt::sqlite {
namespace {

TEST(IdsJson, WritesWhatDumpWrites) {
  for (const std::vector<int64_t>& ids :
       std::vector<std::vector<int64_t>>{{}, {7}, {1, 2, 3}, {-1, 0, INT64_MAX, INT64_MIN}}) {
    EXPECT_EQ(IdsToJson(ids), nlohmann::json(ids).dump());
  }
}

}  // namespace
}  // namespace ckpt::sqlite
