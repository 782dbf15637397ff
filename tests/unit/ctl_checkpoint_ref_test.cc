// ckptctl's JOB/PIPELINE[@ID] (--from, --restore-from).
#include "ctl/checkpoint_ref.h"

#include <gtest/gtest.h>

namespace ckpt::ctl {
namespace {

TEST(CtlCheckpointRef, AJobAPipelineAndAnOptionalId) {
  std::string error;
  auto ref = ParseCheckpointRef("etl-v1/orders@42", &error);
  ASSERT_TRUE(ref) << error;
  EXPECT_EQ(ref->job_id(), "etl-v1");
  EXPECT_EQ(ref->pipeline_id(), "orders");
  EXPECT_EQ(ref->checkpoint_id(), 42);
  ref = ParseCheckpointRef("etl/p@0x", &error);
  EXPECT_FALSE(ref);
  ref = ParseCheckpointRef("a@b/p", &error);  // '@' in the job: only the last one counts
  ASSERT_TRUE(ref) << error;
  EXPECT_EQ(ref->job_id(), "a@b");
  EXPECT_EQ(ref->checkpoint_id(), 0) << "no id: the newest";
}

TEST(CtlCheckpointRef, WhatIsNotOfTheFormSaysWhy) {
  for (const char* bad : {"orders", "/p", "etl/", "etl/p@", "etl/p@-3", "etl/p@0", "a/b/c",
                          "etl/p@99999999999999999999"}) {
    std::string error;
    EXPECT_FALSE(ParseCheckpointRef(bad, &error)) << bad;
    EXPECT_NE(error.find("JOB/PIPELINE"), std::string::npos) << bad << ": " << error;
  }
}

}  // namespace
}  // namespace ckpt::ctl
