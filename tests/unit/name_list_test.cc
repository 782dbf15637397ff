#include <gtest/gtest.h>

#include "common/name_list.h"

namespace ckpt {
namespace {

TEST(FirstNamesTest, ListsAllWhenFewAndTheCountWhenMore) {
  EXPECT_EQ(FirstNames({}), "");
  EXPECT_EQ(FirstNames({"a"}), "a");
  EXPECT_EQ(FirstNames({"a", "b", "c"}), "a, b, c");
  std::vector<std::string> many;
  for (int i = 0; i < 12; ++i) many.push_back("t" + std::to_string(i));
  EXPECT_EQ(FirstNames(many), "t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, ... (12 in all)");
  EXPECT_EQ(FirstNames(many, many.size(), 2), "t0, t1, ... (12 in all)");
}

TEST(FirstNamesTest, ACallerMayPassTheFirstNamesAndTheCountOfAll) {
  EXPECT_EQ(FirstNames({"a", "b"}, 250), "a, b, ... (250 in all)");
  // A total below the names given cannot be: the names count.
  EXPECT_EQ(FirstNames({"a", "b"}, 1), "a, b");
}

}  // namespace
}  // namespace ckpt
