#include "sdk/epoch_filter.h"

#include <algorithm>

namespace ckpt::sdk::internal {

void EpochFilter::See(int64_t epoch) { highest_seen_ = std::max(highest_seen_, epoch); }

bool EpochFilter::AcceptWelcome(int64_t leader_epoch) {
  stream_epoch_ = leader_epoch;
  if (!Current(leader_epoch)) return false;
  See(leader_epoch);
  return true;
}

bool EpochFilter::AcceptTrigger(int64_t leader_epoch) {
  if (!Current(leader_epoch)) return false;
  See(leader_epoch);
  return true;
}

}  // namespace ckpt::sdk::internal
