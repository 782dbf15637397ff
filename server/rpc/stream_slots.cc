#include "rpc/stream_slots.h"

namespace ckpt {

StreamSlots::Outcome StreamSlots::TryTake(const std::string& peer) {
  MutexLock lock(mu_);
  if (total_ >= max_total_) return Outcome::kAllTaken;
  auto it = per_peer_.find(peer);
  if (it != per_peer_.end() && it->second >= max_per_peer_) return Outcome::kPeerFull;
  if (it == per_peer_.end()) it = per_peer_.emplace(peer, 0).first;
  ++it->second;
  ++total_;
  return Outcome::kTaken;
}

void StreamSlots::Remove(const std::string& peer) {
  MutexLock lock(mu_);
  auto it = per_peer_.find(peer);
  if (it == per_peer_.end()) return;
  --total_;
  if (--it->second <= 0) per_peer_.erase(it);
}

int64_t StreamSlots::total() const {
  MutexLock lock(mu_);
  return total_;
}

int64_t StreamSlots::Count(const std::string& peer) const {
  MutexLock lock(mu_);
  auto it = per_peer_.find(peer);
  return it == per_peer_.end() ? 0 : it->second;
}

}  // namespace ckpt
