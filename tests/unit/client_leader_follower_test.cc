#include <gtest/gtest.h>

#include "common/leader_follower.h"
#include "common/leader_redirect.h"

namespace ckpt::cli {
namespace {

TEST(ClientLeaderFollower, StartsAtTheFirstAddress) {
  LeaderFollower follower({"a:1", "b:2"});
  EXPECT_EQ(follower.current(), "a:1");
  EXPECT_EQ(follower.Asked(), "a:1");
}

TEST(ClientLeaderFollower, FollowsAtMostThreeRedirectsInARow) {
  LeaderFollower follower({"a:1"});
  EXPECT_TRUE(follower.FollowLeader("b:2"));
  EXPECT_TRUE(follower.FollowLeader("c:3"));
  EXPECT_TRUE(follower.FollowLeader("d:4"));
  EXPECT_EQ(follower.current(), "d:4");
  EXPECT_FALSE(follower.FollowLeader("e:5"));
  EXPECT_EQ(follower.current(), "d:4");
  EXPECT_EQ(follower.redirects(), 3);
  EXPECT_EQ(follower.Asked(), "a:1, b:2, c:3, d:4");
  // An answer starts the count over.
  follower.Succeeded();
  EXPECT_EQ(follower.Asked(), "d:4");
  EXPECT_TRUE(follower.FollowLeader("e:5"));
}

TEST(ClientLeaderFollower, NoLeaderOrItselfIsNotFollowed) {
  LeaderFollower follower({"a:1"});
  EXPECT_FALSE(follower.FollowLeader(""));
  EXPECT_FALSE(follower.FollowLeader("a:1"));
  EXPECT_EQ(follower.redirects(), 0);
}

TEST(ClientLeaderFollower, NextServerWalksTheListOnce) {
  LeaderFollower follower({"a:1", "b:2", "c:3"});
  EXPECT_TRUE(follower.NextServer());
  EXPECT_EQ(follower.current(), "b:2");
  EXPECT_TRUE(follower.NextServer());
  EXPECT_EQ(follower.current(), "c:3");
  EXPECT_FALSE(follower.NextServer());
  EXPECT_EQ(follower.current(), "c:3");
  EXPECT_EQ(follower.Asked(), "a:1, b:2, c:3");
}

TEST(ClientLeaderFollower, AListAddressReachedByRedirectIsNotAskedAgain) {
  LeaderFollower follower({"a:1", "b:2", "c:3"});
  EXPECT_TRUE(follower.FollowLeader("c:3"));
  // c:3 is down: the rest of the list after it, wrapping, skipping a:1 asked already.
  EXPECT_TRUE(follower.NextServer());
  EXPECT_EQ(follower.current(), "b:2");
  EXPECT_FALSE(follower.NextServer());
}

TEST(ClientLeaderFollower, RestartBeginsANewRoundAfterTheLastAsked) {
  LeaderFollower follower({"a:1", "b:2"});
  EXPECT_TRUE(follower.NextServer());
  EXPECT_FALSE(follower.NextServer());
  follower.Restart();
  EXPECT_EQ(follower.current(), "a:1");
  EXPECT_EQ(follower.Asked(), "a:1");
  EXPECT_TRUE(follower.NextServer());
  EXPECT_EQ(follower.current(), "b:2");

  LeaderFollower one({"a:1"});
  EXPECT_FALSE(one.NextServer());
  one.Restart();
  EXPECT_EQ(one.current(), "a:1");
}

// RetryElsewhere, the decision of ckptctl and ckpt-worker-sim --create after each try.
TryOutcome Unavailable(std::optional<std::string> leader, bool reached) {
  return {grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"), std::move(leader), reached};
}

TEST(ClientLeaderRedirect, AStandbysLeaderIsFollowedThenCapped) {
  LeaderFollower follower({"a:1", "b:2"});
  std::string gave_up;
  for (const char* leader : {"l1:1", "l2:1", "l3:1"}) {
    EXPECT_TRUE(RetryElsewhere(Unavailable(leader, true), true, nullptr, &follower, &gave_up));
    EXPECT_EQ(follower.current(), leader);
  }
  EXPECT_FALSE(RetryElsewhere(Unavailable("l4:1", true), true, nullptr, &follower, &gave_up));
  EXPECT_EQ(gave_up,
            "gave up after 3 leader redirects (asked a:1, l1:1, l2:1, l3:1; l3:1 names l4:1 as "
            "the leader)");
}

TEST(ClientLeaderRedirect, NoLeaderKnownOrUnreachableTriesTheNextAddress) {
  LeaderFollower follower({"a:1", "b:2", "c:3"});
  std::string gave_up = "stale";
  EXPECT_TRUE(RetryElsewhere(Unavailable("", true), true, nullptr, &follower, &gave_up));
  EXPECT_EQ(follower.current(), "b:2");
  EXPECT_TRUE(gave_up.empty());
  EXPECT_TRUE(RetryElsewhere(Unavailable(std::nullopt, false), true, nullptr, &follower, &gave_up));
  EXPECT_EQ(follower.current(), "c:3");
  EXPECT_FALSE(
      RetryElsewhere(Unavailable(std::nullopt, false), true, nullptr, &follower, &gave_up));
  EXPECT_TRUE(gave_up.empty()) << "the caller describes the last failure";
}

TEST(ClientLeaderRedirect, AnAnswerIsTheAnswer) {
  LeaderFollower follower({"a:1", "b:2"});
  std::string gave_up;
  // The daemon reached said UNAVAILABLE without the trailer: it is no standby, and may have acted.
  EXPECT_FALSE(RetryElsewhere(Unavailable(std::nullopt, true), true, nullptr, &follower, &gave_up));
  EXPECT_FALSE(RetryElsewhere({grpc::Status(grpc::StatusCode::NOT_FOUND, "no"), std::nullopt, true},
                              true, nullptr, &follower, &gave_up));
  EXPECT_FALSE(
      RetryElsewhere({grpc::Status::OK, std::nullopt, true}, true, nullptr, &follower, &gave_up));
  EXPECT_EQ(follower.current(), "a:1");
}

TEST(ClientLeaderRedirect, WithoutFollowingOnlyUnreachableDaemonsAreSkipped) {
  LeaderFollower follower({"a:1", "b:2"});
  std::string gave_up;
  EXPECT_TRUE(
      RetryElsewhere(Unavailable(std::nullopt, false), false, nullptr, &follower, &gave_up));
  EXPECT_EQ(follower.current(), "b:2");
}

TEST(ClientLeaderRedirect, ALeaderTheCheckRefusesIsNotAsked) {
  LeaderFollower follower({"127.0.0.1:1"});
  std::string gave_up;
  const AddressCheck check = [](const std::string& address) {
    return address == "10.0.0.5:7070" ? std::string("no token in clear text") : std::string();
  };
  EXPECT_FALSE(
      RetryElsewhere(Unavailable("10.0.0.5:7070", true), true, check, &follower, &gave_up));
  EXPECT_EQ(gave_up,
            "not following the leader 10.0.0.5:7070 named by 127.0.0.1:1: no token in clear text");
  EXPECT_EQ(follower.current(), "127.0.0.1:1");
}

}  // namespace
}  // namespace ckpt::cli
