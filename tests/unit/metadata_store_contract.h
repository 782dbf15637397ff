#pragma once
// The MetadataStore contract (store/metadata_store.h) as parameterized tests, held against every
// backend: a test program includes this once and instantiates MetadataStoreContract with its
// backends (metadata_store_contract_test.cc: SQLite and the in-memory test backend;
// integration/etcd_store_contract_test.cc: etcd). What one backend passes, any other must.
// One list by design: every backend is held against all of it, and each test program includes it
// once. Split into several headers, each program would have to include every part, and a test added
// to one part could be missed by a backend.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/group_commit_store.h"
#include "store/group_rules.h"
#include "store_test_util.h"
#include "support/scoped_temp_dir.h"

namespace ckpt {
namespace {

namespace fs = std::filesystem;

struct Backend {
  std::string name;
  // Opens a fresh, empty store whose files (if any) go under `dir`.
  std::function<std::unique_ptr<GroupCommitStore>(const fs::path& dir)> open;
};

class MetadataStoreContract : public ::testing::TestWithParam<Backend> {
 protected:
  std::unique_ptr<GroupCommitStore> Open() {
    auto store = GetParam().open(dir_);
    EXPECT_TRUE(store) << GetParam().name << " did not open";
    return store;
  }

  ckpt::testing::ScopedTempDir temp_{"ckptd-store-contract"};
  const fs::path dir_ = temp_.path();
};

TEST_P(MetadataStoreContract, ARecordRoundTripsEveryFieldAndAPutReplacesIt) {
  PipelineRecord r;
  r.spec.key = {"job-α", "pipe 1"};
  r.spec.task_ids = {"source-0", "sink/1", "ü,ber", "with \"quotes\""};
  r.spec.interval_ms = 12345;
  r.spec.timeout_ms = 67890;
  r.spec.min_pause_ms = 111;
  r.spec.tolerable_failures = 3;
  r.spec.retained = 7;
  r.spec.position_interval = 250;
  r.spec.commit_timeout_ms = 45000;
  r.spec.max_overhead = 0.125;
  r.spec.max_interval_ms = 900000;
  r.generation = 42;
  r.last_committed_id = 98;
  r.last_committed_at_ms = 1700000001000;
  r.unrestorable_ids = {90, 97};
  r.restore_from_failed = true;
  r.sticky = StickyState::kStopped;
  r.counters = {5, 6, 7, 2};
  r.last_completed_id = 99;
  r.last_completed_kind = CheckpointKind::kSavepointAndStop;
  r.last_completed_at_ms = 1700000001234;
  r.from_config = true;
  PipelineRecord other = MakeRecord("job-α", "pipe 0");
  other.sticky = StickyState::kPaused;

  auto store = Open();
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(other, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(r.spec.key, 100, done); }).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].record, other);  // ordered by key
  EXPECT_EQ((*loaded)[1].record, r);
  EXPECT_EQ((*loaded)[1].id_counter, 100);

  // Put replaces every field.
  r.sticky = StickyState::kFailed;
  r.spec.task_ids = {"only"};
  r.counters.consecutive_failures = 0;
  r.last_completed_kind = CheckpointKind::kSavepoint;
  r.from_config = false;
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[1].record, r);
}

TEST_P(MetadataStoreContract, TheIdCounterOnlyGrowsAndOutlivesDelete) {
  const PipelineRecord r = MakeRecord("j", "p");
  const PipelineKey key = r.spec.key;
  auto store = Open();
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(key, 100, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(key, 50, done); }).ok());
  EXPECT_EQ(*store->LoadIdCounter(key), 100);
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(key, 200, done); }).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].id_counter, 200);

  Status negative = Await([&](auto done) { store->ReserveIds(key, -1, done); });
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument) << negative.ToString();

  ASSERT_TRUE(Await([&](auto done) { store->DeletePipeline(key, done); }).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty());
  EXPECT_EQ(*store->LoadIdCounter(key), 200);
  EXPECT_EQ(*store->LoadIdCounter({"j", "never"}), 0);

  // Re-created under the same name: the counter is still there.
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].id_counter, 200);
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(key, 150, done); }).ok());
  EXPECT_EQ(*store->LoadIdCounter(key), 200);
}

TEST_P(MetadataStoreContract, ACommitIsListedNewestFirstWithItsTaskStates) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p");
  const PipelineRecord neighbour = MakeRecord("j", "q");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(neighbour, done); }).ok());
  std::vector<CompletedCheckpoint> committed;
  for (int64_t id : {1, 2, 4}) {
    CompletedCheckpoint cp =
        MakeCheckpoint(id, id == 2 ? CheckpointKind::kSavepoint : CheckpointKind::kCheckpoint);
    r.counters.completed_count += 1;
    r.last_completed_id = id;
    r.last_completed_kind = cp.kind;
    r.last_completed_at_ms = cp.finished_at_ms;
    ASSERT_TRUE(Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, cp), done); }).ok());
    committed.insert(committed.begin(), cp);
  }
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(neighbour, MakeCheckpoint(3)), done);
              }).ok());

  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(*listed, committed);  // newest first, every field and task state intact
  EXPECT_EQ((*listed)[1].location, "s3://bucket/sp-2");
  EXPECT_EQ((*listed)[0].task_states.at("1").size_bytes, 204);

  listed = store->ListCompleted(r.spec.key, 2);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{4, 2}));
  listed = store->ListCompleted({"j", "unknown"}, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());

  // The record was written in the same transaction, and the counter covers the ids.
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].record, r);
  EXPECT_EQ((*loaded)[0].id_counter, 4);
  EXPECT_EQ((*loaded)[1].record, neighbour);

  Status bad =
      Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(0)), done); });
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.ToString();
}

TEST_P(MetadataStoreContract, RetentionTrimsCheckpointsButKeepsSavepoints) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/3);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  for (int64_t id = 1; id <= 10; ++id) {
    CheckpointKind kind = id == 4 || id == 7 ? CheckpointKind::kSavepoint
                          : id == 8          ? CheckpointKind::kSavepointAndStop
                                             : CheckpointKind::kCheckpoint;
    store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id, kind)),
                            [](Status s) { EXPECT_TRUE(s.ok()) << s.ToString(); });
  }
  store->Flush();
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  // Checkpoints 1 2 3 5 6 9 10: the 3 newest stay. Savepoints 4 7 8 all stay.
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{10, 9, 8, 7, 6, 4}));

  // A smaller window applies from the next commit on.
  r.spec.retained = 1;
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(11)), done);
              }).ok());
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{11, 8, 7, 4}));
}

TEST_P(MetadataStoreContract, ALoadReturnsEachPipelinesHistoryAndItsNewestCheckpointWithStates) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/3);
  PipelineRecord fresh = MakeRecord("j", "q");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(fresh, done); }).ok());
  CompletedCheckpoint newest;
  for (int64_t id = 1; id <= 10; ++id) {
    CheckpointKind kind = id == 4 || id == 7 ? CheckpointKind::kSavepoint
                          : id == 8          ? CheckpointKind::kSavepointAndStop
                                             : CheckpointKind::kCheckpoint;
    newest = MakeCheckpoint(id, kind);
    r.last_completed_id = id;
    r.last_completed_kind = kind;
    ASSERT_TRUE(Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, newest), done); }).ok());
  }
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 2u);
  const StoredPipeline& p =
      (*loaded)[0].record.spec.key.pipeline_id == "p" ? (*loaded)[0] : (*loaded)[1];
  const StoredPipeline& q = &p == &(*loaded)[0] ? (*loaded)[1] : (*loaded)[0];
  // Checkpoints 1 2 3 5 6 9 10: the 3 newest stay; savepoints 4 7 8 all stay; oldest first.
  EXPECT_EQ(p.history, (std::vector<HistoryEntry>{{4, CheckpointKind::kSavepoint},
                                                  {6, CheckpointKind::kCheckpoint},
                                                  {7, CheckpointKind::kSavepoint},
                                                  {8, CheckpointKind::kSavepointAndStop},
                                                  {9, CheckpointKind::kCheckpoint},
                                                  {10, CheckpointKind::kCheckpoint}}));
  ASSERT_TRUE(p.newest.has_value()) << "the restore point with its task states";
  EXPECT_EQ(*p.newest, newest);
  EXPECT_TRUE(q.history.empty());
  EXPECT_FALSE(q.newest.has_value());
}

TEST_P(MetadataStoreContract, DeletedCheckpointsLeaveTheHistoryAndTheLoad) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/3);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  for (int64_t id = 1; id <= 5; ++id) {
    const CheckpointKind kind = id == 2 ? CheckpointKind::kSavepoint : CheckpointKind::kCheckpoint;
    r.last_completed_id = id;
    r.last_completed_kind = kind;
    ASSERT_TRUE(Await([&](auto done) {
                  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id, kind)), done);
                }).ok());
  }
  // A savepoint and a retained checkpoint; 99 was never stored and is skipped.
  ASSERT_TRUE(Await([&](auto done) {
                store->DeleteCheckpoints(r.spec.key, {2, 3, 99}, done);
              }).ok());
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{5, 4}));
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].history, (std::vector<HistoryEntry>{{4, CheckpointKind::kCheckpoint},
                                                             {5, CheckpointKind::kCheckpoint}}));
  EXPECT_EQ((*loaded)[0].record, r) << "the progress is untouched";
  // The next commit trims as before: 4 5 6 fit in retained 3.
  r.last_completed_id = 6;
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(6)), done);
              }).ok());
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{6, 5, 4}));
  EXPECT_EQ(Await([&](auto done) {
              store->DeleteCheckpoints({"j", "gone"}, {1}, done);
            }).code(),
            StatusCode::kNotFound);
}

TEST_P(MetadataStoreContract, ACommitSparesTheRestorePointsItIsToldToKeep) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/2);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  auto commit = [&](int64_t id, std::vector<int64_t> keep) {
    r.last_completed_id = id;
    CheckpointCommit c = CommitOf(r, MakeCheckpoint(id));
    c.keep = std::move(keep);
    return Await([&](auto done) { store->CommitCheckpoint(c, done); });
  };
  ASSERT_TRUE(commit(1, {}).ok());
  ASSERT_TRUE(commit(2, {}).ok());
  for (int64_t id = 3; id <= 12; ++id) ASSERT_TRUE(commit(id, {2}).ok());
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{12, 11, 2})) << "2 is a restore point";
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].history, (std::vector<HistoryEntry>{{2, CheckpointKind::kCheckpoint},
                                                             {11, CheckpointKind::kCheckpoint},
                                                             {12, CheckpointKind::kCheckpoint}}));
  // The pin is gone: its pipeline deletes it (or the next commits trim it).
  ASSERT_TRUE(Await([&](auto done) { store->DeleteCheckpoints(r.spec.key, {2}, done); }).ok());
  ASSERT_TRUE(commit(13, {}).ok());
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{13, 12}));
}

TEST_P(MetadataStoreContract, AnOperatorSetRestorePointRoundTripsAndACommitClearsIt) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  r.restore_from = CheckpointRef{{"other job", "p/ü"}, 41};
  r.released_ids = {3, 7, 12};
  ASSERT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, r.progress(), done); }).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record, r);
  r.restore_from.reset();
  r.last_completed_id = 1;
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), done);
              }).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE((*loaded)[0].record.restore_from.has_value());
  // And a whole record carries it too.
  r.restore_from = CheckpointRef{{"j", "p"}, 1};
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)[0].record, r);
}

TEST_P(MetadataStoreContract, WhatLeftTheHistoryStaysOutOfItWhenTheWindowGrows) {
  auto store = Open();
  // Retained 8: after 15 commits, 8 to 15 are the history and 1 to 7 are out of it (a backend
  // may still hold them: etcd deletes them once 8 have piled up).
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/8);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  for (int64_t id = 1; id <= 15; ++id) {
    ASSERT_TRUE(Await([&](auto done) {
                  store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)), done);
                }).ok());
  }
  auto listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{15, 14, 13, 12, 11, 10, 9, 8}));
  r.spec.retained = 12;  // grows: 5, 6, 7 must not come back
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(16)), done);
              }).ok());
  listed = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{16, 15, 14, 13, 12, 11, 10, 9, 8}));
  listed = store->ListCompleted(r.spec.key, 2, /*before_id=*/9);  // a page below 9
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{8}));
}

TEST_P(MetadataStoreContract, ALoadReturnsTheProgressOfTheLastWriteCommitOrProgress) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/2);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  auto commit = [&](int64_t id, CheckpointKind kind) {
    CompletedCheckpoint cp = MakeCheckpoint(id, kind);
    r.counters.completed_count += 1;
    r.counters.consecutive_failures = 0;
    r.last_completed_id = id;
    r.last_completed_kind = kind;
    r.last_completed_at_ms = cp.finished_at_ms;
    if (kind == CheckpointKind::kSavepointAndStop) r.sticky = StickyState::kStopped;
    return Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, cp), done); });
  };
  auto loaded_record = [&]() -> PipelineRecord {
    auto loaded = store->LoadPipelines();
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok() || loaded->size() != 1) return {};
    return (*loaded)[0].record;
  };
  for (int64_t id = 1; id <= 4; ++id) ASSERT_TRUE(commit(id, CheckpointKind::kCheckpoint).ok());
  EXPECT_EQ(loaded_record(), r);

  r.counters.failed_count += 1;  // a failed round: progress alone
  r.counters.consecutive_failures = 1;
  ASSERT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, r.progress(), done); }).ok());
  EXPECT_EQ(loaded_record(), r);

  ASSERT_TRUE(commit(5, CheckpointKind::kCheckpoint).ok());
  EXPECT_EQ(loaded_record(), r);
  ASSERT_TRUE(commit(6, CheckpointKind::kSavepointAndStop).ok());
  EXPECT_EQ(loaded_record(), r);
  EXPECT_EQ(loaded_record().sticky, StickyState::kStopped);

  // Both in one batch, progress first: the commit's is the last.
  WriterGate gate;
  store->Probe(gate.Callback());
  ASSERT_TRUE(gate.WaitEntered());
  r.sticky = StickyState::kPaused;
  r.counters.failed_count += 1;
  Outcomes outcomes;
  store->PutProgress(r.spec.key, r.progress(), outcomes.Record(1));
  CompletedCheckpoint seventh = MakeCheckpoint(7);
  r.counters.completed_count += 1;
  r.last_completed_id = 7;
  r.last_completed_kind = seventh.kind;
  r.last_completed_at_ms = seventh.finished_at_ms;
  store->CommitCheckpoint(CommitOf(r, seventh), outcomes.Record(2));
  gate.Release();
  store->Flush();
  for (const auto& [n, s] : outcomes.seen()) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  EXPECT_EQ(loaded_record(), r);

  // Two commits in one batch: the second's. Then a commit and a progress after it: the progress.
  // (Ids from a reserved block, as a coordinator's are: no counter write between them.)
  ASSERT_TRUE(Await([&](auto done) { store->ReserveIds(r.spec.key, 1000, done); }).ok());
  auto in_one_batch = [&](const std::function<void(Outcomes&)>& queue) {
    WriterGate held;
    store->Probe(held.Callback());
    ASSERT_TRUE(held.WaitEntered());
    Outcomes seen;
    queue(seen);
    held.Release();
    store->Flush();
    for (const auto& [n, s] : seen.seen()) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  };
  auto next_commit = [&](int64_t id) {
    CompletedCheckpoint cp = MakeCheckpoint(id);
    r.counters.completed_count += 1;
    r.last_completed_id = id;
    r.last_completed_kind = cp.kind;
    r.last_completed_at_ms = cp.finished_at_ms;
    return CommitOf(r, cp);
  };
  in_one_batch([&](Outcomes& seen) {
    store->CommitCheckpoint(next_commit(8), seen.Record(8));
    store->CommitCheckpoint(next_commit(9), seen.Record(9));
  });
  EXPECT_EQ(loaded_record(), r);
  in_one_batch([&](Outcomes& seen) {
    store->CommitCheckpoint(next_commit(10), seen.Record(10));
    r.sticky = StickyState::kFailed;
    r.counters.failed_count += 1;
    store->PutProgress(r.spec.key, r.progress(), seen.Record(11));
  });
  EXPECT_EQ(loaded_record(), r);
}

// The commit phase (docs/PROTOCOL.md, "Commit phase"): a checkpoint is written COMMITTING, and
// its COMMITTED mark is a progress write naming it. Read together (ApplyProgressMarks), the load
// and the listing say COMMITTED with the mark's time, whatever the backend keeps where; one not
// yet marked stays COMMITTING, and one written without the phase stays NONE.
TEST_P(MetadataStoreContract, TheCommittedMarkRidesWithTheProgressAndMarksItsCheckpoint) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p");
  r.spec.commit_timeout_ms = 60000;
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  auto commit = [&](int64_t id, CommitStatus status) {
    CompletedCheckpoint cp = MakeCheckpoint(id);
    cp.commit_status = status;
    r.counters.completed_count += 1;
    r.last_completed_id = id;
    r.last_completed_kind = cp.kind;
    r.last_completed_at_ms = cp.finished_at_ms;
    return Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, cp), done); });
  };
  auto listed = [&]() {
    auto list = store->ListCompleted(r.spec.key, 0);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    std::vector<CompletedCheckpoint> out = list.ok() ? *list : std::vector<CompletedCheckpoint>{};
    auto loaded = store->LoadPipelines();
    EXPECT_TRUE(loaded.ok() && loaded->size() == 1u);
    if (loaded.ok() && loaded->size() == 1u) {
      for (CompletedCheckpoint& cp : out) ApplyProgressMarks((*loaded)[0].record.progress(), cp);
    }
    return out;
  };
  ASSERT_TRUE(commit(1, CommitStatus::kNone).ok());
  ASSERT_TRUE(commit(2, CommitStatus::kCommitting).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok() && loaded->size() == 1u);
  ASSERT_TRUE((*loaded)[0].newest.has_value());
  EXPECT_EQ((*loaded)[0].newest->commit_status, CommitStatus::kCommitting);
  EXPECT_EQ((*loaded)[0].record.spec.commit_timeout_ms, 60000);
  EXPECT_EQ((*loaded)[0].record.last_committed_id, 0);

  r.last_committed_id = 2;
  r.last_committed_at_ms = 1700000009999;
  ASSERT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, r.progress(), done); }).ok());
  auto list = listed();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].commit_status, CommitStatus::kCommitted);
  EXPECT_EQ(list[0].committed_at_ms, 1700000009999);
  EXPECT_EQ(list[1].commit_status, CommitStatus::kNone);
  EXPECT_EQ(list[1].committed_at_ms, 0);

  // The next one is COMMITTING while the one before stays COMMITTED.
  ASSERT_TRUE(commit(3, CommitStatus::kCommitting).ok());
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok() && loaded->size() == 1u);
  EXPECT_EQ((*loaded)[0].record, r);
  EXPECT_EQ((*loaded)[0].newest->commit_status, CommitStatus::kCommitting);
  list = listed();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].commit_status, CommitStatus::kCommitting);
  EXPECT_EQ(list[1].commit_status, CommitStatus::kCommitted);
}

// Verified restore (docs/PROTOCOL.md): the unrestorable marks ride with the progress, written
// alone or with a commit, and mark their checkpoints when listed (ApplyProgressMarks).
TEST_P(MetadataStoreContract, TheUnrestorableMarksRideWithTheProgressAndMarkTheirCheckpoints) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  auto commit = [&](int64_t id) {
    CompletedCheckpoint cp = MakeCheckpoint(id);
    r.counters.completed_count += 1;
    r.last_completed_id = id;
    r.last_completed_kind = cp.kind;
    r.last_completed_at_ms = cp.finished_at_ms;
    return Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, cp), done); });
  };
  auto loaded_marks = [&]() {
    auto loaded = store->LoadPipelines();
    EXPECT_TRUE(loaded.ok() && loaded->size() == 1u);
    return loaded.ok() && loaded->size() == 1u ? (*loaded)[0].record.unrestorable_ids
                                               : std::vector<int64_t>{99999};
  };
  ASSERT_TRUE(commit(1).ok());
  ASSERT_TRUE(commit(2).ok());
  r.unrestorable_ids = {2};
  ASSERT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, r.progress(), done); }).ok());
  EXPECT_EQ(loaded_marks(), std::vector<int64_t>{2});
  ASSERT_TRUE(commit(3).ok());  // the progress after it keeps the mark
  EXPECT_EQ(loaded_marks(), std::vector<int64_t>{2});

  auto list = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  for (CompletedCheckpoint& cp : *list) ApplyProgressMarks(r.progress(), cp);
  EXPECT_FALSE((*list)[0].unrestorable);
  EXPECT_TRUE((*list)[1].unrestorable) << "checkpoint 2";
  EXPECT_FALSE((*list)[2].unrestorable);
}

TEST_P(MetadataStoreContract, ADuplicateCheckpointIdFailsOnlyThatOpOfItsBatch) {
  auto store = Open();
  PipelineRecord a = MakeRecord("j", "a");
  PipelineRecord b = MakeRecord("j", "b");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(a, done); }).ok());
  a.counters.completed_count = 1;

  WriterGate gate;
  store->ReserveIds(a.spec.key, 10, gate.Callback());
  ASSERT_TRUE(gate.WaitEntered());
  const uint64_t batches_before = store->batches_committed();

  Outcomes outcomes;
  CompletedCheckpoint first = MakeCheckpoint(1);
  CompletedCheckpoint duplicate = MakeCheckpoint(1);
  duplicate.location = "must not overwrite";
  PipelineRecord a_dup = a;
  a_dup.counters.completed_count = 99;  // must be rolled back with its op
  store->CommitCheckpoint(CommitOf(a, first), outcomes.Record(0));
  store->CommitCheckpoint(CommitOf(a_dup, duplicate), outcomes.Record(1));
  store->PutPipeline(b, outcomes.Record(2));
  store->CommitCheckpoint(CommitOf(b, MakeCheckpoint(1)), outcomes.Record(3));
  gate.Release();
  store->Flush();

  const auto results = outcomes.seen();
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(results[i].first, i);  // in call order
  EXPECT_TRUE(results[0].second.ok()) << results[0].second.ToString();
  EXPECT_EQ(results[1].second.code(), StatusCode::kAlreadyExists) << results[1].second.ToString();
  EXPECT_NE(results[1].second.message().find("checkpoint 1 of j/a"), std::string::npos)
      << results[1].second.message();
  EXPECT_TRUE(results[2].second.ok()) << results[2].second.ToString();
  EXPECT_TRUE(results[3].second.ok()) << results[3].second.ToString();
  EXPECT_EQ(store->batches_committed(), batches_before + 1) << "the four ops shared one batch";

  auto listed = store->ListCompleted(a.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0], first);
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].record, a);
  EXPECT_EQ((*loaded)[1].record, b);
}

TEST_P(MetadataStoreContract, ProgressIsWrittenAloneAndNeverRevivesADeletedPipeline) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  PipelineProgress progress = r.progress();
  progress.generation = 9;
  progress.sticky = StickyState::kPaused;
  ASSERT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, progress, done); }).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].record.progress(), progress);
  EXPECT_EQ((*loaded)[0].record.spec, r.spec) << "the spec is untouched";

  ASSERT_TRUE(Await([&](auto done) { store->DeletePipeline(r.spec.key, done); }).ok());
  EXPECT_TRUE(Await([&](auto done) { store->PutProgress(r.spec.key, progress, done); }).ok());
  Status commit =
      Await([&](auto done) { store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(1)), done); });
  EXPECT_EQ(commit.code(), StatusCode::kNotFound) << commit.ToString();
  loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty()) << "a late write must not bring a deleted pipeline back";
  auto history = store->ListCompleted(r.spec.key, 0);
  ASSERT_TRUE(history.ok());
  EXPECT_TRUE(history->empty());
}

TEST_P(MetadataStoreContract, TheHistoryIsReadInPagesBelowAnId) {
  auto store = Open();
  PipelineRecord r = MakeRecord("j", "p", /*retained=*/100);
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
  for (int64_t id = 1; id <= 7; ++id) {
    store->CommitCheckpoint(CommitOf(r, MakeCheckpoint(id)),
                            [](Status s) { EXPECT_TRUE(s.ok()) << s.ToString(); });
  }
  store->Flush();
  auto page = store->ListCompleted(r.spec.key, 3);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Ids(*page), (std::vector<int64_t>{7, 6, 5}));
  page = store->ListCompleted(r.spec.key, 3, /*before_id=*/5);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Ids(*page), (std::vector<int64_t>{4, 3, 2}));
  page = store->ListCompleted(r.spec.key, 3, /*before_id=*/2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Ids(*page), (std::vector<int64_t>{1}));
  page = store->ListCompleted(r.spec.key, 0, /*before_id=*/1);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->empty());
}

AlignmentGroupSpec MakeGroupSpec(const std::string& name, int64_t interval_ms = 1000) {
  AlignmentGroupSpec spec;
  spec.name = name;
  spec.interval_ms = interval_ms;
  spec.timeout_ms = 5000;
  spec.min_pause_ms = 10;
  spec.position_interval = 100;
  return spec;
}

// A group round of `id` for every record of `members`, each with its completion counted.
GroupRoundCommit GroupRoundOf(const std::string& group, std::vector<PipelineRecord*> members,
                              int64_t id) {
  GroupRoundCommit round;
  round.group = group;
  round.progress_after = {id, id, id * 1000, 1700000000000 + id};
  for (PipelineRecord* r : members) {
    CompletedCheckpoint cp = MakeCheckpoint(id);
    cp.alignment_group = group;
    cp.position = id * 1000;
    r->counters.completed_count += 1;
    r->last_completed_id = id;
    r->last_completed_at_ms = cp.finished_at_ms;
    round.members.push_back(CommitOf(*r, cp));
  }
  return round;
}

TEST_P(MetadataStoreContract, GroupsRoundTripAndTheirCounterOnlyGrows) {
  auto store = Open();
  const AlignmentGroupSpec a = MakeGroupSpec("ledger");
  const AlignmentGroupSpec b = MakeGroupSpec("blocks", 2000);
  ASSERT_TRUE(Await([&](auto done) { store->PutGroup(a, false, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->PutGroup(b, true, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveGroupIds("ledger", 100, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveGroupIds("ledger", 50, done); }).ok());
  Status missing = Await([&](auto done) { store->ReserveGroupIds("nope", 10, done); });
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.ToString();
  auto loaded = store->LoadGroups();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0], (StoredGroup{b, {}, true})) << "in name order";
  EXPECT_EQ((*loaded)[1], (StoredGroup{a, {100, 0, 0, 0}, false})) << "never lowered";

  // A put replaces the spec and keeps the progress; a delete removes the group.
  AlignmentGroupSpec changed = a;
  changed.interval_ms = 5000;
  changed.position_interval = 0;
  changed.max_overhead = 0.05;
  changed.max_interval_ms = 600000;
  ASSERT_TRUE(Await([&](auto done) { store->PutGroup(changed, true, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->DeleteGroup("blocks", done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->DeleteGroup("blocks", done); }).ok());
  loaded = store->LoadGroups();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0], (StoredGroup{changed, {100, 0, 0, 0}, true}));
}

TEST_P(MetadataStoreContract, AGroupRoundIsCommittedForEveryMemberOrForNone) {
  auto store = Open();
  PipelineRecord p = MakeRecord("j", "p");
  PipelineRecord q = MakeRecord("k", "q");
  p.spec.alignment_group = q.spec.alignment_group = "ledger";
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(p, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(q, done); }).ok());
  ASSERT_TRUE(
      Await([&](auto done) { store->PutGroup(MakeGroupSpec("ledger"), false, done); }).ok());
  ASSERT_TRUE(Await([&](auto done) { store->ReserveGroupIds("ledger", 200, done); }).ok());

  const GroupRoundCommit first = GroupRoundOf("ledger", {&p, &q}, 4);
  Status s = Await([&](auto done) { store->CommitGroupRound(first, done); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (const CheckpointCommit& member : first.members) {
    auto listed = store->ListCompleted(member.key, 0);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 1u) << member.key.ToString();
    EXPECT_EQ((*listed)[0], member.checkpoint) << "with its group name and position";
  }
  auto groups = store->LoadGroups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].progress, (GroupProgress{200, 4, 4000, 1700000000004}))
      << "the round's progress, the counter the larger of the two";

  // q holds id 9 already: a round of 9 writes nothing for p either, nor the group's progress.
  PipelineRecord q_alone = q;
  ASSERT_TRUE(Await([&](auto done) {
                store->CommitCheckpoint(CommitOf(q_alone, MakeCheckpoint(9)), done);
              }).ok());
  PipelineRecord p_before = p;
  const GroupRoundCommit clash = GroupRoundOf("ledger", {&p, &q}, 9);
  s = Await([&](auto done) { store->CommitGroupRound(clash, done); });
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  auto listed = store->ListCompleted(p.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{4})) << "nothing of the round for p";
  groups = store->LoadGroups();
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ((*groups)[0].progress.last_round_id, 4);

  // A member without a record, or a group without one: nothing written.
  PipelineRecord ghost = MakeRecord("j", "ghost");
  p = p_before;
  const GroupRoundCommit with_ghost = GroupRoundOf("ledger", {&p, &ghost}, 10);
  s = Await([&](auto done) { store->CommitGroupRound(with_ghost, done); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  p = p_before;
  const GroupRoundCommit no_group = GroupRoundOf("gone", {&p}, 11);
  s = Await([&](auto done) { store->CommitGroupRound(no_group, done); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  listed = store->ListCompleted(p.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed), (std::vector<int64_t>{4}));

  // The load after a round: each member's progress and its newest checkpoint are the round's.
  p = p_before;
  const GroupRoundCommit next = GroupRoundOf("ledger", {&p, &q}, 12);
  ASSERT_TRUE(Await([&](auto done) { store->CommitGroupRound(next, done); }).ok());
  auto loaded = store->LoadPipelines();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].record, p);
  EXPECT_EQ((*loaded)[1].record, q);
  ASSERT_TRUE((*loaded)[0].newest.has_value());
  EXPECT_EQ(*(*loaded)[0].newest, next.members[0].checkpoint);
  EXPECT_EQ((*loaded)[1].id_counter, 12);
}

TEST_P(MetadataStoreContract, GroupWritesEveryBackendRefusesAlike) {
  auto store = Open();
  ASSERT_TRUE(
      Await([&](auto done) { store->PutGroup(MakeGroupSpec("ledger"), false, done); }).ok());
  Status s = Await([&](auto done) { store->PutGroup(MakeGroupSpec("a/b"), false, done); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = Await([&](auto done) { store->ReserveGroupIds("ledger", -1, done); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  PipelineRecord p = MakeRecord("j", "p");
  ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(p, done); }).ok());
  GroupRoundCommit twice = GroupRoundOf("ledger", {&p}, 3);
  twice.members.push_back(twice.members.front());
  s = Await([&](auto done) { store->CommitGroupRound(twice, done); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  std::vector<PipelineRecord> many;
  for (size_t m = 0; m <= kMaxGroupMembers; ++m) many.push_back(MakeRecord("j", std::to_string(m)));
  std::vector<PipelineRecord*> members;
  for (PipelineRecord& r : many) {
    ASSERT_TRUE(Await([&](auto done) { store->PutPipeline(r, done); }).ok());
    members.push_back(&r);
  }
  s = Await([&](auto done) { store->CommitGroupRound(GroupRoundOf("ledger", members, 4), done); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (const PipelineRecord& r : many) {
    auto listed = store->ListCompleted(r.spec.key, 0);
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->empty()) << "the oversized round wrote " << r.spec.key.ToString();
  }
  auto listed = store->ListCompleted(p.spec.key, 0);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty()) << "nothing written by any refused round";
  auto groups = store->LoadGroups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ(groups->front().progress, GroupProgress{});
}

}  // namespace
}  // namespace ckpt
