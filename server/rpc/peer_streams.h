#pragma once
// PeerStreams counts the open worker streams of each peer address, for
// limits.max_streams_per_peer: one machine (or one attacker) cannot take every stream the daemon
// will hold.
//
// Threading: safe from any thread (one mutex, held for a hash-map update).

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/mutex.h"

namespace ckpt {

class PeerStreams {
 public:
  explicit PeerStreams(int64_t max_per_peer) : max_per_peer_(max_per_peer) {}

  // Counts a stream of `peer`, unless that peer already has max_per_peer: then false.
  bool TryAdd(const std::string& peer) CKPT_EXCLUDES(mu_);
  // A stream counted by TryAdd ended.
  void Remove(const std::string& peer) CKPT_EXCLUDES(mu_);
  int64_t Count(const std::string& peer) const CKPT_EXCLUDES(mu_);

 private:
  const int64_t max_per_peer_;
  mutable Mutex mu_;
  std::unordered_map<std::string, int64_t> streams_ CKPT_GUARDED_BY(mu_);  // only peers with some
};

}  // namespace ckpt
