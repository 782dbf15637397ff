#include "core/spec_validation.h"

#include <gtest/gtest.h>

#include "core/packed_history_entry.h"

namespace ckpt {
namespace {

PipelineSpec ValidSpec() {
  PipelineSpec spec;
  spec.key = {"job", "pipe"};
  spec.task_ids = {"a", "b"};
  return spec;
}

TEST(SpecValidation, AcceptsDefaults) { EXPECT_TRUE(ValidateSpec(ValidSpec()).ok()); }

TEST(SpecValidation, AcceptsWhatTheRulesAllow) {
  PipelineSpec spec = ValidSpec();
  spec.key = {"team \"<a>\" α", "p.1 ..x"};
  spec.task_ids = {"source/0", "with space", "'quoted'", "ü", std::string(256, 'x')};
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec).ToString();
}

TEST(SpecValidation, AStoredSpecKeepsTheRulesItWasCreatedUnder) {
  // The first release accepted "/" and "." in ids: such a pipeline still loads (and can be
  // deleted), though it could not be created again.
  StoredPipeline stored;
  stored.record.spec = ValidSpec();
  stored.record.spec.key.job_id = "team/job";
  stored.record.spec.task_ids = {".", "a"};
  EXPECT_TRUE(ValidateStored(stored).ok()) << ValidateStored(stored).ToString();
  EXPECT_FALSE(ValidateSpec(stored.record.spec).ok());
}

TEST(SpecValidation, RejectsNonsenseWithAReason) {
  struct Case {
    const char* name;
    void (*mutate)(PipelineSpec&);
    const char* expected_fragment;
  };
  const Case cases[] = {
      {"empty job", [](PipelineSpec& s) { s.key.job_id = ""; }, "job_id is empty"},
      {"control char", [](PipelineSpec& s) { s.key.pipeline_id = "a\nb"; }, "control character"},
      {"long id", [](PipelineSpec& s) { s.key.job_id = std::string(300, 'x'); }, "longer than"},
      {"no tasks", [](PipelineSpec& s) { s.task_ids.clear(); }, "task_ids is empty"},
      {"duplicate task",
       [](PipelineSpec& s) {
         s.task_ids = {"a", "a"};
       },
       "duplicate"},
      {"interval too short", [](PipelineSpec& s) { s.interval_ms = 5; }, "interval_ms"},
      {"timeout zero", [](PipelineSpec& s) { s.timeout_ms = 0; }, "timeout_ms"},
      {"negative pause", [](PipelineSpec& s) { s.min_pause_ms = -1; }, "min_pause_ms"},
      {"absurd interval", [](PipelineSpec& s) { s.interval_ms = 1LL << 50; }, "a week"},
      {"negative failures", [](PipelineSpec& s) { s.tolerable_failures = -1; }, "negative"},
      {"retained zero", [](PipelineSpec& s) { s.retained = 0; }, "retained"},
      {"slash in job", [](PipelineSpec& s) { s.key.job_id = "a/b"; }, "contains / or \\"},
      {"backslash in pipeline", [](PipelineSpec& s) { s.key.pipeline_id = "a\\b"; },
       "contains / or \\"},
      {"dot task", [](PipelineSpec& s) { s.task_ids = {"."}; }, "may not be . or .."},
      {"dot dot job", [](PipelineSpec& s) { s.key.job_id = ".."; }, "may not be . or .."},
      {"invalid utf-8", [](PipelineSpec& s) { s.task_ids = {"a\xff"}; }, "not valid UTF-8"},
      {"C1 control", [](PipelineSpec& s) { s.task_ids = {"a\xc2\x9b[31m"}; }, "control character"},
      {"escape", [](PipelineSpec& s) { s.task_ids = {"\x1b[31m"}; }, "control character"},
  };
  for (const auto& c : cases) {
    PipelineSpec spec = ValidSpec();
    c.mutate(spec);
    Status status = ValidateSpec(spec);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(status.message().find(c.expected_fragment), std::string::npos)
        << c.name << ": " << status.message();
  }
}

TEST(SpecValidation, AStoredHistoryHoldsOnlyIdsAPipelineCanHave) {
  StoredPipeline stored;
  stored.record.spec = ValidSpec();
  stored.id_counter = kMaxCheckpointId;
  stored.history = {{1, CheckpointKind::kCheckpoint},
                    {kMaxCheckpointId, CheckpointKind::kSavepoint}};
  EXPECT_TRUE(ValidateStored(stored).ok()) << ValidateStored(stored).ToString();
  for (int64_t id : {int64_t{0}, int64_t{-3}, kMaxCheckpointId + 1, INT64_MAX}) {
    stored.history = {{id, CheckpointKind::kCheckpoint}};
    const Status status = ValidateStored(stored);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_NE(status.message().find("checkpoint id " + std::to_string(id)), std::string::npos)
        << status.message();
  }
}

TEST(SpecValidation, AStoredGroupsCountersStayInRange) {
  StoredGroup group;
  group.spec.name = "ledger";
  group.progress.id_counter = kMaxCheckpointId;
  group.progress.last_round_id = kMaxCheckpointId;
  EXPECT_TRUE(ValidateStoredGroup(group).ok()) << ValidateStoredGroup(group).ToString();
  group.progress.id_counter = kMaxCheckpointId + 1;
  EXPECT_NE(ValidateStoredGroup(group).message().find("id counter is"), std::string::npos);
  group.progress.id_counter = 5;
  group.progress.last_round_id = -1;
  EXPECT_NE(ValidateStoredGroup(group).message().find("last_round_id is -1"), std::string::npos);
  group.progress.last_round_id = 0;
  group.spec.name = "";
  EXPECT_EQ(ValidateStoredGroup(group).code(), StatusCode::kInvalidArgument) << "its spec too";
}

TEST(PackedHistoryEntry, KeepsEveryIdAndKindAHistoryMayHold) {
  static_assert(sizeof(PackedHistoryEntry) == 8);
  const CheckpointKind kinds[] = {CheckpointKind::kCheckpoint, CheckpointKind::kSavepoint,
                                  CheckpointKind::kSavepointAndStop};
  for (int64_t id :
       {int64_t{0}, int64_t{1}, int64_t{12345}, kMaxCheckpointId - 1, kMaxCheckpointId}) {
    for (CheckpointKind kind : kinds) {
      const PackedHistoryEntry packed(HistoryEntry{id, kind});
      EXPECT_EQ(packed.checkpoint_id(), id);
      EXPECT_EQ(packed.kind(), kind) << id;
      EXPECT_EQ(packed.plain(), kind == CheckpointKind::kCheckpoint) << id;
    }
  }
}

TEST(ValidateId, RefusesInvisibleFormatCharacters) {
  // U+202E (right-to-left override), U+200B (zero width space), U+FEFF (byte order mark),
  // U+2066 (isolate), U+00AD (soft hyphen), U+E0041 (a tag character).
  for (const char* id : {"gnp\xe2\x80\xae"
                         "exe",
                         "a\xe2\x80\x8b", "\xef\xbb\xbfjob", "\xe2\x81\xa6x", "soft\xc2\xadhyphen",
                         "t\xf3\xa0\x81\x81g"}) {
    const Status s = ValidateId(id, "job_id");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_NE(s.message().find("format character"), std::string::npos) << s.message();
  }
  // Letters of any script, emoji and a combining accent are not format characters.
  for (const char* id :
       {"job-\xce\xb1", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x9a\x80", "e\xcc\x81"}) {
    EXPECT_TRUE(ValidateId(id, "job_id").ok()) << id << ": " << ValidateId(id, "job_id").message();
  }
}

TEST(ValidateSavepointTarget, TakesAPathUpToItsOwnBoundWithAnIdsCharacterRules) {
  const std::string root = "s3://bucket/savepoints/job/";
  EXPECT_TRUE(ValidateSavepointTarget("").ok()) << "the default location";
  EXPECT_TRUE(ValidateSavepointTarget(root + std::string(kMaxUriBytes - root.size(), 'x')).ok())
      << "a path longer than an id";
  const Status longer = ValidateSavepointTarget(root + std::string(kMaxUriBytes, 'x'));
  EXPECT_EQ(longer.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(longer.message().find("longer than 4096 bytes"), std::string::npos) << longer.message();
  for (const std::string& bad : {root + "a\nb", root + "gnp\xe2\x80\xae" + "exe", root + "\xff"}) {
    EXPECT_EQ(ValidateSavepointTarget(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace ckpt
