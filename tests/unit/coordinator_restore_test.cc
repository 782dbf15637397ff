// The restore loop in the coordinator (docs/PROTOCOL.md, "Restore and release"): which restore
// point a welcome names and with which task states, and which checkpoints a completion releases.
// One mechanism seen from each side: what a welcome hands out as the restore point is what a
// release, a checkpoint delete, the savepoint cap and a pin must leave alone, and a restore from
// another pipeline pins its source; the tests share the rounds and pins helpers here and are read
// side by side. Not split for that reason.
#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

// A pipeline that restores from the tested one's checkpoints.
const PipelineKey kOther{"job-v2", "pipe"};

using std::chrono::milliseconds;

// One round triggered and completed on session 1 (which holds every task).
int64_t CompleteOneRound(Harness& h) {
  h.RunFor(milliseconds(1000));
  const int64_t id = h.LastTriggerId();
  h.AckAll(id);
  return id;
}

PipelineCoordinator::Registration Register(Harness& h, SessionId session,
                                           std::vector<std::string> tasks, bool takeover = true) {
  auto reg = h.c().OnRegister(session, "w" + std::to_string(session), tasks, takeover);
  EXPECT_TRUE(reg.status.ok()) << reg.status.ToString();
  h.Apply(reg.actions);
  return reg;
}

std::vector<int64_t> ReleasedIn(const Actions& actions) {
  std::vector<int64_t> ids;
  for (const auto& release : ActionsOf<SendRelease>(actions)) {
    ids.insert(ids.end(), release.checkpoint_ids.begin(), release.checkpoint_ids.end());
  }
  return ids;
}

TEST(CoordinatorRestore, AFreshPipelineNamesNoRestorePoint) {
  Harness h;
  h.Start();
  auto reg = Register(h, 1, {"a", "b"}, false);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 0);
  EXPECT_TRUE(reg.welcome.restore.task_states.empty());
  EXPECT_TRUE(reg.welcome.retained_checkpoint_ids.empty());
}

TEST(CoordinatorRestore, AWelcomeHandsOverTheNewestDurableCheckpointOfTheHellosTasksOnly) {
  Harness h;
  const int64_t first = h.StartToFirstTrigger();
  h.AckAll(first);
  const int64_t second = CompleteOneRound(h);
  ASSERT_GT(second, first);

  // A worker of task b comes back (taking b over from session 1).
  auto reg = Register(h, 2, {"b"});
  const RestorePoint& restore = reg.welcome.restore;
  EXPECT_EQ(restore.checkpoint_id, second);
  EXPECT_EQ(restore.kind, CheckpointKind::kCheckpoint);
  EXPECT_EQ(restore.source, (PipelineKey{"job", "pipe"}));
  EXPECT_FALSE(restore.rescaled);
  ASSERT_EQ(restore.task_states.size(), 1u) << "only the states of the tasks the hello registers";
  EXPECT_EQ(restore.task_states.at("b").uri, "mem://b");
  EXPECT_EQ(reg.welcome.retained_checkpoint_ids, (std::vector<int64_t>{first, second}));
}

TEST(CoordinatorRestore, ARoundTheStoreHasNotMadeDurableIsNotHandedOut) {
  Harness h;
  const int64_t first = h.StartToFirstTrigger();
  h.AckAll(first);
  h.auto_commit = false;
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  h.AckAll(second);
  ASSERT_EQ(h.commits.size(), 2u) << "the second round is with the store";

  auto during = Register(h, 2, {"a"});
  EXPECT_EQ(during.welcome.restore.checkpoint_id, first) << "not durable yet";
  EXPECT_EQ(during.welcome.retained_checkpoint_ids, std::vector<int64_t>{first});

  h.Apply(h.c().OnCommitted(second));
  auto after = Register(h, 3, {"a"});
  EXPECT_EQ(after.welcome.restore.checkpoint_id, second);
}

TEST(CoordinatorRestore, AFailedCommitLeavesTheRestorePointWhereItWas) {
  Harness h;
  const int64_t first = h.StartToFirstTrigger();
  h.AckAll(first);
  h.auto_commit = false;
  h.RunFor(milliseconds(1000));
  const int64_t second = h.LastTriggerId();
  h.AckAll(second);
  h.Apply(h.c().OnCommitFailed(second, Status::Unavailable("disk full")));
  auto reg = Register(h, 2, {"a"});
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, first);
  EXPECT_EQ(reg.welcome.retained_checkpoint_ids, std::vector<int64_t>{first});
}

TEST(CoordinatorRestore, APipelineLoadedFromTheStoreRestoresFromItsNewestCheckpoint) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.last_completed_id = 7;
  stored.id_counter = 100;
  stored.history = {{3, CheckpointKind::kSavepoint},
                    {6, CheckpointKind::kCheckpoint},
                    {7, CheckpointKind::kCheckpoint}};
  CompletedCheckpoint newest;
  newest.checkpoint_id = 7;
  newest.task_states = {{"a", {"s3://a-7", 10, "x"}}, {"b", {"s3://b-7", 20, "y"}}};
  stored.newest = newest;
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  auto reg = Register(h, 1, {"a", "b"}, false);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 7);
  EXPECT_EQ(reg.welcome.restore.task_states, newest.task_states);
  EXPECT_EQ(reg.welcome.retained_checkpoint_ids, (std::vector<int64_t>{3, 6, 7}));
}

TEST(CoordinatorRestore, ATaskSetOtherThanTheCheckpointsIsARescaleWithEveryState) {
  StoredPipeline stored;
  stored.record.spec = MakeSpec({"a", "b", "c"});
  stored.record.last_completed_id = 7;
  stored.id_counter = 100;
  stored.history = {{7, CheckpointKind::kCheckpoint}};
  CompletedCheckpoint newest;
  newest.checkpoint_id = 7;
  newest.task_states = {{"a", {"s3://a", 1, ""}}, {"b", {"s3://b", 1, ""}}};
  stored.newest = newest;
  Harness h(stored, {});
  h.Start(/*restarted=*/true);
  auto reg = Register(h, 1, {"c"}, false);
  EXPECT_TRUE(reg.welcome.restore.rescaled);
  EXPECT_EQ(reg.welcome.restore.task_states, newest.task_states)
      << "every state of the source, for the engine to redistribute";

  // Back to the checkpoint's task set: no longer a rescale.
  ASSERT_TRUE(h.c().UpdateSpec(MakeSpec({"a", "b"})).status.ok());
  auto again = Register(h, 2, {"a"});
  EXPECT_FALSE(again.welcome.restore.rescaled);
  ASSERT_EQ(again.welcome.restore.task_states.size(), 1u);
  EXPECT_EQ(again.welcome.restore.task_states.count("a"), 1u);
}

TEST(CoordinatorRelease, ACompletionReleasesThePlainCheckpointsBeyondRetainedAfterItsComplete) {
  PipelineSpec spec = MakeSpec();
  spec.retained = 2;
  Harness h(spec);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  const int64_t c2 = CompleteOneRound(h);
  EXPECT_TRUE(ActionsOf<SendRelease>(h.all).empty()) << "two fit in retained 2";

  // A savepoint between: never released by retention.
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  const int64_t s3 = h.LastTriggerId();
  ASSERT_EQ(h.triggers.back().kind, CheckpointKind::kSavepoint);
  h.auto_commit = false;
  h.AckAll(s3);
  Actions savepoint_done = h.c().OnCommitted(s3);
  h.Apply(savepoint_done);
  EXPECT_TRUE(ReleasedIn(savepoint_done).empty()) << "a savepoint does not count in retained";

  h.RunFor(milliseconds(1000));
  const int64_t c4 = h.LastTriggerId();
  h.AckAll(c4);
  Actions done = h.c().OnCommitted(c4);
  h.Apply(done);
  EXPECT_EQ(ReleasedIn(done), std::vector<int64_t>{c1});
  auto releases = ActionsOf<SendRelease>(done);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].to, std::vector<SessionId>{1});
  EXPECT_LT(IndexOf<SendComplete>(done), IndexOf<SendRelease>(done))
      << "the completion first: the worker learns the new state is durable before it deletes";

  auto reg = Register(h, 2, {"a"});
  EXPECT_EQ(reg.welcome.retained_checkpoint_ids, (std::vector<int64_t>{c2, s3, c4}));
}

TEST(CoordinatorRelease, ShrinkingRetainedReleasesSeveralAtTheNextCompletion) {
  PipelineSpec spec = MakeSpec();
  spec.retained = 5;
  Harness h(spec);
  std::vector<int64_t> ids{h.StartToFirstTrigger()};
  h.AckAll(ids[0]);
  for (int i = 0; i < 3; ++i) ids.push_back(CompleteOneRound(h));
  spec.retained = 1;
  ASSERT_TRUE(h.c().UpdateSpec(spec).status.ok());
  h.RunFor(milliseconds(1000));
  const int64_t last = h.LastTriggerId();
  h.auto_commit = false;
  h.AckAll(last);
  Actions done = h.c().OnCommitted(last);
  h.Apply(done);
  EXPECT_EQ(ReleasedIn(done), ids);
}

// A savepoint taken and completed now (auto_commit on).
int64_t TakeSavepoint(Harness& h) {
  auto outcome = h.c().RequestSavepoint("", false, milliseconds(60000));
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.ToString();
  h.Apply(outcome.actions);
  const int64_t id = h.LastTriggerId();
  h.AckAll(id);
  return id;
}

TEST(CoordinatorDeleteCheckpoint, ASavepointLeavesTheHistoryOnceDurableAndIsReleased) {
  Harness h;
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  const int64_t s2 = TakeSavepoint(h);
  const int64_t c3 = CompleteOneRound(h);

  auto outcome = h.c().DeleteCheckpoint(s2);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.ToString();
  auto deletes = ActionsOf<DeleteCheckpoints>(outcome.actions);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].checkpoint_ids, std::vector<int64_t>{s2});
  h.Apply(outcome.actions);
  auto joined = h.c().DeleteCheckpoint(s2);
  EXPECT_TRUE(joined.status.ok());
  EXPECT_TRUE(ActionsOf<DeleteCheckpoints>(joined.actions).empty()) << "joins the one under way";
  EXPECT_EQ(Register(h, 2, {"a"}).welcome.retained_checkpoint_ids,
            (std::vector<int64_t>{c1, s2, c3}))
      << "still retained until the delete is durable";

  const Actions done = h.c().OnCheckpointsDeleted({s2});
  h.Apply(done);
  auto releases = ActionsOf<SendRelease>(done);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].checkpoint_ids, std::vector<int64_t>{s2});
  EXPECT_EQ(releases[0].to, std::vector<SessionId>{2}) << "session 2 took every task over";
  EXPECT_EQ(Register(h, 3, {"a"}).welcome.retained_checkpoint_ids, (std::vector<int64_t>{c1, c3}));
  EXPECT_EQ(h.c().DeleteCheckpoint(s2).status.code(), StatusCode::kNotFound);
}

TEST(CoordinatorDeleteCheckpoint, TheRestorePointAndUnknownIdsAreRefused) {
  Harness h;
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  const int64_t c2 = CompleteOneRound(h);
  auto restore = h.c().DeleteCheckpoint(c2);
  EXPECT_EQ(restore.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(restore.status.message().find("restore point"), std::string::npos)
      << restore.status.message();
  EXPECT_TRUE(restore.actions.empty());
  EXPECT_EQ(h.c().DeleteCheckpoint(c2 + 1000).status.code(), StatusCode::kNotFound);
  // An older retained checkpoint may go.
  EXPECT_TRUE(h.c().DeleteCheckpoint(c1).status.ok());
}

TEST(CoordinatorDeleteCheckpoint, AFailedDeleteKeepsTheCheckpoint) {
  Harness h;
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  CompleteOneRound(h);
  h.Apply(h.c().DeleteCheckpoint(c1).actions);
  const Actions failed = h.c().OnCheckpointsDeleteFailed({c1}, Status::Unavailable("disk full"));
  h.Apply(failed);
  EXPECT_TRUE(ActionsOf<SendRelease>(failed).empty());
  const auto retained = Register(h, 2, {"a"}).welcome.retained_checkpoint_ids;
  EXPECT_EQ(retained.front(), c1);
  EXPECT_EQ(ActionsOf<DeleteCheckpoints>(h.c().DeleteCheckpoint(c1).actions).size(), 1u)
      << "may be asked again";
}

TEST(CoordinatorSavepointCap, ASavepointBeyondTheCapIsRefusedUntilOneIsDeleted) {
  CoordinatorOptions options;
  options.max_savepoints = 2;
  Harness h(MakeSpec(), 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  const int64_t s2 = TakeSavepoint(h);
  TakeSavepoint(h);
  auto refused = h.c().RequestSavepoint("", false, milliseconds(60000));
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status.message().find("limits.max_savepoints_per_pipeline (2)"),
            std::string::npos)
      << refused.status.message();
  EXPECT_NE(refused.status.message().find("ckptctl checkpoint delete job pipe"), std::string::npos)
      << refused.status.message();

  // A worker asking is refused the same way, and the refusal counted under the limit.
  const Actions worker = h.c().OnWorkerSavepointRequest(1, "", false);
  auto answers = ActionsOf<SendSavepointRefused>(worker);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].limit, CountedLimit::kMaxSavepointsPerPipeline);

  h.Apply(h.c().DeleteCheckpoint(s2).actions);
  h.Apply(h.c().OnCheckpointsDeleted({s2}));
  EXPECT_TRUE(h.c().RequestSavepoint("", false, milliseconds(60000)).status.ok()) << "room again";
}

// Options of a coordinator in a daemon: the restore pins every pipeline shares.
CoordinatorOptions WithPins(RestorePins* pins) {
  CoordinatorOptions options;
  options.pins = pins;
  return options;
}

CompletedCheckpoint SourceCheckpoint(int64_t id, std::vector<std::string> tasks) {
  CompletedCheckpoint cp;
  cp.checkpoint_id = id;
  cp.kind = CheckpointKind::kSavepoint;
  cp.location = "s3://sp/" + std::to_string(id);
  for (const auto& task : tasks) cp.task_states[task] = {"s3://old/" + task, 1, ""};
  return cp;
}

TEST(CoordinatorRestorePipeline, AnotherPipelinesSavepointIsHandedOutUntilTheNextCompletion) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  Harness h(MakeSpec(), 0, options);
  h.Start();
  const PipelineKey old_version{"job-v1", "pipe"};
  pins.Add({old_version, 17}, {"job", "pipe"});  // as PipelineHost does, on the source's strand
  auto restored = h.c().Restore(old_version, SourceCheckpoint(17, {"a", "b"}));
  ASSERT_TRUE(restored.status.ok()) << restored.status.ToString();
  auto persisted = ActionsOf<PersistProgress>(restored.actions);
  auto records = ActionsOf<PersistRecord>(restored.actions);
  ASSERT_FALSE(persisted.empty() && records.empty()) << "durable before the answer";
  const PipelineProgress written =
      persisted.empty() ? records.back().record.progress() : persisted.back().progress;
  EXPECT_EQ(written.restore_from, (CheckpointRef{old_version, 17}));
  h.Apply(restored.actions);

  auto reg = Register(h, 1, {"a", "b"}, false);
  EXPECT_EQ(reg.welcome.restore.checkpoint_id, 17);
  EXPECT_EQ(reg.welcome.restore.source, old_version);
  EXPECT_TRUE(reg.welcome.restore.operator_set);
  EXPECT_EQ(reg.welcome.restore.task_states.at("a").uri, "s3://old/a");
  EXPECT_EQ(reg.welcome.last_completed_checkpoint_id, 0) << "a completion notice, not a restore";

  // Its first completion ends the operator's restore point and the pin on the old version.
  h.RunFor(milliseconds(1000));
  const int64_t first = h.LastTriggerId();
  h.auto_commit = false;
  h.AckAll(first);
  ASSERT_EQ(h.commits.size(), 1u);
  EXPECT_FALSE(h.commits[0].commit.progress_after.restore_from.has_value());
  const Actions done = h.c().OnCommitted(first);
  h.Apply(done);
  auto dropped = ActionsOf<PinDropped>(done);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].ref, (CheckpointRef{old_version, 17}));
  EXPECT_FALSE(pins.IsPinned(old_version, 17));
  EXPECT_EQ(Register(h, 2, {"a"}).welcome.restore.checkpoint_id, first);
}

TEST(CoordinatorRestorePipeline, OnlyWithoutTasksOrWhenStoppedWithNothingPending) {
  Harness h;
  const int64_t c1 = h.StartToFirstTrigger();  // every task registered, a round pending
  auto refused = h.c().Restore({"job", "pipe"}, SourceCheckpoint(c1, {"a", "b"}));
  EXPECT_EQ(refused.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(refused.actions.empty());
  h.AckAll(c1);
  h.Apply(h.c().Pause().actions);
  h.RunFor(milliseconds(1000));
  auto restored = h.c().Restore({"job", "pipe"}, SourceCheckpoint(c1, {"a", "b"}));
  ASSERT_TRUE(restored.status.ok()) << restored.status.ToString();
  auto ended = ActionsOf<EndSession>(restored.actions);
  ASSERT_EQ(ended.size(), 1u) << "workers come back to the new restore point";
  EXPECT_EQ(ended[0].status.code(), StatusCode::kAborted);
  EXPECT_NE(ended[0].status.message().find("restored to checkpoint job/pipe@" + std::to_string(c1)),
            std::string::npos)
      << ended[0].status.message();
  h.Apply(restored.actions);
  EXPECT_EQ(h.c().State(), PipelineState::kPaused);
}

TEST(CoordinatorRestorePipeline, FailedOrStoppedBecomesPausedWithANewGeneration) {
  Harness h;
  const int64_t c1 = h.StartToFirstTrigger();
  h.Apply(h.c().OnDecline(1, c1, "a", "broken", false));  // tolerable_failures 0: FAILED
  ASSERT_EQ(h.c().State(), PipelineState::kFailed);
  const int64_t generation = h.c().Describe().generation;
  auto restored = h.c().Restore({"other", "p"}, SourceCheckpoint(5, {"a", "b"}));
  ASSERT_TRUE(restored.status.ok()) << restored.status.ToString();
  h.Apply(restored.actions);
  EXPECT_EQ(h.c().State(), PipelineState::kPaused);
  EXPECT_GT(h.c().Describe().generation, generation);
  EXPECT_EQ(h.c().Describe().counters.consecutive_failures, 0);
  EXPECT_EQ(h.c().Describe().restore.checkpoint_id, 5);
  EXPECT_TRUE(h.c().Describe().restore.operator_set);
}

TEST(CoordinatorPins, APinnedCheckpointStaysOutsideRetainedAndIsReleasedWhenThePinGoes) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  PipelineSpec spec = MakeSpec();
  spec.retained = 1;
  Harness h(spec, 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  ASSERT_TRUE(h.c().AddPin(c1, kOther).ok());  // another pipeline restores from it
  EXPECT_EQ(h.c().AddPin(c1 + 1000, kOther).code(), StatusCode::kNotFound);
  const int64_t c2 = CompleteOneRound(h);
  ASSERT_EQ(h.commits.size(), 2u);
  EXPECT_EQ(h.commits[1].commit.keep, std::vector<int64_t>{c1}) << "the store must spare it";
  EXPECT_TRUE(ActionsOf<SendRelease>(h.all).empty()) << "a restore point is never released";
  EXPECT_EQ(Register(h, 2, {"a"}).welcome.retained_checkpoint_ids, (std::vector<int64_t>{c1, c2}));
  EXPECT_EQ(h.c().DeleteCheckpoint(c1).status.code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(pins.Remove({{"job", "pipe"}, c1}, kOther));
  const Actions dropped = h.c().OnPinDropped(c1);
  auto deletes = ActionsOf<DeleteCheckpoints>(dropped);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].checkpoint_ids, std::vector<int64_t>{c1});
  h.Apply(dropped);
  const Actions released = h.c().OnCheckpointsDeleted({c1});
  EXPECT_EQ(ReleasedIn(released), std::vector<int64_t>{c1});
}

TEST(CoordinatorPins, APinThatRacesTheCommitThatTrimsItIsRefused) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  PipelineSpec spec = MakeSpec();
  spec.retained = 1;
  Harness h(spec, 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  h.auto_commit = false;
  h.RunFor(milliseconds(1000));
  const int64_t c2 = h.LastTriggerId();
  h.AckAll(c2);  // with the store: its trim (keep nothing) pushes c1 out as it lands
  EXPECT_EQ(h.c().AddPin(c1, kOther).code(), StatusCode::kNotFound);
  EXPECT_FALSE(pins.IsPinned({"job", "pipe"}, c1));
  EXPECT_EQ(h.c().AddPin(c2, kOther).code(), StatusCode::kNotFound) << "not durable yet";
  h.Apply(h.c().OnCommitted(c2));
  EXPECT_TRUE(h.c().AddPin(c2, kOther).ok()) << "once durable";
}

TEST(CoordinatorPins, AStartReleasesWhatAPinDroppedWhileDownHadSpared) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.spec.retained = 1;
  stored.record.last_completed_id = 9;
  stored.id_counter = 100;
  stored.history = {{4, CheckpointKind::kCheckpoint},
                    {6, CheckpointKind::kSavepoint},
                    {9, CheckpointKind::kCheckpoint}};
  Harness h(stored, options);
  const Actions started = h.c().Start(/*restarted=*/true);
  auto deletes = ActionsOf<DeleteCheckpoints>(started);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].checkpoint_ids, std::vector<int64_t>{4}) << "not the savepoint";
}

TEST(CoordinatorRelease, TheCommitThatReleasesRecordsWhatItReleasesAndARestartSendsItAgain) {
  PipelineSpec spec = MakeSpec();
  spec.retained = 1;
  Harness h(spec);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  h.RunFor(milliseconds(1000));
  const int64_t c2 = h.LastTriggerId();
  h.auto_commit = false;
  h.AckAll(c2);
  ASSERT_EQ(h.commits.size(), 2u);
  EXPECT_EQ(h.commits[1].commit.progress_after.released_ids, std::vector<int64_t>{c1})
      << "durable with the commit that releases it";
  h.Apply(h.c().OnCommitted(c2));
  EXPECT_TRUE(h.commits[0].commit.progress_after.released_ids.empty());

  // The daemon died before the release reached anyone: loaded again, each stream that registers
  // gets it right after its welcome, until the next release.
  StoredPipeline stored;
  stored.record = h.persisted.empty() ? PipelineRecord{} : h.persisted.back();
  static_cast<PipelineProgress&>(stored.record) = h.commits[1].commit.progress_after;
  stored.record.spec = spec;
  stored.id_counter = 100;
  stored.history = {{c2, CheckpointKind::kCheckpoint}};
  Harness again(stored, {});
  again.Start(/*restarted=*/true);
  for (SessionId session : {SessionId{1}, SessionId{2}}) {
    auto reg = again.c().OnRegister(session, "w", {session == 1 ? "a" : "b"}, false);
    ASSERT_TRUE(reg.status.ok());
    auto releases = ActionsOf<SendRelease>(reg.actions);
    ASSERT_EQ(releases.size(), 1u) << "session " << session;
    EXPECT_EQ(releases[0].to, std::vector<SessionId>{session});
    EXPECT_EQ(releases[0].checkpoint_ids, std::vector<int64_t>{c1});
    again.Apply(reg.actions);
  }
  // Not without a restart.
  auto fresh = h.c().OnRegister(5, "w", {"a"}, true);
  EXPECT_TRUE(ActionsOf<SendRelease>(fresh.actions).empty());
}

TEST(CoordinatorPins, ALoadedOperatorSetRestorePointLetsGoOfItsOnePinAtItsFirstCompletion) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  const CheckpointRef source{{"job-v1", "pipe"}, 17};
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.restore_from = source;
  stored.restore_source = SourceCheckpoint(17, {"a", "b"});
  stored.id_counter = 100;
  pins.Add(source, {"job", "pipe"});  // PipelineHost pins it when it loads it, and only there
  Harness h(stored, options);
  h.Start(/*restarted=*/true);
  h.RegisterAll();
  h.RunFor(milliseconds(1000));
  h.auto_commit = false;
  const int64_t first = h.LastTriggerId();
  h.AckAll(first);
  const Actions done = h.c().OnCommitted(first);
  ASSERT_EQ(ActionsOf<PinDropped>(done).size(), 1u);
  EXPECT_FALSE(pins.IsPinned(source.key, 17)) << "held once, let go once";
}

TEST(CoordinatorPins, ASavepointInFlightPushesNothingOut) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  PipelineSpec spec = MakeSpec();
  spec.retained = 1;
  Harness h(spec, 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  h.auto_commit = false;
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  const int64_t s2 = h.LastTriggerId();
  h.AckAll(s2);
  ASSERT_EQ(h.commits.size(), 2u);
  EXPECT_TRUE(h.commits[1].commit.progress_after.released_ids.empty())
      << "a savepoint does not count in retained: c1 stays";
  EXPECT_TRUE(h.c().AddPin(c1, kOther).ok()) << "c1 is not leaving";
  h.Apply(h.c().OnCommitted(s2));
  EXPECT_TRUE(ActionsOf<SendRelease>(h.all).empty());
}

TEST(CoordinatorPins, AnUnpinnedIdBelowTheStoresHorizonLeavesEvenWhenTheWindowGrewBackOverIt) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  StoredPipeline stored;
  stored.record.spec = MakeSpec();
  stored.record.spec.retained = 5;  // was 2 when 8 became the start of the history
  stored.record.last_completed_id = 9;
  stored.id_counter = 100;
  stored.retained_from = 8;
  stored.history = {{3, CheckpointKind::kCheckpoint},  // kept for a pin
                    {8, CheckpointKind::kCheckpoint},
                    {9, CheckpointKind::kCheckpoint}};
  pins.Add({{"job", "pipe"}, 3}, kOther);
  Harness h(stored, options);
  h.Start(/*restarted=*/true);
  ASSERT_TRUE(pins.Remove({{"job", "pipe"}, 3}, kOther));
  const Actions dropped = h.c().OnPinDropped(3);
  auto deletes = ActionsOf<DeleteCheckpoints>(dropped);
  ASSERT_EQ(deletes.size(), 1u) << "the store hides it already; its workers must hear of it";
  EXPECT_EQ(deletes[0].checkpoint_ids, std::vector<int64_t>{3});
}

TEST(RestorePinsHolders, ThePinGoesWithItsLastHolderAndOnlyOthersKeepTheSourceAlive) {
  RestorePins pins;
  const PipelineKey source{"job", "pipe"};
  pins.Add({source, 3}, source);  // a rollback to its own savepoint
  pins.Add({source, 3}, kOther);
  EXPECT_FALSE(pins.Remove({source, 3}, PipelineKey{"never", "held"})) << "not a holder";
  EXPECT_EQ(pins.HeldByOthers(source), (std::vector<std::pair<int64_t, PipelineKey>>{{3, kOther}}));
  EXPECT_FALSE(pins.Remove({source, 3}, source)) << "the other still holds it";
  EXPECT_TRUE(pins.IsPinned(source, 3));
  EXPECT_TRUE(pins.Remove({source, 3}, kOther));
  EXPECT_FALSE(pins.IsPinned(source, 3));
  EXPECT_TRUE(pins.HeldByOthers(source).empty());
}

TEST(CoordinatorDeletePipeline, IsRefusedWhileAnotherPipelineRestoresFromItsCheckpoint) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  Harness h(MakeSpec(), 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  ASSERT_TRUE(h.c().AddPin(c1, kOther).ok());
  auto refused = h.c().Delete();
  EXPECT_EQ(refused.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status.message().find(kOther.ToString()), std::string::npos)
      << refused.status.message();
  EXPECT_TRUE(refused.actions.empty());
  EXPECT_NE(h.c().State(), PipelineState::kStopped);
  ASSERT_TRUE(pins.Remove({{"job", "pipe"}, c1}, kOther));
  EXPECT_TRUE(h.c().Delete().status.ok()) << "once the other let go";
}

TEST(CoordinatorDeletePipeline, ReleasesEveryCheckpointAndSavepointBeforeTheStreamsEnd) {
  RestorePins pins;
  const CoordinatorOptions options = WithPins(&pins);
  Harness h(MakeSpec(), 0, options);
  const int64_t c1 = h.StartToFirstTrigger();
  h.AckAll(c1);
  h.Apply(h.c().RequestSavepoint("", false, milliseconds(60000)).actions);
  const int64_t s2 = h.LastTriggerId();
  h.AckAll(s2);
  // Rolled back to its own savepoint: its own pin is no obstacle and goes with it.
  h.Apply(h.c().Pause().actions);
  pins.Add({{"job", "pipe"}, s2}, {"job", "pipe"});
  auto restored = h.c().Restore({"job", "pipe"}, SourceCheckpoint(s2, {"a", "b"}));
  ASSERT_TRUE(restored.status.ok()) << restored.status.ToString();
  h.Apply(restored.actions);
  Register(h, 3, {"a", "b"}, false);

  auto deleted = h.c().Delete();
  ASSERT_TRUE(deleted.status.ok()) << deleted.status.ToString();
  EXPECT_FALSE(pins.IsPinned({"job", "pipe"}, s2));
  auto released = ActionsOf<SendRelease>(deleted.actions);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].checkpoint_ids, (std::vector<int64_t>{c1, s2}));
  EXPECT_EQ(released[0].to, (std::vector<SessionId>{3}));
  EXPECT_LT(IndexOf<SendRelease>(deleted.actions), IndexOf<EndSession>(deleted.actions));
}

}  // namespace
}  // namespace ckpt::testing
