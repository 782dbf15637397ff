#include "ha/election_rules.h"

#include "common/host_port.h"

namespace ckpt {

std::string WhyNoCandidate(const ElectionCandidate& candidate, const std::string& expected_key) {
  if (candidate.lease == 0) return "it has no lease (it would never expire)";
  if (candidate.key != expected_key)
    return "it is not named after its lease (" + expected_key + ")";
  if (Status s = CheckLeaderAddress(candidate.value); !s.ok()) {
    return "its value is not a leader address: " + s.message();
  }
  return "";
}

}  // namespace ckpt
