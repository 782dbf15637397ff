#include "core/task_state_list.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

TEST(TaskStateList, KeepsTheMapsOrderAndFindsByName) {
  const std::string long_name(100, 'z');  // beyond the small-string buffer: moved, not copied
  std::map<std::string, TaskState> states{
      {"b", {"mem://b", 2, "cb"}}, {"a", {"mem://a", 1, ""}}, {long_name, {"mem://z", 3, "cz"}}};
  const char* long_name_bytes = states.find(long_name)->first.data();
  const TaskStateList list = ToTaskStateList(std::move(states));
  EXPECT_TRUE(states.empty());
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].first, "a");
  EXPECT_EQ(list[1].first, "b");
  EXPECT_EQ(list[2].first, long_name);
  EXPECT_EQ(list[2].first.data(), long_name_bytes) << "the name was copied";

  const TaskState* b = FindTaskState(list, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*b, (TaskState{"mem://b", 2, "cb"}));
  ASSERT_NE(FindTaskState(list, long_name), nullptr);
  EXPECT_EQ(FindTaskState(list, long_name)->uri, "mem://z");
  for (const char* absent : {"", "0", "aa", "c", "zz"}) {
    EXPECT_EQ(FindTaskState(list, absent), nullptr) << absent;
  }
  EXPECT_EQ(FindTaskState(TaskStateList{}, "a"), nullptr);
}

}  // namespace
}  // namespace ckpt
