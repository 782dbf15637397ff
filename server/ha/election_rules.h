#pragma once
// Who leads an HA group: the rule every daemon applies to the same keys read from etcd, so that
// they agree (docs/DESIGN.md "High availability"). Each candidate's key sits under
// <prefix>/election/, attached to its lease, with the candidate's `advertise` address as its value;
// the oldest candidate (the lowest create revision) leads, and that revision is its epoch.
//
// A key there that no ckptd could have written is no candidate, whoever wrote it: one without a
// lease (it would never expire, and would block the group for ever), one whose value is not a
// legal leader address (common/host_port.h: no client could be sent there, and it cannot go into
// a gRPC header), one not named after its own lease. Every daemon ignores it alike.
//
// Pure: no I/O, no clock, no threads.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct ElectionCandidate {
  std::string key;
  std::string value;  // the advertised address
  int64_t lease = 0;  // the lease the key is attached to (0: none)
  int64_t create_revision = 0;
};

// Why `candidate` is no candidate ("" when it is one). `expected_key` is the name a ckptd gives
// a key of that lease (etcd/etcd_layout.h ElectionKey).
std::string WhyNoCandidate(const ElectionCandidate& candidate, const std::string& expected_key);

struct ElectionOutcome {
  // The index of the leader in the candidates given, if any is a candidate.
  std::optional<size_t> leader;
  // The keys passed over, each with why (for one warning each).
  std::vector<std::pair<std::string, std::string>> ignored;
};

// The leader among `candidates`, which must be in ascending create revision order (as etcd's
// range sorted by CREATE returns them): the first that is a candidate. `expected_key(lease)`
// names the key a ckptd writes for that lease.
template <typename ExpectedKey>
ElectionOutcome PickLeader(const std::vector<ElectionCandidate>& candidates,
                           ExpectedKey expected_key) {
  ElectionOutcome outcome;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string why = WhyNoCandidate(candidates[i], expected_key(candidates[i].lease));
    if (why.empty()) {
      outcome.leader = i;
      break;
    }
    outcome.ignored.emplace_back(candidates[i].key, why);
  }
  return outcome;
}

}  // namespace ckpt
