#include "rpc/peer_streams.h"

namespace ckpt {

bool PeerStreams::TryAdd(const std::string& peer) {
  MutexLock lock(mu_);
  int64_t& count = streams_[peer];
  if (count >= max_per_peer_) return false;  // count is at least 1 here: the entry stays
  ++count;
  return true;
}

void PeerStreams::Remove(const std::string& peer) {
  MutexLock lock(mu_);
  auto it = streams_.find(peer);
  if (it == streams_.end()) return;
  if (--it->second <= 0) streams_.erase(it);
}

int64_t PeerStreams::Count(const std::string& peer) const {
  MutexLock lock(mu_);
  auto it = streams_.find(peer);
  return it == streams_.end() ? 0 : it->second;
}

}  // namespace ckpt
