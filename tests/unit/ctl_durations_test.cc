#include <gtest/gtest.h>

#include "ctl/durations.h"
#include "sim/sim_options.h"

namespace ckpt::ctl {
namespace {

// cli::ParseDurationMs, with the options of both its callers: ckptctl (kDurationOptions) and
// ckpt-worker-sim (sim::kDurationOptions).
TEST(ClientDuration, ParsesEveryUnit) {
  for (const cli::DurationOptions& options : {kDurationOptions, sim::kDurationOptions}) {
    EXPECT_EQ(cli::ParseDurationMs("250ms", nullptr, options), 250);
    EXPECT_EQ(cli::ParseDurationMs("10s", nullptr, options), 10'000);
    EXPECT_EQ(cli::ParseDurationMs("30s", nullptr, options), 30'000);
    EXPECT_EQ(cli::ParseDurationMs("2m", nullptr, options), 120'000);
    EXPECT_EQ(cli::ParseDurationMs("5m", nullptr, options), 300'000);
    EXPECT_EQ(cli::ParseDurationMs("1h", nullptr, options), 3'600'000);
    EXPECT_EQ(cli::ParseDurationMs("2h", nullptr, options), 7'200'000);
    EXPECT_EQ(cli::ParseDurationMs("1.5s", nullptr, options), 1500);
    EXPECT_EQ(cli::ParseDurationMs("0s", nullptr, options), 0);
    EXPECT_EQ(cli::ParseDurationMs("0ms", nullptr, options), 0);
  }
}

TEST(ClientDuration, SimAcceptsABareZero) {
  EXPECT_EQ(cli::ParseDurationMs("0", nullptr, sim::kDurationOptions), 0);
}

TEST(ClientDuration, RejectsWithAReasonQuotingTheText) {
  struct Case {
    const char* text;
    const char* fragment;
  };
  const Case either[] = {
      {"", "expected a non-negative number"},
      {"s", "expected a non-negative number"},
      {"-1s", "expected a non-negative number"},
      {"10x", "unknown unit"},
      {"1m30s", "unknown unit"},
      {"10 s", "unknown unit"},
      {"1e3s", "unknown unit"},
  };
  const Case ctl_only[] = {
      {"10", "needs a unit"},
      {"0", "needs a unit"},
      {"9999h", "longer than a year"},
  };
  const Case sim_only[] = {
      {"10", "missing unit"},
      {"99999999h", "ten years"},
  };
  auto expect_rejected = [](const Case& c, const cli::DurationOptions& options) {
    std::string error;
    EXPECT_FALSE(cli::ParseDurationMs(c.text, &error, options).has_value()) << c.text;
    EXPECT_NE(error.find(c.fragment), std::string::npos) << c.text << ": " << error;
    EXPECT_NE(error.find(std::string("\"") + c.text + "\""), std::string::npos) << error;
  };
  for (const Case& c : either) {
    expect_rejected(c, kDurationOptions);
    expect_rejected(c, sim::kDurationOptions);
  }
  for (const Case& c : ctl_only) expect_rejected(c, kDurationOptions);
  for (const Case& c : sim_only) expect_rejected(c, sim::kDurationOptions);
}

TEST(CtlDurations, FormatsExactlyWithTheLargestUnits) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(250), "250ms");
  EXPECT_EQ(FormatDuration(1500), "1.5s");
  EXPECT_EQ(FormatDuration(10'000), "10s");
  EXPECT_EQ(FormatDuration(300'000), "5m");
  EXPECT_EQ(FormatDuration(600'000), "10m");
  EXPECT_EQ(FormatDuration(3'600'000), "1h");
  EXPECT_EQ(FormatDuration(5'400'000), "1h30m");
  EXPECT_EQ(FormatDuration(90'500), "1m30.5s");
  EXPECT_EQ(FormatDuration(3'600'001), "1h0.001s");
  EXPECT_EQ(FormatDuration(-2000), "-2s");
}

TEST(CtlDurations, FormattedDurationsParseBack) {
  for (int64_t ms : {0LL, 250LL, 10'000LL, 300'000LL, 3'600'000LL, 7'200'000LL}) {
    EXPECT_EQ(cli::ParseDurationMs(FormatDuration(ms), nullptr, kDurationOptions), ms) << ms;
  }
}

TEST(CtlDurations, Ago) {
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(FormatAgo(0, now), "never");
  EXPECT_EQ(FormatAgo(now, now), "just now");
  EXPECT_EQ(FormatAgo(now - 999, now), "just now");
  EXPECT_EQ(FormatAgo(now + 5000, now), "just now");  // a clock ahead of ours
  EXPECT_EQ(FormatAgo(now - 3000, now), "3s ago");
  EXPECT_EQ(FormatAgo(now - 59'999, now), "59s ago");
  EXPECT_EQ(FormatAgo(now - 120'000, now), "2m ago");
  EXPECT_EQ(FormatAgo(now - 5 * 3'600'000LL, now), "5h ago");
  EXPECT_EQ(FormatAgo(now - 47 * 3'600'000LL, now), "47h ago");
  EXPECT_EQ(FormatAgo(now - 72 * 3'600'000LL, now), "3d ago");
}

TEST(CtlDurations, Elapsed) {
  EXPECT_EQ(FormatElapsed(0), "0.0s");
  EXPECT_EQ(FormatElapsed(400), "0.4s");
  EXPECT_EQ(FormatElapsed(12'345), "12.3s");
  EXPECT_EQ(FormatElapsed(125'000), "2m05s");
  EXPECT_EQ(FormatElapsed(3'720'000), "1h02m");
  EXPECT_EQ(FormatElapsed(-5), "0.0s");
}

}  // namespace
}  // namespace ckpt::ctl
