#include <gtest/gtest.h>

#include "sim/latency_summary.h"
#include "sim/sim_report.h"

namespace ckpt::sim {
namespace {

TEST(SdkSimLatency, EmptyIsAllZero) {
  LatencySummary s = Summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50_ms, 0);
  EXPECT_EQ(s.p99_ms, 0);
  EXPECT_EQ(s.max_ms, 0);
}

TEST(SdkSimLatency, OneSampleIsEveryPercentile) {
  LatencySummary s = Summarize({1500});
  EXPECT_DOUBLE_EQ(s.p50_ms, 1.5);
  EXPECT_DOUBLE_EQ(s.p99_ms, 1.5);
  EXPECT_DOUBLE_EQ(s.max_ms, 1.5);
}

TEST(SdkSimLatency, NearestRankOnUnsortedInput) {
  // 1..100 ms, shuffled: p50 is the 50th value, p99 the 99th.
  std::vector<int64_t> micros;
  for (int i = 100; i >= 1; --i) micros.push_back(i * 1000);
  std::swap(micros[3], micros[70]);
  LatencySummary s = Summarize(micros);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.p50_ms, 50);
  EXPECT_DOUBLE_EQ(s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
}

TEST(SdkSimLatency, SmallSetsRoundUp) {
  LatencySummary s = Summarize({1000, 2000, 3000});
  EXPECT_DOUBLE_EQ(s.p50_ms, 2);  // rank ceil(1.5) = 2
  EXPECT_DOUBLE_EQ(s.p99_ms, 3);
}

TEST(SdkSimReport, JsonHasTheContractKeys) {
  SimSummary summary;
  summary.pipelines = 2;
  summary.tasks = 6;
  summary.triggers = 10;
  summary.acks = 27;
  summary.declines = 1;
  summary.completes = 9;
  summary.aborts = 1;
  summary.duration_ms = 3000;
  summary.checkpoint = Summarize({1234, 5678});
  summary.stale_messages = 4;
  summary.leader_redirects = 3;
  nlohmann::ordered_json json = SummaryToJson(summary);
  EXPECT_EQ(json["stale_messages"], 4);
  EXPECT_EQ(json["leader_redirects"], 3);
  for (const char* key :
       {"pipelines", "tasks", "triggers", "acks", "completes", "aborts", "duration_ms", "run_ms",
        "trigger_gap_ms", "stale_messages", "leader_redirects"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["pipelines"], 2);
  EXPECT_EQ(json["acks"], 27);
  EXPECT_EQ(json["run_ms"], 3000);
  EXPECT_TRUE(json["run_ms"].is_number_integer());
  // duration_ms is {p50, p99, max}, trigger to complete, as documented.
  EXPECT_DOUBLE_EQ(json["duration_ms"]["p50"].get<double>(), 1.234);
  EXPECT_DOUBLE_EQ(json["duration_ms"]["max"].get<double>(), 5.678);
  EXPECT_TRUE(json["duration_ms"].contains("p99"));
  EXPECT_EQ(json["trigger_gap_ms"]["p99"], 0.0);
}

TEST(SdkSimReport, TextNamesTheCounts) {
  SimSummary summary;
  summary.job = "j";
  summary.server = "h:1";
  summary.triggers = 12;
  summary.leader_redirects = 2;
  summary.stale_messages = 1;
  const std::string text = SummaryToText(summary);
  EXPECT_NE(text.find("leader redirects 2  stale messages 1"), std::string::npos) << text;
  EXPECT_NE(text.find("job j on h:1"), std::string::npos);
  EXPECT_NE(text.find("triggers 12"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace ckpt::sim
