// The adaptive interval (docs/PROTOCOL.md, "Adaptive interval"): the rule alone
// (core/adaptive_interval.h), then a pipeline's schedule under it (the interval fixed when a round
// ends; a stream's backlog, forgotten when the stream ends) and an alignment group's.
#include <gtest/gtest.h>

#include <cmath>

#include "coordinator_harness.h"
#include "core/adaptive_interval.h"
#include "core/group_coordinator.h"
#include "core/spec_validation.h"

namespace ckpt::testing {
namespace {

IntervalInputs Inputs(int64_t interval, double overhead, int64_t max, int rounds, int64_t p95,
                      bool backlog = false) {
  return IntervalInputs{interval, overhead, max, rounds, p95, backlog};
}

TEST(AdaptiveIntervalRule, OffItIsTheInterval) {
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0, 0, 20, 5000)), 1000);
  EXPECT_EQ(DescribeEffectiveInterval(Inputs(1000, 0, 0, 20, 5000)).reason, "interval_ms 1s");
}

TEST(AdaptiveIntervalRule, TheRecentP95OverMaxOverheadFromTheThirdRound) {
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0.1, 0, 2, 500)), 1000) << "two rounds say nothing";
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0.1, 0, 3, 500)), 5000);
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0.1, 0, 20, 50)), 1000) << "never below interval_ms";
  const EffectiveInterval e = DescribeEffectiveInterval(Inputs(1000, 0.1, 0, 3, 500));
  EXPECT_EQ(e.reason, "p95 500ms of the last 3 rounds / max_overhead 0.1");
}

TEST(AdaptiveIntervalRule, CappedAtMaxIntervalMs) {
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0.1, 3000, 5, 500)), 3000);
  EXPECT_NE(DescribeEffectiveInterval(Inputs(1000, 0.1, 3000, 5, 500)).reason.find("capped"),
            std::string::npos);
  // A tiny overhead and a long p95 do not overflow.
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 1e-12, 0, 5, 600000)), 7LL * 24 * 3600 * 1000);
}

TEST(AdaptiveIntervalRule, ABacklogIsMaxIntervalMsWhateverMaxOverheadSays) {
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0, 60000, 0, 0, true)), 60000);
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0.5, 60000, 20, 100, true)), 60000);
  EXPECT_EQ(EffectiveIntervalMs(Inputs(1000, 0, 0, 0, 0, true)), 1000) << "no cap: no stretch";
  EXPECT_EQ(DescribeEffectiveInterval(Inputs(1000, 0, 60000, 0, 0, true)).reason,
            "backlog reported: max_interval_ms 1m");
}

TEST(AdaptiveIntervalRule, ValidationRefusesAMaxBelowTheIntervalAndABadFraction) {
  PipelineSpec spec = MakeSpec();
  spec.interval_ms = 10000;
  spec.max_interval_ms = 5000;
  Status s = ValidateSpec(spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_interval_ms 5000 is below interval_ms 10000"), std::string::npos)
      << s.message();
  spec.max_interval_ms = 0;
  for (double bad : {-0.1, 1.5, 0.0005, std::nan("")}) {
    spec.max_overhead = bad;
    EXPECT_EQ(ValidateSpec(spec).code(), StatusCode::kInvalidArgument) << bad;
  }
  spec.max_overhead = 0.2;
  spec.max_interval_ms = 10000;
  EXPECT_TRUE(ValidateSpec(spec).ok());
  AlignmentGroupSpec group;
  group.name = "g";
  group.interval_ms = 1000;
  group.max_interval_ms = 999;
  EXPECT_EQ(ValidateGroupSpec(group).code(), StatusCode::kInvalidArgument);
}

// Gaps between the triggers recorded since index `from`.
std::vector<int64_t> GapsMs(const Harness& h, size_t from) {
  std::vector<int64_t> gaps;
  for (size_t i = from + 1; i < h.triggers.size(); ++i) {
    gaps.push_back(h.triggers[i].timestamp_ms - h.triggers[i - 1].timestamp_ms);
  }
  return gaps;
}

// Runs `rounds` rounds, each acked on `session` `round_ms` after its trigger; each trigger is
// waited for at most a minute of the manual clock.
void RunRounds(Harness& h, int rounds, Millis round_ms, SessionId session = 1) {
  for (int i = 0; i < rounds; ++i) {
    const size_t before = h.triggers.size();
    for (int step = 0; step < 6000 && h.triggers.size() == before; ++step) h.RunFor(Millis(10));
    ASSERT_GT(h.triggers.size(), before) << "no trigger within a minute";
    h.RunFor(round_ms);
    h.AckAll(h.LastTriggerId(), session);
  }
}

TEST(AdaptiveIntervalCoordinator, SlowRoundsStretchTheIntervalFromTheThirdOn) {
  PipelineSpec spec = MakeSpec();
  spec.interval_ms = 1000;
  spec.max_overhead = 0.25;
  Harness h(spec);
  h.Start();
  h.RegisterAll();
  RunRounds(h, 5, Millis(500));
  // Rounds 1-3 at the interval (the third fixes p95 500 ms / 0.25 = 2 s at its end).
  const std::vector<int64_t> gaps = GapsMs(h, 0);
  ASSERT_EQ(gaps.size(), 4u);
  EXPECT_LE(gaps[0], 1010);
  EXPECT_LE(gaps[1], 1010);
  EXPECT_GE(gaps[2], 2000);
  EXPECT_GE(gaps[3], 2000);
  // p95 510 ms (the rounds are acked 500 ms after a trigger this loop sees 10 ms late) / 0.25.
  EXPECT_EQ(h.c().Describe().effective_interval_ms, 2040);
  EXPECT_EQ(h.c().Explain().effective_interval_ms, 2040);
  const std::string sentence = ExplainSentence(spec.key, h.c().Explain(), 0);
  EXPECT_NE(sentence.find("(interval 1s, effective 2s: p95 510ms of the last 5 rounds"),
            std::string::npos)
      << sentence;
}

TEST(AdaptiveIntervalCoordinator, ABacklogAppliesFromTheNextRoundsEndAndEndsWithItsStream) {
  PipelineSpec spec = MakeSpec();
  spec.interval_ms = 1000;
  spec.max_interval_ms = 10000;
  Harness h(spec);
  h.Start();
  h.RegisterAll();
  RunRounds(h, 1, Millis(0));
  h.Apply(h.c().OnBacklog(1, true));
  EXPECT_EQ(h.c().Describe().effective_interval_ms, 1000) << "fixed when a round ends";
  EXPECT_NE(h.c().Describe().effective_interval_reason.find("until the next round ends"),
            std::string::npos);
  RunRounds(h, 2, Millis(0));  // the first ends the backlog's wait: the second comes 10 s later
  std::vector<int64_t> gaps = GapsMs(h, 0);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_LE(gaps[0], 1010);
  EXPECT_GE(gaps[1], 10000);
  // The stream ends: its backlog is forgotten; the next round's end brings the interval back.
  h.Apply(h.c().OnSessionEnded(1, "gone"));
  h.RegisterAll(2);
  RunRounds(h, 3, Millis(0), 2);
  gaps = GapsMs(h, 2);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_GE(gaps[0], 10000) << "fixed at the last round's end, during the backlog";
  EXPECT_LE(gaps[1], 1010) << "that round's end fixed the interval again";
  EXPECT_LE(gaps[2], 1010);
  EXPECT_EQ(h.c().Describe().effective_interval_ms, 1000);
}

TEST(AdaptiveIntervalCoordinator, ABacklogWithoutMaxIntervalChangesNothing) {
  Harness h(MakeSpec());
  h.Start();
  h.RegisterAll();
  RunRounds(h, 1, Millis(0));
  h.Apply(h.c().OnBacklog(1, true));
  RunRounds(h, 3, Millis(0));
  for (int64_t gap : GapsMs(h, 0)) EXPECT_LE(gap, 1010);
}

}  // namespace
}  // namespace ckpt::testing
