// PendingRound: fenced by id and phase, acks counted once per expected task, the position rule,
// the stuck notice before the deadline, and the checkpoint a complete round hands to the store.
#include "core/pending_round.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace ckpt {
namespace {

using Acked = PendingRound::Acked;
using Timer = PendingRound::Timer;
using std::chrono::seconds;

const SteadyTime kTriggeredAt = SteadyTime{} + std::chrono::hours(1);
const std::vector<std::string> kRoundTasks = {"a", "b", "c"};

PendingRound RoundAt(int64_t position = 0) {
  PendingRound::Start start;
  start.id = 7;
  start.triggered_at = kTriggeredAt;
  start.deadline = kTriggeredAt + seconds(60);
  start.triggered_at_ms = 1000;
  start.position = position;
  return PendingRound(std::move(start));
}

TaskState AckedState(const std::string& handle) {
  TaskState state;
  state.uri = handle;
  return state;
}

TaskFigures By(const std::string& task, const std::string& worker, int64_t at_ms) {
  return TaskFigures{task, worker, at_ms, {}};
}

TEST(PendingRound, EveryExpectedTaskAcksOnceAndTheLastMakesItComplete) {
  const TaskIdSet expected(kRoundTasks.begin(), kRoundTasks.end());
  PendingRound round = RoundAt();
  EXPECT_EQ(round.Ack(expected, "b", AckedState("sb"), By("b", "w2", 1), 0), Acked::kAwaitingMore);
  EXPECT_EQ(round.Ack(expected, "b", AckedState("again"), By("b", "w2", 2), 0), Acked::kDuplicate);
  EXPECT_EQ(round.Ack(expected, "z", AckedState("sz"), By("z", "w9", 3), 0), Acked::kDuplicate);
  EXPECT_EQ(round.Ack(expected, "a", AckedState("sa"), By("a", "w1", 4), 0), Acked::kAwaitingMore);
  EXPECT_FALSE(round.completing());
  EXPECT_TRUE(round.Awaits(7));
  EXPECT_EQ(round.acked_count(), 2u);
  EXPECT_TRUE(round.HasAcked("a"));
  EXPECT_FALSE(round.HasAcked("c"));
  EXPECT_EQ(round.Ack(expected, "c", AckedState("sc"), By("c", "w1", 5), 0), Acked::kLast);
  EXPECT_TRUE(round.completing());
  // With the store: nothing concerns it any more, not even an ack of a task it has.
  EXPECT_FALSE(round.Awaits(7));
  EXPECT_EQ(round.Ack(expected, "c", AckedState("sc"), By("c", "w1", 6), 0), Acked::kDuplicate);
  EXPECT_EQ(round.acked().at("b").uri, "sb");  // the first ack's state, not the repeat's
}

TEST(PendingRound, AnAckAtAnotherPositionThanTheRoundsFailsIt) {
  const TaskIdSet expected(kRoundTasks.begin(), kRoundTasks.end());
  PendingRound round = RoundAt(/*position=*/500);
  EXPECT_EQ(round.Ack(expected, "a", AckedState("sa"), By("a", "w", 1), 500), Acked::kAwaitingMore);
  EXPECT_EQ(round.Ack(expected, "b", AckedState("sb"), By("b", "w", 2), 501),
            Acked::kOtherPosition);
  EXPECT_EQ(round.acked_count(), 1u);  // not counted
  // A repeated ack is ignored whatever position it names.
  EXPECT_EQ(round.Ack(expected, "a", AckedState("sa"), By("a", "w", 3), 9), Acked::kDuplicate);
  // Without a position, any position is fine.
  PendingRound plain = RoundAt();
  EXPECT_EQ(plain.Ack(expected, "a", AckedState("sa"), By("a", "w", 1), 42), Acked::kAwaitingMore);
}

TEST(PendingRound, TheTimerNotesTheStuckThresholdOnceThenExpiresAtTheDeadline) {
  PendingRound round = RoundAt();
  EXPECT_EQ(round.OnTimer(6, kTriggeredAt + seconds(10)), Timer::kStale);  // another round's
  EXPECT_EQ(round.OnTimer(7, kTriggeredAt + seconds(10)), Timer::kStuck);
  // The notice given, the timer is armed for the deadline: when it fires, the round expires.
  EXPECT_EQ(round.OnTimer(7, kTriggeredAt + seconds(60)), Timer::kExpired);
  // The deadline came before the stuck threshold.
  PendingRound late = RoundAt();
  EXPECT_EQ(late.OnTimer(7, kTriggeredAt + seconds(60)), Timer::kExpired);
  // No notice due (the deadline comes first, or the group keeps the timer).
  PendingRound no_notice = [] {
    PendingRound::Start start;
    start.id = 7;
    start.deadline = kTriggeredAt + seconds(60);
    start.stuck_noted = true;
    return PendingRound(std::move(start));
  }();
  EXPECT_EQ(no_notice.OnTimer(7, kTriggeredAt + seconds(60)), Timer::kExpired);
}

TEST(PendingRound, AFiredTimerOfACompletingRoundIsStale) {
  const std::vector<std::string> one = {"a"};
  const TaskIdSet expected(one.begin(), one.end());
  PendingRound round = RoundAt();
  EXPECT_EQ(round.Ack(expected, "a", AckedState("sa"), By("a", "w", 1), 0), Acked::kLast);
  EXPECT_EQ(round.OnTimer(7, kTriggeredAt + seconds(120)), Timer::kStale);
}

TEST(PendingRound, TheCheckpointHoldsTheAckedStatesAndTheFiguresInTaskOrder) {
  const TaskIdSet expected(kRoundTasks.begin(), kRoundTasks.end());
  PendingRound::Start start;
  start.id = 9;
  start.kind = CheckpointKind::kSavepoint;
  start.target = "/sp/j/p/9";
  start.triggered_at_ms = 1000;
  start.position = 77;
  PendingRound round(std::move(start));
  round.Ack(expected, "c", AckedState("sc"), By("c", "w3", 1001), 77);
  round.Ack(expected, "a", AckedState("sa"), By("a", "w1", 1002), 77);
  round.Ack(expected, "b", AckedState("sb"), By("b", "w2", 1003), 77);
  const CompletedCheckpoint checkpoint = round.ToCheckpoint(2000);
  EXPECT_EQ(checkpoint.checkpoint_id, 9);
  EXPECT_EQ(checkpoint.kind, CheckpointKind::kSavepoint);
  EXPECT_EQ(checkpoint.location, "/sp/j/p/9");
  EXPECT_EQ(checkpoint.triggered_at_ms, 1000);
  EXPECT_EQ(checkpoint.finished_at_ms, 2000);
  EXPECT_EQ(checkpoint.position, 77);
  ASSERT_EQ(checkpoint.task_states.size(), 3u);
  EXPECT_EQ(checkpoint.task_states.at("a").uri, "sa");
  ASSERT_EQ(checkpoint.task_figures.size(), 3u);
  EXPECT_EQ(checkpoint.task_figures[0].task_id, "a");
  EXPECT_EQ(checkpoint.task_figures[2].worker_id, "w3");
  // Ack order stays in the round itself.
  EXPECT_EQ(round.figures().front().task_id, "c");
  // The acks move out as the round ends, whole.
  EXPECT_EQ(round.TakeAcked().size(), 3u);
  EXPECT_EQ(round.TakeFigures().size(), 3u);
}

TEST(PendingRound, AWorkerJoiningASavepointIsRemembered) {
  PendingRound round = RoundAt();
  EXPECT_FALSE(round.worker_asked());
  round.JoinWorkerRequest();
  EXPECT_TRUE(round.worker_asked());
  round.SetKeep({3, 5});
  EXPECT_EQ(round.keep(), (std::vector<int64_t>{3, 5}));
}

}  // namespace
}  // namespace ckpt
