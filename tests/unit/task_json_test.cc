// WriteTasksJson (and the SQLite rows' IdsToJson) write what dump() writes, byte for byte; the
// writer refuses what dump() refuses (strings that are not UTF-8); ReadTasksJson reads it back.

#include "store/task_json.h"
#include "store/task_json_plain.h"

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
    // The reader of the text reads it back too, figures included (those not all zero).
    std::map<std::string, TaskState> read_states;
    std::vector<TaskFigures> read_figures, dom_figures;
    std::map<std::string, TaskState> dom_states;
    ASSERT_TRUE(ReadTasksJsonText(*written, &read_states, &read_figures));
    ASSERT_TRUE(ReadTasksJson(json::parse(*written), &dom_states, &dom_figures));
    EXPECT_EQ(read_states, cp.task_states);
    EXPECT_EQ(read_figures, dom_figures);
  }
  EXPECT_GT(valid, 1000) << "enough of the random tasks were valid UTF-8 to be written";
  EXPECT_LT(valid, 4000) << "and enough were not";
}

// The reader of the text against ReadTasksJson over the parsed document, on texts no writer
// would make: task ids and fields twice, fields of the wrong type or nested, unknown keys, big
// unsigned numbers, floats, tasks that are not objects, texts cut short. Same verdict, and where
// both read it, the same states and figures.
TEST(TaskJsonReader, ReadsEveryTextAsTheDocumentReaderDoes) {
  std::mt19937_64 random(20261207);
  const auto pick = [&](std::initializer_list<const char*> from) {
    return std::string(*(from.begin() + random() % from.size()));
  };
  const auto value = [&] {
    return pick({R"("s")", R"("")", "0", "-7", "42", "18446744073709551615", "1.5", "1e3", "true",
                 "null", R"({"uri":"x","size_bytes":1})", R"([1,"a",{}])", "[]", "{}"});
  };
  const auto field = [&] {
    return pick({"uri", "size_bytes", "checksum", "worker_id", "acked_at_ms", "sync_duration_ms",
                 "async_duration_ms", "alignment_duration_ms", "bytes_processed_during_alignment",
                 "other"});
  };
  // Mostly well-formed tasks, so that both readers often accept.
  const auto task = [&] {
    if (random() % 20 == 0) return value();
    std::string t = "{";
    std::vector<std::string> parts;
    if (random() % 8) parts.push_back(R"("uri":"u)" + std::to_string(random() % 3) + "\"");
    if (random() % 8) parts.push_back(R"("size_bytes":)" + std::to_string(random() % 5));
    if (random() % 8) parts.push_back(R"("checksum":"c")");
    if (random() % 2) parts.push_back(R"("worker_id":"w)" + std::to_string(random() % 3) + "\"");
    if (random() % 2) parts.push_back(R"("acked_at_ms":)" + std::to_string(random() % 9));
    for (int extra = static_cast<int>(random() % 3); extra > 0; --extra) {
      parts.push_back("\"" + field() + "\":" + value());
    }
    std::shuffle(parts.begin(), parts.end(), random);
    for (size_t i = 0; i < parts.size(); ++i) t += (i ? "," : "") + parts[i];
    return t + "}";
  };
  int accepted = 0, refused = 0, plain = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    if (random() % 50 == 0) {
      text = value();
    } else {
      text = "{";
      const int tasks = static_cast<int>(random() % 4);
      for (int i = 0; i < tasks; ++i) {
        text += (i ? "," : "") + std::string("\"t") + std::to_string(random() % 3) + "\":" + task();
      }
      text += "}";
    }
    if (random() % 30 == 0) text.resize(random() % (text.size() + 1));
    std::map<std::string, TaskState> dom_states, read_states;
    std::vector<TaskFigures> dom_figures, read_figures;
    const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
    const bool dom = ReadTasksJson(document, &dom_states, &dom_figures);
    const bool read = ReadTasksJsonText(text, &read_states, &read_figures);
    ASSERT_EQ(read, dom) << text;
    // Without figures wanted (their types then go unchecked), the same verdict and states.
    std::map<std::string, TaskState> dom_plain, read_plain;
    const bool dom_without = ReadTasksJson(document, &dom_plain, nullptr);
    ASSERT_EQ(ReadTasksJsonText(text, &read_plain, nullptr), dom_without) << text;
    if (dom_without) {
      ASSERT_EQ(read_plain, dom_plain) << text;
    }
    // The fast path reads a text only when the document reader would read it the same.
    std::map<std::string, TaskState> plain_states;
    std::vector<TaskFigures> plain_figures;
    if (ReadPlainTasksJson(text, &plain_states, &plain_figures)) {
      ++plain;
      ASSERT_TRUE(dom) << text;
      ASSERT_EQ(plain_states, dom_states) << text;
      ASSERT_EQ(plain_figures, dom_figures) << text;
    }
    if (!dom) {
      ++refused;
      continue;
    }
    ++accepted;
    ASSERT_EQ(read_states, dom_states) << text;
    ASSERT_EQ(read_figures, dom_figures) << text;
  }
  EXPECT_GT(accepted, 2000);
  EXPECT_GT(refused, 2000);
  EXPECT_GT(plain, 1000) << "the fast path is taken for texts without anything unusual";
}

// What the writer writes (printable ASCII strings) is read by the fast path, figures and all,
// as the document reader reads it.
TEST(TaskJsonReader, TheFastPathReadsWhatTheWriterWrites) {
  CompletedCheckpoint cp;
  cp.task_states["source-0"] = {"s3://bucket/job/chk-7/source-0", 4096, "crc32c:0a1b2c3d"};
  cp.task_states["sink-1"] = {"", 0, ""};
  cp.task_states["map-2"] = {"file:///tmp/x y", INT64_MIN, "~!@#$%^&*()"};
  TaskFigures f;
  f.task_id = "map-2";
  f.worker_id = "worker-a";
  f.acked_at_ms = 1765000000000;
  f.reported.sync_duration_ms = 3;
  f.reported.bytes_processed_during_alignment = INT64_MAX;
  TaskFigures g;
  g.task_id = "source-0";
  g.acked_at_ms = 5;
  cp.task_figures = {f, g};
  const auto written = Written(cp);
  ASSERT_TRUE(written.has_value());
  std::map<std::string, TaskState> states;
  std::vector<TaskFigures> figures;
  ASSERT_TRUE(ReadPlainTasksJson(*written, &states, &figures)) << *written;
  EXPECT_EQ(states, cp.task_states);
  EXPECT_EQ(figures, cp.task_figures);
  // Whitespace, an escape, a byte above ASCII or a fraction: left to the general reader.
  for (const char* other : {R"({ "a":{"checksum":"","size_bytes":1,"uri":""}})",
                            R"({"a":{"checksum":"\n","size_bytes":1,"uri":""}})",
                            "{\"\xc3\xa9\":{\"checksum\":\"\",\"size_bytes\":1,\"uri\":\"\"}}",
                            R"({"a":{"checksum":"","size_bytes":1.0,"uri":""}})"}) {
    std::map<std::string, TaskState> s;
    std::vector<TaskFigures> v;
    EXPECT_FALSE(ReadPlainTasksJson(other, &s, &v)) << other;
  }
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
