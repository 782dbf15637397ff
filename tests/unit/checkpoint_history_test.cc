// CheckpointHistory: the window of `retained` plain checkpoints, savepoints kept, what a commit
// and a delete release, the horizon, deletes in flight, and the release sent again after a restart.
#include "core/checkpoint_history.h"

#include <gtest/gtest.h>

#include <vector>

namespace ckpt {
namespace {

using IdList = std::vector<int64_t>;
constexpr auto kPlain = CheckpointKind::kCheckpoint;
constexpr auto kSavepoint = CheckpointKind::kSavepoint;

CheckpointHistory Empty() { return CheckpointHistory({}, 0, {}); }

TEST(CheckpointHistory, ACommitKeepsTheRetainedNewestPlainOnesAndReleasesTheRest) {
  CheckpointHistory history = Empty();
  EXPECT_EQ(history.Adopt(1, kPlain, /*retained=*/2, {}), IdList{});
  EXPECT_EQ(history.Adopt(2, kPlain, 2, {}), IdList{});
  EXPECT_EQ(history.Adopt(3, kPlain, 2, {}), IdList{1});
  EXPECT_EQ(history.Ids(), (IdList{2, 3}));
  EXPECT_EQ(history.last_released(), IdList{1});
  // retained 0 still keeps one: the restore point.
  EXPECT_EQ(history.Adopt(4, kPlain, 0, {}), (IdList{2, 3}));
  EXPECT_EQ(history.Ids(), IdList{4});
}

TEST(CheckpointHistory, SavepointsStayAndDoNotCountTowardTheWindow) {
  CheckpointHistory history = Empty();
  history.Adopt(1, kPlain, 1, {});
  history.Adopt(2, kSavepoint, 1, {});
  EXPECT_EQ(history.Ids(), (IdList{1, 2}));  // the savepoint pushed no plain one out
  EXPECT_EQ(history.Adopt(3, kPlain, 1, {}), IdList{1});
  EXPECT_EQ(history.Ids(), (IdList{2, 3}));
  EXPECT_EQ(history.savepoints(), 1u);
  ASSERT_NE(history.Find(2), nullptr);
  EXPECT_FALSE(history.Find(2)->plain());
  EXPECT_EQ(history.Find(1), nullptr);
}

TEST(CheckpointHistory, WhatACommitKeepsStaysUntilACommitNoLongerKeepsIt) {
  CheckpointHistory history = Empty();
  history.Adopt(1, kPlain, 1, {});
  EXPECT_EQ(history.Adopt(2, kPlain, 1, /*keep=*/{1}), IdList{});
  EXPECT_EQ(history.Ids(), (IdList{1, 2}));
  // Outside the window: a candidate to delete once nothing holds it.
  EXPECT_EQ(history.OutsideWindow(1), IdList{1});
  EXPECT_EQ(history.Adopt(3, kPlain, 1, {}), (IdList{1, 2}));
}

TEST(CheckpointHistory, ReleasedByPredictsWhatTheCommitInFlightReleases) {
  CheckpointHistory history = Empty();
  history.Adopt(1, kPlain, 2, {});
  history.Adopt(2, kPlain, 2, {});
  EXPECT_EQ(history.ReleasedBy(2, /*extra=*/3, {}), IdList{1});
  EXPECT_EQ(history.ReleasedBy(2, 3, /*keep=*/{1}), IdList{});
  EXPECT_EQ(history.ReleasedBy(2, /*a savepoint=*/0, {}), IdList{});
  EXPECT_EQ(history.WindowStart(2, 3), 2);
  EXPECT_EQ(history.WindowStart(2), 1);
  EXPECT_EQ(history.WindowStart(3), 0);  // not full
  // Predicting changes nothing.
  EXPECT_EQ(history.Ids(), (IdList{1, 2}));
  const IdList predicted = history.ReleasedBy(2, 3, {});
  EXPECT_EQ(history.Adopt(3, kPlain, 2, {}), predicted);
}

TEST(CheckpointHistory, TheHorizonNeverMovesDownWhenRetainedGrows) {
  // Loaded with a stored horizon of 5: plain ids below it are held only for a pin.
  CheckpointHistory history({{3, kPlain}, {5, kPlain}, {6, kPlain}}, /*horizon=*/5, {});
  EXPECT_EQ(history.WindowStart(10), 0);  // a larger retained: the window is not full
  EXPECT_EQ(history.Horizon(10), 5);
  EXPECT_EQ(history.OutsideWindow(10), IdList{3});
  // A commit's window start raises it.
  history.Adopt(7, kPlain, 2, /*keep=*/{3});
  EXPECT_EQ(history.Horizon(10), 6);
  EXPECT_EQ(history.OutsideWindow(10), IdList{3});
}

TEST(CheckpointHistory, AnIdBeingDeletedStaysUntilTheDeleteIsDurable) {
  CheckpointHistory history = Empty();
  history.Adopt(1, kSavepoint, 1, {});
  history.Adopt(2, kPlain, 1, /*keep=*/{});
  history.Adopt(3, kPlain, 1, /*keep=*/{2});
  history.MarkDeleting({1, 2});
  EXPECT_TRUE(history.BeingDeleted(1));
  EXPECT_TRUE(history.BeingDeleted(2));
  EXPECT_EQ(history.OutsideWindow(1), IdList{});  // not offered twice
  EXPECT_EQ(history.Ids(), (IdList{1, 2, 3}));
  // A failed delete leaves them held and deletable again.
  history.OnDeleteFailed({2});
  EXPECT_FALSE(history.BeingDeleted(2));
  EXPECT_EQ(history.OutsideWindow(1), IdList{2});
  // A durable one releases what was held, once; the caller records it (not once the pipeline
  // itself is deleted, when nothing is written any more).
  EXPECT_EQ(history.OnDeleted({1, 99}), IdList{1});
  EXPECT_FALSE(history.BeingDeleted(1));
  EXPECT_EQ(history.Ids(), (IdList{2, 3}));
  EXPECT_TRUE(history.last_released().empty());
  history.NoteReleased({1});
  EXPECT_EQ(history.last_released(), IdList{1});
  EXPECT_EQ(history.OnDeleted({1}), IdList{});
}

TEST(CheckpointHistory, TheLastReleaseIsSentAgainAfterARestartUntilTheNextRelease) {
  CheckpointHistory fresh({{4, kPlain}}, 0, /*last_released=*/{1, 2});
  fresh.OnStart(/*restarted=*/false);
  EXPECT_FALSE(fresh.resend_release());

  CheckpointHistory restarted({{4, kPlain}}, 0, {1, 2});
  restarted.OnStart(/*restarted=*/true);
  EXPECT_TRUE(restarted.resend_release());
  EXPECT_EQ(restarted.last_released(), (IdList{1, 2}));
  restarted.Adopt(5, kPlain, 1, {});  // releases 4: that is the one sent now
  EXPECT_FALSE(restarted.resend_release());
  EXPECT_EQ(restarted.last_released(), IdList{4});

  CheckpointHistory nothing_released({{4, kPlain}}, 0, {});
  nothing_released.OnStart(true);
  EXPECT_FALSE(nothing_released.resend_release());
}

TEST(CheckpointHistory, ACommitAllocatesNothingOnceTheWindowsRoomIsThere) {
  CheckpointHistory history = Empty();
  for (int64_t id = 1; id <= 3; ++id) history.Adopt(id, kPlain, 3, {});
  const auto* before = history.entries().data();
  const size_t capacity = history.entries().capacity();
  EXPECT_EQ(capacity, 4u);  // the window and the commit landing before its trim
  for (int64_t id = 4; id <= 100; ++id) history.Adopt(id, kPlain, 3, {});
  EXPECT_EQ(history.entries().data(), before);
  EXPECT_EQ(history.Ids(), (IdList{98, 99, 100}));
  // Savepoints made it grow; once they are gone it shrinks back (shrink_to_fit is a request the
  // standard lets an implementation ignore; libstdc++ and libc++ both shrink).
  for (int64_t id = 101; id <= 120; ++id) history.Adopt(id, kSavepoint, 3, {});
  EXPECT_GT(history.entries().capacity(), 8u);
  IdList savepoints;
  for (int64_t id = 101; id <= 120; ++id) savepoints.push_back(id);
  history.OnDeleted(savepoints);
  history.Adopt(121, kPlain, 3, {});
  EXPECT_LE(history.entries().capacity(), 8u);
}

}  // namespace
}  // namespace ckpt
