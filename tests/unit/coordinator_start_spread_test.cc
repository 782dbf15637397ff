// The start offset (CoordinatorOptions::start_spread): once its tasks are all registered, and on
// resume, an overdue pipeline's next periodic trigger waits a per-pipeline fraction of
// min(spread, interval), of the interval when no spread is set; one not yet due keeps its
// schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

CoordinatorOptions Spread(std::optional<Millis> spread) {
  CoordinatorOptions options;
  options.start_spread = spread;
  return options;
}

PipelineSpec SpecNamed(const std::string& pipeline, int64_t interval_ms = 1000) {
  PipelineSpec spec = MakeSpec();
  spec.key.pipeline_id = pipeline;
  spec.interval_ms = interval_ms;
  return spec;
}

// Runs until 1 us before `after` has passed, checking that no trigger came, then to `after`,
// checking that exactly one did.
void ExpectOneTriggerAfter(Harness& h, SteadyTime::duration after, const char* why = "") {
  const size_t before = h.triggers.size();
  h.RunFor(after - microseconds(1));
  EXPECT_EQ(h.triggers.size(), before) << why;
  h.RunFor(microseconds(1));
  EXPECT_EQ(h.triggers.size(), before + 1);
}

// Start, every task registered, the first round triggered at `offset` and acked.
void RunFirstRound(Harness& h, SteadyTime::duration offset) {
  h.Start();
  h.RegisterAll();
  h.RunFor(offset);
  ASSERT_EQ(h.triggers.size(), 1u);
  h.AckAll(h.LastTriggerId());
}

// How long after its tasks registered a fresh pipeline's first periodic trigger is due.
SteadyTime::duration OffsetOf(const PipelineSpec& spec, std::optional<Millis> spread,
                              std::optional<uint64_t> slot = std::nullopt) {
  Harness h(spec, 0, Spread(spread));
  if (slot) h.c().SetStartSlot(*slot);
  h.Start();
  const SteadyTime registered = h.clock.SteadyNow();
  h.RegisterAll();
  EXPECT_TRUE(h.wakeup.has_value());
  return h.wakeup.value_or(registered) - registered;
}

TEST(CoordinatorStartSpread, FirstTriggerComesAtTheOffsetAndNotBefore) {
  Harness h(SpecNamed("p7"), 0, Spread(Millis(1000)));
  h.Start();
  const SteadyTime registered = h.clock.SteadyNow();
  h.RegisterAll();
  ASSERT_TRUE(h.wakeup.has_value());
  const auto offset = *h.wakeup - registered;
  ASSERT_GT(offset, microseconds(0)) << "this key's offset is not zero";
  ASSERT_LT(offset, milliseconds(1000));

  ExpectOneTriggerAfter(h, offset, "no periodic trigger before the offset");
  ASSERT_EQ(h.triggers.size(), 1u);
  ASSERT_EQ(h.delays.size(), 1u);
  EXPECT_EQ(h.delays[0], microseconds(0)) << "the offset is part of the due time, not a delay";

  // From then on the interval counts from that trigger as always.
  h.AckAll(h.LastTriggerId());
  ExpectOneTriggerAfter(h, milliseconds(1000));
}

TEST(CoordinatorStartSpread, OffsetsAreFixedPerKeyAndSpreadOverTheSpan) {
  constexpr int kPipelines = 400;
  constexpr int kBins = 10;
  std::vector<int> per_bin(kBins, 0);
  std::set<SteadyTime::duration> distinct;
  for (int i = 0; i < kPipelines; ++i) {
    const PipelineSpec spec = SpecNamed("pipeline-" + std::to_string(i));
    const auto offset = OffsetOf(spec, Millis(1000));
    ASSERT_GE(offset, SteadyTime::duration(0));
    ASSERT_LT(offset, milliseconds(1000));
    EXPECT_EQ(OffsetOf(spec, Millis(1000)), offset) << "the same key, the same offset";
    EXPECT_EQ(StartOffset(StartKeyFraction(spec.key), Millis(1000), spec.interval_ms), offset);
    distinct.insert(offset);
    ++per_bin[std::chrono::duration_cast<microseconds>(offset).count() * kBins / 1'000'000];
  }
  EXPECT_GT(distinct.size(), kPipelines * 9 / 10u);
  // 40 expected per tenth of the span; a fair spread keeps every tenth well above 15.
  for (int bin = 0; bin < kBins; ++bin) EXPECT_GT(per_bin[bin], 15) << "tenth " << bin;
}

TEST(CoordinatorStartSpread, OffsetIsBoundedByTheInterval) {
  for (int i = 0; i < 50; ++i) {
    const auto offset = OffsetOf(SpecNamed("short-" + std::to_string(i), 100), Millis(1000));
    EXPECT_LT(offset, milliseconds(100));
  }
}

TEST(CoordinatorStartSpread, ZeroSpreadTriggersAtOnce) {
  Harness h(SpecNamed("p7"), 0, Spread(Millis(0)));
  h.Start();
  h.RegisterAll();
  h.RunFor(milliseconds(0));
  EXPECT_EQ(h.triggers.size(), 1u);
}

TEST(CoordinatorStartSpread, SavepointsAndManualTriggersDoNotWait) {
  {
    Harness h(SpecNamed("p7"), 0, Spread(Millis(1000)));
    h.Start();
    h.RegisterAll();
    auto asked = h.c().RequestSavepoint("", false, Millis(10000));
    ASSERT_TRUE(asked.status.ok()) << asked.status.ToString();
    h.Apply(asked.actions);
    h.RunFor(milliseconds(0));
    ASSERT_EQ(h.triggers.size(), 1u);
    EXPECT_NE(h.triggers[0].kind, CheckpointKind::kCheckpoint);
  }
  {
    Harness h(SpecNamed("p7"), 0, Spread(Millis(1000)));
    h.Start();
    h.RegisterAll();
    int64_t id = 0;
    auto manual = h.c().TriggerCheckpoint(&id);
    ASSERT_TRUE(manual.status.ok()) << manual.status.ToString();
    h.Apply(manual.actions);
    EXPECT_EQ(h.triggers.size(), 1u);
  }
}

TEST(CoordinatorStartSpread, AnOverduePipelineAfterARestartWaitsItsOffsetToo) {
  const PipelineSpec spec = SpecNamed("p7");
  const auto offset = OffsetOf(spec, Millis(1000));
  StoredPipeline stored;
  stored.record.spec = spec;
  stored.id_counter = 100;
  Harness h(stored, Spread(Millis(1000)));
  stored.record.last_completed_at_ms = h.clock.WallMs() - 60'000;  // a minute overdue
  h.Build(stored, Spread(Millis(1000)));
  h.Start(/*restarted=*/true);
  h.RegisterAll();
  ExpectOneTriggerAfter(h, offset, "every restarted pipeline would fire at once otherwise");
}

TEST(CoordinatorStartSpread, TasksReturningAfterALossWaitTheOffsetAgain) {
  const PipelineSpec spec = SpecNamed("p7");
  const auto offset = OffsetOf(spec, Millis(1000));
  Harness h(spec, 0, Spread(Millis(1000)));
  RunFirstRound(h, offset);
  h.Apply(h.c().OnSessionEnded(1, "worker restarted"));
  h.RunFor(milliseconds(5000));  // long overdue by the time it returns
  h.RegisterAll(2, "w2");
  ExpectOneTriggerAfter(h, offset);
}

TEST(CoordinatorStartSpread, TasksBackBeforeTheOffsetKeepTheFirstHold) {
  const PipelineSpec spec = SpecNamed("p7");
  const auto offset = OffsetOf(spec, Millis(1000));
  ASSERT_GT(offset, milliseconds(20)) << "the test needs room inside the offset";
  Harness h(spec, 0, Spread(Millis(1000)));
  h.Start();
  h.RegisterAll();
  // A worker in a crash loop: lost and back every 5 ms, never holding the set for a whole offset.
  SteadyTime::duration elapsed{0};
  for (SessionId session = 2; elapsed + milliseconds(10) < offset; ++session) {
    h.RunFor(milliseconds(5));
    h.Apply(h.c().OnSessionEnded(session - 1, "crashed"));
    h.RunFor(milliseconds(5));
    h.RegisterAll(session, "w" + std::to_string(session));
    elapsed += milliseconds(10);
  }
  EXPECT_TRUE(h.triggers.empty());
  h.RunFor(offset - elapsed);
  EXPECT_EQ(h.triggers.size(), 1u) << "the trigger comes at the first hold's end";
}

TEST(CoordinatorStartSpread, ResumedPipelinesWaitTheirOffset) {
  const PipelineSpec spec = SpecNamed("p7");
  const auto offset = OffsetOf(spec, Millis(1000));
  Harness h(spec, 0, Spread(Millis(1000)));
  RunFirstRound(h, offset);
  h.Apply(h.c().Pause().actions);
  h.RunFor(milliseconds(5000));  // overdue by the time it resumes
  auto resumed = h.c().Resume();
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
  h.Apply(resumed.actions);
  ExpectOneTriggerAfter(h, offset, "a job's pipelines resumed together would fire together");
}

TEST(CoordinatorStartSpread, DroppingTheMissingTasksFromTheSpecHolds) {
  PipelineSpec spec = SpecNamed("p7");
  spec.task_ids = {"a", "b"};
  const auto offset = OffsetOf(SpecNamed("p7"), Millis(1000));
  Harness h(spec, 0, Spread(Millis(1000)));
  h.Start();
  auto reg = h.c().OnRegister(1, "w1", {"a"}, false);
  ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
  h.Apply(reg.actions);
  spec.task_ids = {"a"};
  auto updated = h.c().UpdateSpec(spec);
  ASSERT_TRUE(updated.status.ok()) << updated.status.ToString();
  h.Apply(updated.actions);
  ExpectOneTriggerAfter(h, offset);
}

TEST(CoordinatorStartSpread, ASavepointQueuedWhileTasksWereMissingStartsWhenTheyRegister) {
  Harness h(SpecNamed("p7"), 0, Spread(Millis(1000)));
  h.Start();
  auto asked = h.c().RequestSavepoint("", false, Millis(10000));
  ASSERT_TRUE(asked.status.ok()) << asked.status.ToString();
  h.Apply(asked.actions);
  h.RunFor(milliseconds(100));
  EXPECT_TRUE(h.triggers.empty()) << "queued: its tasks are missing";
  h.RegisterAll();
  h.RunFor(milliseconds(0));
  ASSERT_EQ(h.triggers.size(), 1u);
  EXPECT_EQ(h.triggers[0].kind, CheckpointKind::kSavepoint);
}

TEST(CoordinatorStartSpread, ATakeoverOfTasksThatWereAllThereDoesNotWait) {
  const PipelineSpec spec = SpecNamed("p7");
  const auto offset = OffsetOf(spec, Millis(1000));
  ASSERT_GT(offset, milliseconds(1)) << "the test needs an offset it can tell apart";
  Harness h(spec, 0, Spread(Millis(1000)));
  RunFirstRound(h, offset);
  // A worker takes every task over 1 ms before the next trigger is due: the set never went
  // incomplete, so the schedule keeps its due time.
  h.RunFor(milliseconds(999));
  auto reg = h.c().OnRegister(2, "w2", spec.task_ids, /*takeover=*/true);
  ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
  h.Apply(reg.actions);
  h.RunFor(milliseconds(1));
  EXPECT_EQ(h.triggers.size(), 2u);
}

// The most of `fractions` that fall in any window [x, x + width) of [0, 1).
size_t MostInAWindow(std::vector<double> fractions, double width) {
  std::sort(fractions.begin(), fractions.end());
  size_t most = 0;
  size_t first = 0;
  for (size_t last = 0; last < fractions.size(); ++last) {
    while (fractions[last] - fractions[first] >= width) ++first;
    most = std::max(most, last - first + 1);
  }
  return most;
}

TEST(CoordinatorStartSpread, AnyRunOfSlotsLeavesNoTenthWithMoreThanAFifth) {
  // A daemon's pipelines, or a job's made one after another: consecutive slots from anywhere.
  for (const uint64_t count : {100u, 137u, 1000u, 10'000u}) {
    for (const uint64_t first : {0u, 1u, 77u, 12'345u, 99'999u}) {
      std::vector<double> fractions;
      for (uint64_t slot = first; slot < first + count; ++slot) {
        const double f = StartSlotFraction(slot);
        ASSERT_GE(f, 0.0);
        ASSERT_LT(f, 1.0);
        fractions.push_back(f);
      }
      const size_t most = MostInAWindow(fractions, 0.1);
      EXPECT_LE(most, count / 5) << count << " slots from " << first;
      // Far better than the bound: a tenth's share plus a few.
      EXPECT_LE(most, count / 10 + 4) << count << " slots from " << first;
    }
  }
}

TEST(CoordinatorStartSpread, TheSlotSetsTheOffsetAndNoSpreadMeansTheWholeInterval) {
  const PipelineSpec spec = SpecNamed("p7", /*interval_ms=*/10'000);
  int beyond_a_second = 0;
  for (uint64_t slot = 0; slot < 50; ++slot) {
    const auto offset = OffsetOf(spec, std::nullopt, slot);
    EXPECT_EQ(offset, StartOffset(StartSlotFraction(slot), std::nullopt, spec.interval_ms));
    EXPECT_LT(offset, milliseconds(10'000));
    if (offset >= milliseconds(1000)) ++beyond_a_second;
  }
  EXPECT_GT(beyond_a_second, 40) << "spread over the whole 10 s interval, not its first second";
  // A spread that is set caps it.
  for (uint64_t slot = 0; slot < 50; ++slot) {
    EXPECT_LT(OffsetOf(spec, Millis(1000), slot), milliseconds(1000));
  }
}

TEST(CoordinatorStartSpread, APipelineNotYetDueAfterARestartKeepsItsSchedule) {
  const PipelineSpec spec = SpecNamed("p7");
  StoredPipeline stored;
  stored.record.spec = spec;
  stored.id_counter = 100;
  stored.record.last_completed_id = 100;
  Harness h(stored, Spread(std::nullopt));
  stored.record.last_completed_at_ms = h.clock.WallMs() - 900;  // due in 100 ms
  h.Build(stored, Spread(std::nullopt));
  h.c().SetStartSlot(1);  // an offset of 618 ms, were it overdue
  ASSERT_GT(StartOffset(StartSlotFraction(1), std::nullopt, 1000), milliseconds(600));
  h.Start(/*restarted=*/true);
  h.RegisterAll();
  ExpectOneTriggerAfter(h, milliseconds(100), "its own schedule, not the start offset");
}

TEST(CoordinatorStartSpread, AResumedPipelineNotYetDueKeepsItsSchedule) {
  Harness h(SpecNamed("p7"), 0, Spread(std::nullopt));
  h.c().SetStartSlot(1);
  const auto offset = StartOffset(StartSlotFraction(1), std::nullopt, 1000);
  RunFirstRound(h, offset);
  h.RunFor(milliseconds(400));
  auto paused = h.c().Pause();
  h.Apply(paused.actions);
  h.RunFor(milliseconds(500));
  auto resumed = h.c().Resume();
  h.Apply(resumed.actions);
  // Triggered 900 ms ago: due in 100 ms, as if it had not been paused (not at its 618 ms offset).
  ExpectOneTriggerAfter(h, milliseconds(100), "a resume of a pipeline not yet due");
}

}  // namespace
}  // namespace ckpt::testing
