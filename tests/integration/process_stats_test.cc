// The process_* figures of /metrics: a /proc/<pid>/stat line parsed field by field (a command
// name with spaces and parentheses included), and this process's own figures read for real.
#include "runtime/process_stats.h"

#include <gtest/gtest.h>

#include <string>

namespace ckpt {
namespace {

TEST(ProcessStatsTest, ParsesAStatLineWhoseCommandNameHasSpacesAndParentheses) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads itrealvalue starttime vsize rss ...
  const std::string line =
      "4242 (ckptd (io) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 7 0 123 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  const ProcessStats stats = ParseProcStat(line, /*clock_ticks_per_second=*/100,
                                           /*page_bytes=*/4096);
  ASSERT_TRUE(stats.cpu_seconds);
  EXPECT_DOUBLE_EQ(*stats.cpu_seconds, 4.0) << "(250 + 150) ticks at 100 a second";
  EXPECT_EQ(stats.threads, 7u);
  EXPECT_EQ(stats.virtual_bytes, 104857600u);
  EXPECT_EQ(stats.resident_bytes, 2560u * 4096u);
}

TEST(ProcessStatsTest, ALineThatDoesNotParseGivesNoFigures) {
  for (const std::string line : {"", "4242 ckptd S 1", "4242 (ckptd) S 1 2 3", "(x) S a b c"}) {
    const ProcessStats stats = ParseProcStat(line, 100, 4096);
    EXPECT_FALSE(stats.cpu_seconds) << line;
    EXPECT_FALSE(stats.threads) << line;
    EXPECT_FALSE(stats.resident_bytes) << line;
  }
}

TEST(ProcessStatsTest, ReadsThisProcesssOwnFigures) {
  const ProcessStats stats = ReadProcessStats();
  ASSERT_TRUE(stats.threads && stats.resident_bytes && stats.open_fds && stats.cpu_seconds);
  EXPECT_GE(*stats.threads, 1u);
  EXPECT_GT(*stats.resident_bytes, 1u << 20) << "a test binary holds more than 1 MiB";
  EXPECT_GE(*stats.open_fds, 3u) << "stdin, stdout, stderr";
  EXPECT_GE(*stats.cpu_seconds, 0.0);
  if (stats.max_fds) {
    EXPECT_GE(*stats.max_fds, *stats.open_fds);
  }
}

}  // namespace
}  // namespace ckpt
