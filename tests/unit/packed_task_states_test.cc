#include "core/packed_task_states.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace ckpt {
namespace {

TEST(PackedTaskStates, KeepsTheMapsOrderAndFindsByName) {
  const std::string long_name(300, 'z');  // lengths of more than one varint byte
  const std::string long_uri(5000, 'u');
  const std::map<std::string, TaskState> states{
      {"b", {"mem://b", 2, "cb"}},
      {"a", {"mem://a", 1, ""}},
      {long_name, {long_uri, 3, "cz"}},
      {"", {"", 0, ""}},
      {"m", {"mem://m", std::numeric_limits<int64_t>::max(), std::string(200, 'c')}},
      {"n", {"mem://n", -1, "negative sizes come back as they went in"}}};
  const PackedTaskStates packed(states);
  ASSERT_EQ(packed.size(), states.size());
  EXPECT_FALSE(packed.empty());
  size_t i = 0;
  for (const auto& [task, state] : states) {
    const PackedTaskStates::Entry entry = packed.at(i++);
    EXPECT_EQ(entry.task, task);
    EXPECT_EQ(entry.ToTaskState(), state) << task;
  }
  EXPECT_EQ(packed.ToMap(), states);

  for (const auto& [task, state] : states) {
    const auto found = packed.Find(task);
    ASSERT_TRUE(found.has_value()) << task;
    EXPECT_EQ(found->task, task);
    EXPECT_EQ(found->ToTaskState(), state);
  }
  for (const char* absent : {"0", "aa", "c", "zz", "{"}) {
    EXPECT_FALSE(packed.Find(absent).has_value()) << absent;
  }
  EXPECT_FALSE(packed.Find(long_name + "z").has_value());
  EXPECT_FALSE(packed.Find(long_name.substr(1)).has_value());
}

TEST(PackedTaskStates, EmptyHoldsNothing) {
  const PackedTaskStates none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_FALSE(none.Find("a").has_value());
  EXPECT_FALSE(none.Find("").has_value());
  EXPECT_TRUE(none.ToMap().empty());
  EXPECT_TRUE(PackedTaskStates(std::map<std::string, TaskState>{}).empty());
}

TEST(PackedTaskStates, FindsEveryTaskOfAWidePipeline) {
  std::map<std::string, TaskState> states;
  for (int t = 0; t < 5000; t += 2) {  // every even task: the odd ones fall between entries
    states.emplace("task-" + std::to_string(t), TaskState{"s3://b/" + std::to_string(t), t, ""});
  }
  const PackedTaskStates packed(states);
  for (int t = 0; t < 5000; ++t) {
    const auto found = packed.Find("task-" + std::to_string(t));
    ASSERT_EQ(found.has_value(), t % 2 == 0) << t;
    if (found) {
      EXPECT_EQ(found->size_bytes, t);
    }
  }
}

}  // namespace
}  // namespace ckpt
