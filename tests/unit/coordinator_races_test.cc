// Races between worker streams, played in every order at the coordinator. The runtime hands every
// hello, ack, decline, stream end and store completion of a pipeline to its coordinator one at a
// time, on the pipeline's strand (runtime/pipeline_runner.cc; store completions in
// pipeline_runner_actions.cc); a race between two streams is therefore one of a few orders of
// coordinator events. The chaos tests over gRPC (tests/integration/chaos_*_test.cc) hit one order
// by chance; here each order that matters is played on purpose, and every step is checked against
// the invariant model (support/coordinator_invariants.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "coordinator_harness.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

const TaskState kState{"mem://a", 1, "c"};

// Whether some stream learned that `id` completed: a complete sent to a live stream, or a welcome
// that names it as the last completed checkpoint.
bool SomeStreamToldComplete(const Harness& h, int64_t id, int64_t welcome_last_completed) {
  for (const auto& c : h.completes) {
    if (c.checkpoint_id == id && !c.to.empty()) return true;
  }
  return welcome_last_completed == id;
}

// The round after a race is a new one, of the current generation, sent to `session` alone, and
// completes when that stream acks every task.
void ExpectNextRoundCompletesOn(Harness& h, int64_t stale, SessionId session) {
  h.auto_commit = true;
  h.RunFor(milliseconds(1000));
  const int64_t next = h.LastTriggerId();
  ASSERT_GT(next, stale) << "no new round after the race";
  EXPECT_EQ(h.triggers.back().generation, h.c().Describe().generation);
  EXPECT_EQ(h.triggers.back().to, (std::vector<SessionId>{session}));
  h.AckAll(next, session);
  ASSERT_FALSE(h.completes.empty());
  EXPECT_EQ(h.completes.back().checkpoint_id, next);
}

// ---------------------------------------------------------------------------------------------
// A stale ack after a takeover: the round the new stream took over was aborted by the takeover,
// so whatever arrives for it afterwards, from either stream, changes nothing.

TEST(CoordinatorRaces, StaleAckAfterATakeoverIsIgnored) {
  struct Stale {
    const char* what;
    SessionId from;
    bool decline;
    const char* reason;
  };
  const std::vector<Stale> cases = {
      {"the new stream acks the round it took over", 2, false, "not_pending"},
      {"the new stream declines it", 2, true, "not_pending"},
      {"the old stream's ack, in flight when it was ended", 1, false, "unowned_task"},
      {"the old stream's decline, in flight when it was ended", 1, true, "unowned_task"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    Harness h(MakeSpec({"a"}));
    const int64_t stale = h.StartToFirstTrigger();
    const int64_t old_generation = h.triggers.back().generation;

    auto reg = h.c().OnRegister(2, "new", {"a"}, /*takeover=*/true);
    ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
    h.Apply(reg.actions);
    EXPECT_GT(reg.welcome.generation, old_generation);
    ASSERT_EQ(h.ended.size(), 1u);
    EXPECT_EQ(h.ended[0].session, 1u);
    EXPECT_EQ(h.ended[0].status.code(), StatusCode::kAborted);
    ASSERT_EQ(h.aborts.size(), 1u);
    EXPECT_EQ(h.aborts[0].checkpoint_id, stale);

    h.Apply(c.decline ? h.c().OnDecline(c.from, stale, "a", "late", false)
                      : h.c().OnAck(c.from, stale, "a", kState));
    EXPECT_EQ(h.ignored, (std::vector<std::string>{c.reason}));
    EXPECT_TRUE(h.commits.empty()) << "the aborted round went to the store";
    EXPECT_EQ(h.aborts.size(), 1u);
    EXPECT_EQ(h.c().Describe().counters.failed_count, 0) << "a stale decline counted";

    ExpectNextRoundCompletesOn(h, stale, 2);
    EXPECT_EQ(h.triggers.back().generation, reg.welcome.generation);
    for (const auto& commit : h.commits) EXPECT_NE(commit.commit.checkpoint.checkpoint_id, stale);
  }
}

// ---------------------------------------------------------------------------------------------
// A worker that lost its stream comes back and replays the ack it had not got through, in the same
// breath as its hello. The other task's ack comes before or after the loss; the replay comes on the
// new stream, or late on the dead one.

TEST(CoordinatorRaces, StaleAckReplayedRightAfterAReRegistrationIsIgnored) {
  for (bool a_acks_before_the_loss : {true, false}) {
    for (SessionId replay_on : {SessionId{3}, SessionId{2}}) {
      SCOPED_TRACE(std::string("a acks ") + (a_acks_before_the_loss ? "before" : "after") +
                   " b's loss; b's replay on " + (replay_on == 3 ? "its new" : "its dead") +
                   " stream");
      Harness h;  // tasks a, b
      h.Start();
      h.Apply(h.c().OnRegister(1, "wa", {"a"}, false).actions);
      h.Apply(h.c().OnRegister(2, "wb", {"b"}, false).actions);
      h.RunFor(milliseconds(0));
      const int64_t stale = h.LastTriggerId();
      ASSERT_GT(stale, 0);
      const int64_t generation = h.triggers.back().generation;
      std::vector<std::string> ignored;

      if (a_acks_before_the_loss) h.Apply(h.c().OnAck(1, stale, "a", kState));
      h.Apply(h.c().OnSessionEnded(2, "stream cancelled"));
      ASSERT_EQ(h.aborts.size(), 1u) << "b's loss must abort the round";
      EXPECT_EQ(h.aborts[0].checkpoint_id, stale);
      EXPECT_EQ(h.aborts[0].to, (std::vector<SessionId>{1}));
      if (!a_acks_before_the_loss) {
        h.Apply(h.c().OnAck(1, stale, "a", kState));
        ignored.push_back("not_pending");
      }

      auto back = h.c().OnRegister(3, "wb", {"b"}, false);
      ASSERT_TRUE(back.status.ok()) << back.status.ToString();
      h.Apply(back.actions);
      EXPECT_GT(back.welcome.generation, generation);
      h.Apply(h.c().OnAck(replay_on, stale, "b", kState));
      ignored.push_back(replay_on == 3 ? "not_pending" : "unowned_task");
      EXPECT_EQ(h.ignored, ignored);
      EXPECT_TRUE(h.commits.empty()) << "the aborted round went to the store";

      h.auto_commit = true;
      h.RunFor(milliseconds(1000));
      const int64_t next = h.LastTriggerId();
      ASSERT_GT(next, stale);
      EXPECT_GT(h.triggers.back().generation, generation);
      EXPECT_EQ(h.triggers.back().to, (std::vector<SessionId>{1, 3}));
      h.Apply(h.c().OnAck(1, next, "a", kState));
      h.Apply(h.c().OnAck(3, next, "b", kState));
      ASSERT_EQ(h.commits.size(), 1u);
      EXPECT_EQ(h.commits[0].commit.checkpoint.checkpoint_id, next);
      ASSERT_EQ(h.completes.size(), 1u);
      EXPECT_EQ(h.completes[0].checkpoint_id, next);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The old stream's last ack races a takeover hello for its task. Either may come first, and the
// store's answer to the commit the ack started may come before or after the takeover, or be a
// failure. Whatever the order: the round is durable exactly when some stream is told it completed
// (a complete sent to it, or the welcome naming it as the last completed checkpoint), a round with
// the store is not aborted, and the pipeline goes on.

TEST(CoordinatorRaces, TakeoverRacingTheOldStreamsLastAckNeverLosesACompletion) {
  enum class Event { kOldAck, kTakeover, kDurable, kStoreFails };
  struct Order {
    const char* what;
    std::vector<Event> events;
    bool durable;
  };
  const std::vector<Order> orders = {
      {"ack, durable, takeover", {Event::kOldAck, Event::kDurable, Event::kTakeover}, true},
      {"ack, takeover, durable", {Event::kOldAck, Event::kTakeover, Event::kDurable}, true},
      {"ack, takeover, store fails", {Event::kOldAck, Event::kTakeover, Event::kStoreFails}, false},
      {"takeover, ack", {Event::kTakeover, Event::kOldAck}, false},
  };
  for (const auto& order : orders) {
    SCOPED_TRACE(order.what);
    Harness h(MakeSpec({"a"}));
    h.auto_commit = false;
    const int64_t stale = h.StartToFirstTrigger();
    int64_t welcome_last_completed = -1;
    for (Event e : order.events) {
      switch (e) {
        case Event::kOldAck: h.Apply(h.c().OnAck(1, stale, "a", kState)); break;
        case Event::kTakeover: {
          auto reg = h.c().OnRegister(2, "new", {"a"}, /*takeover=*/true);
          ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
          h.Apply(reg.actions);
          welcome_last_completed = reg.welcome.last_completed_checkpoint_id;
          ASSERT_EQ(h.ended.size(), 1u);
          EXPECT_EQ(h.ended[0].session, 1u);
          EXPECT_EQ(h.ended[0].status.code(), StatusCode::kAborted);
          break;
        }
        case Event::kDurable:
          ASSERT_EQ(h.commits.size(), 1u);
          h.Apply(h.c().OnCommitted(stale));
          break;
        case Event::kStoreFails:
          ASSERT_EQ(h.commits.size(), 1u);
          h.Apply(h.c().OnCommitFailed(stale, Status::Unavailable("disk full")));
          break;
      }
    }
    EXPECT_EQ(SomeStreamToldComplete(h, stale, welcome_last_completed), order.durable)
        << "checkpoint " << stale
        << (order.durable ? " is durable but nobody was told"
                          : " was announced but is not durable");
    EXPECT_EQ(h.c().Describe().last_completed_checkpoint_id, order.durable ? stale : 0);
    EXPECT_FALSE(h.c().HasPendingRound()) << "the raced round never ended";
    if (order.durable) {
      EXPECT_TRUE(h.aborts.empty()) << "a round with the store was aborted";
    }
    ExpectNextRoundCompletesOn(h, stale, 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Acks and declines (plain and expired) naming an id no round has (zero, negative, the extremes,
// the next id), while a round is pending, while it is with the store, and while nothing is
// pending: each is ignored as not pending and changes nothing.

TEST(CoordinatorRaces, AckForAnImpossibleIdIsIgnoredAsNotPending) {
  Harness h(MakeSpec({"a"}));
  h.auto_commit = false;
  const int64_t id = h.StartToFirstTrigger();
  const std::vector<int64_t> bogus = {0, -1, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(), id + 1};
  auto send_bogus = [&](const char* phase) {
    SCOPED_TRACE(phase);
    h.ignored.clear();
    for (int64_t b : bogus) {
      h.Apply(h.c().OnAck(1, b, "a", kState));
      h.Apply(h.c().OnDecline(1, b, "a", "bogus", /*expired=*/b % 2 == 0));
    }
    EXPECT_EQ(h.ignored, std::vector<std::string>(2 * bogus.size(), "not_pending"));
    EXPECT_TRUE(h.aborts.empty());
    EXPECT_EQ(h.c().Describe().counters.failed_count, 0);
    EXPECT_EQ(h.c().Describe().counters.expired_count, 0);
  };

  send_bogus("pending");
  EXPECT_TRUE(h.commits.empty());
  EXPECT_EQ(h.c().Describe().pending_checkpoint_id, id);

  h.Apply(h.c().OnAck(1, id, "a", kState));
  ASSERT_EQ(h.commits.size(), 1u);
  send_bogus("with the store");
  EXPECT_EQ(h.commits.size(), 1u);

  h.Apply(h.c().OnCommitted(id));
  ASSERT_EQ(h.completes.size(), 1u);
  EXPECT_EQ(h.completes[0].checkpoint_id, id);
  send_bogus("nothing pending");
  EXPECT_EQ(h.c().Describe().counters.completed_count, 1);
}

// ---------------------------------------------------------------------------------------------
// Two hellos for overlapping task sets at the same moment, in either order: the first is welcomed,
// the second refused whole (none of its tasks registered, the first keeps both).

TEST(CoordinatorRaces, OverlappingHellosWelcomeTheFirstAndRegisterNothingOfTheSecond) {
  for (bool w1_first : {true, false}) {
    SCOPED_TRACE(w1_first ? "w1 first" : "w2 first");
    Harness h;  // tasks a, b
    h.Start();
    const SessionId first = w1_first ? 1 : 2, second = w1_first ? 2 : 1;
    auto won = h.c().OnRegister(first, "first", {"a", "b"}, false);
    ASSERT_TRUE(won.status.ok()) << won.status.ToString();
    h.Apply(won.actions);
    auto lost = h.c().OnRegister(second, "second", {"b", "a"}, false);
    EXPECT_EQ(lost.status.code(), StatusCode::kAlreadyExists) << lost.status.ToString();
    h.Apply(lost.actions);
    EXPECT_EQ(h.c().Sessions(), (std::vector<SessionId>{first}));
    EXPECT_EQ(h.c().Describe().registered_tasks, 2);
    EXPECT_TRUE(h.ended.empty());
    h.RunFor(milliseconds(0));
    ASSERT_EQ(h.triggers.size(), 1u);
    EXPECT_EQ(h.triggers[0].to, (std::vector<SessionId>{first}));
    h.AckAll(h.LastTriggerId(), first);
    EXPECT_EQ(h.completes.size(), 1u);
  }
}

// Two takeover hellos for one task at the same moment, in either order: the later takes the task
// from the earlier, whose stream ends ABORTED; exactly one stream is left, and it works.

TEST(CoordinatorRaces, TwoTakeoverHellosLeaveTheLaterStream) {
  for (bool w1_first : {true, false}) {
    SCOPED_TRACE(w1_first ? "w1 first" : "w2 first");
    Harness h(MakeSpec({"a"}));
    h.Start();
    const SessionId first = w1_first ? 1 : 2, second = w1_first ? 2 : 1;
    for (SessionId s : {first, second}) {
      auto reg = h.c().OnRegister(s, "w" + std::to_string(s), {"a"}, /*takeover=*/true);
      ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
      h.Apply(reg.actions);
    }
    ASSERT_EQ(h.ended.size(), 1u);
    EXPECT_EQ(h.ended[0].session, first);
    EXPECT_EQ(h.ended[0].status.code(), StatusCode::kAborted);
    EXPECT_EQ(h.c().Sessions(), (std::vector<SessionId>{second}));
    h.RunFor(milliseconds(0));
    ASSERT_EQ(h.triggers.size(), 1u);
    EXPECT_EQ(h.triggers[0].to, (std::vector<SessionId>{second}));
    h.AckAll(h.LastTriggerId(), second);
    EXPECT_EQ(h.completes.size(), 1u);
  }
}

}  // namespace
}  // namespace ckpt::testing
