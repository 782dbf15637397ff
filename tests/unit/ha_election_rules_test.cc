// Who leads (ha/election_rules.h): the oldest key under election/ that a ckptd could have
// written. A foreign key (no lease, a value that is no leader address, a name not its lease's)
// must not keep the group from electing a leader.
#include "ha/election_rules.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

std::string KeyOf(int64_t lease) { return "/p/election/" + std::to_string(lease); }

ElectionCandidate Candidate(int64_t lease, std::string value, int64_t revision) {
  return {KeyOf(lease), std::move(value), lease, revision};
}

TEST(PickLeader, TheOldestCandidateLeads) {
  const std::vector<ElectionCandidate> keys = {Candidate(7, "a.example:7070", 10),
                                               Candidate(8, "b.example:7070", 11)};
  auto outcome = PickLeader(keys, KeyOf);
  ASSERT_TRUE(outcome.leader.has_value());
  EXPECT_EQ(*outcome.leader, 0u);
  EXPECT_TRUE(outcome.ignored.empty());
}

TEST(PickLeader, AKeyWithoutALeaseIsNoCandidate) {
  ElectionCandidate foreign{KeyOf(0), "c.example:7070", 0, 5};
  const std::vector<ElectionCandidate> keys = {foreign, Candidate(8, "b.example:7070", 11)};
  auto outcome = PickLeader(keys, KeyOf);
  ASSERT_TRUE(outcome.leader.has_value());
  EXPECT_EQ(*outcome.leader, 1u) << "the leaseless key would never expire: it must not lead";
  ASSERT_EQ(outcome.ignored.size(), 1u);
  EXPECT_NE(outcome.ignored[0].second.find("no lease"), std::string::npos);
}

TEST(PickLeader, AValueThatIsNoLeaderAddressIsNoCandidate) {
  for (const std::string bad :
       {"b\xc3\xbc"
        "cher.example:7070",
        "a:7070\nx: y", "", "a b:1", "host-without-port", "a.example:0", "[zz]:7070"}) {
    const std::vector<ElectionCandidate> keys = {Candidate(5, bad, 3),
                                                 Candidate(8, "b.example:7070", 11)};
    auto outcome = PickLeader(keys, KeyOf);
    ASSERT_TRUE(outcome.leader.has_value()) << bad;
    EXPECT_EQ(*outcome.leader, 1u) << bad;
    ASSERT_EQ(outcome.ignored.size(), 1u) << bad;
    EXPECT_EQ(outcome.ignored[0].first, KeyOf(5));
  }
}

TEST(PickLeader, AKeyNotNamedAfterItsLeaseIsNoCandidate) {
  ElectionCandidate renamed{"/p/election/zzz", "a.example:7070", 9, 3};
  const std::vector<ElectionCandidate> keys = {renamed, Candidate(8, "b.example:7070", 11)};
  auto outcome = PickLeader(keys, KeyOf);
  ASSERT_TRUE(outcome.leader.has_value());
  EXPECT_EQ(*outcome.leader, 1u);
}

TEST(PickLeader, NobodyLeadsWhenNoKeyIsACandidate) {
  const std::vector<ElectionCandidate> keys = {Candidate(5, "not an address", 3)};
  auto outcome = PickLeader(keys, KeyOf);
  EXPECT_FALSE(outcome.leader.has_value());
  EXPECT_EQ(outcome.ignored.size(), 1u);
  EXPECT_FALSE(PickLeader({}, KeyOf).leader.has_value());
}

}  // namespace
}  // namespace ckpt
