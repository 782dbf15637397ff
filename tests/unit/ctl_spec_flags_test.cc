#include <gtest/gtest.h>

#include "ctl/spec_flags.h"

namespace ckpt::ctl {
namespace {

TEST(CtlSpecFlags, FlagsLeftOutStayUnset) {
  SpecFlags flags;
  flags.tasks = "a,b";
  v1::PipelineSpec spec;
  std::string error;
  ASSERT_TRUE(ApplySpecFlags(flags, TasksRule::kRequired, &spec, &error)) << error;
  EXPECT_EQ(spec.task_ids_size(), 2);
  EXPECT_FALSE(spec.has_interval_ms());
  EXPECT_FALSE(spec.has_timeout_ms());
  EXPECT_FALSE(spec.has_min_pause_ms());
  EXPECT_FALSE(spec.has_tolerable_failures());
  EXPECT_FALSE(spec.has_retained());
}

TEST(CtlSpecFlags, EveryFlag) {
  SpecFlags flags;
  flags.parallelism = 3;
  flags.interval = "10s";
  flags.timeout = "10m";
  flags.min_pause = "0s";
  flags.tolerable_failures = 0;
  flags.retained = 5;
  v1::PipelineSpec spec;
  std::string error;
  ASSERT_TRUE(ApplySpecFlags(flags, TasksRule::kRequired, &spec, &error)) << error;
  ASSERT_EQ(spec.task_ids_size(), 3);
  EXPECT_EQ(spec.task_ids(0), "0");
  EXPECT_EQ(spec.task_ids(2), "2");
  EXPECT_EQ(spec.interval_ms(), 10'000);
  EXPECT_EQ(spec.timeout_ms(), 600'000);
  // Zero given explicitly is sent, not left to the defaults.
  EXPECT_TRUE(spec.has_min_pause_ms());
  EXPECT_EQ(spec.min_pause_ms(), 0);
  EXPECT_TRUE(spec.has_tolerable_failures());
  EXPECT_EQ(spec.retained(), 5);
}

TEST(CtlSpecFlags, UpdateMayLeaveTheTasksAlone) {
  SpecFlags flags;
  flags.interval = "1m";
  v1::PipelineSpec spec;
  std::string error;
  ASSERT_TRUE(ApplySpecFlags(flags, TasksRule::kOptional, &spec, &error)) << error;
  EXPECT_EQ(spec.task_ids_size(), 0);
  EXPECT_EQ(spec.interval_ms(), 60'000);
  EXPECT_FALSE(flags.empty());
  EXPECT_TRUE(SpecFlags().empty());
}

TEST(CtlSpecFlags, TaskList) {
  std::string error;
  EXPECT_EQ(ParseTaskList("a, b ,c", &error), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ParseTaskList("only", &error), (std::vector<std::string>{"only"}));
  EXPECT_FALSE(ParseTaskList("a,,b", &error));
  EXPECT_NE(error.find("empty task id"), std::string::npos) << error;
  EXPECT_FALSE(ParseTaskList("a,", &error));
  EXPECT_FALSE(ParseTaskList("", &error));
  EXPECT_FALSE(ParseTaskList("a,b,a", &error));
  EXPECT_NE(error.find("\"a\" appears twice"), std::string::npos) << error;
}

TEST(CtlSpecFlags, BadValuesNameTheFlag) {
  struct Case {
    SpecFlags flags;
    TasksRule rule;
    const char* fragment;
  };
  auto with = [](auto&& set) {
    SpecFlags flags;
    flags.parallelism = 1;
    set(flags);
    return flags;
  };
  const Case cases[] = {
      {SpecFlags(), TasksRule::kRequired, "--tasks a,b,c or --parallelism N"},
      {with([](SpecFlags& f) { f.tasks = "a"; }), TasksRule::kOptional, "not both"},
      {with([](SpecFlags& f) { f.parallelism = 0; }), TasksRule::kRequired, "--parallelism"},
      {with([](SpecFlags& f) { f.parallelism = -2; }), TasksRule::kRequired, "--parallelism"},
      {with([](SpecFlags& f) { f.interval = "10"; }), TasksRule::kRequired,
       "--interval: invalid duration \"10\": needs a unit"},
      {with([](SpecFlags& f) { f.timeout = "-1s"; }), TasksRule::kRequired, "--timeout"},
      {with([](SpecFlags& f) { f.min_pause = "1d"; }), TasksRule::kRequired, "--min-pause"},
      {with([](SpecFlags& f) { f.tolerable_failures = -1; }), TasksRule::kRequired,
       "--tolerable-failures: must be a non-negative number"},
      {with([](SpecFlags& f) { f.retained = 1LL << 40; }), TasksRule::kRequired, "--retained"},
  };
  for (const Case& c : cases) {
    v1::PipelineSpec spec;
    std::string error;
    EXPECT_FALSE(ApplySpecFlags(c.flags, c.rule, &spec, &error)) << c.fragment;
    EXPECT_NE(error.find(c.fragment), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace ckpt::ctl
