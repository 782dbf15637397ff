#include <gtest/gtest.h>

#include "ctl/output_table.h"

namespace ckpt::ctl {
namespace {

TEST(CtlOutputTable, AlignsColumnsTwoSpacesApartWithoutTrailingSpaces) {
  Table table({"JOB", "PIPELINE", "STATE"});
  table.AddRow({"etl", "p0", "RUNNING"});
  table.AddRow({"analytics", "p12", "WAITING_FOR_TASKS"});
  EXPECT_EQ(table.Render(),
            "JOB        PIPELINE  STATE\n"
            "etl        p0        RUNNING\n"
            "analytics  p12       WAITING_FOR_TASKS\n");
}

TEST(CtlOutputTable, ShortRowsAndEmptyLastCells) {
  Table table({"A", "B", "C"});
  table.AddRow({"x"});
  table.AddRow({"long", "y", ""});
  EXPECT_EQ(table.Render(),
            "A     B  C\n"
            "x\n"
            "long  y\n");
}

TEST(CtlOutputTable, WithoutHeaders) {
  Table table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.Render(), "");
  table.AddRow({"State:", "RUNNING"});
  table.AddRow({"Generation:", "3"});
  EXPECT_EQ(table.Render(),
            "State:       RUNNING\n"
            "Generation:  3\n");
}

TEST(CtlOutputTable, CountsUtf8Characters) {
  Table table({"ID", "X"});
  table.AddRow({"\xc3\xa9t\xc3\xa9", "1"});  // "été": 3 characters, 5 bytes
  table.AddRow({"abcd", "2"});
  EXPECT_EQ(table.Render(),
            "ID    X\n"
            "\xc3\xa9t\xc3\xa9   1\n"
            "abcd  2\n");
}

}  // namespace
}  // namespace ckpt::ctl
