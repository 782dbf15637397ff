#pragma once
// StreamSlots: the worker streams the daemon holds, in all and per peer address, for
// limits.max_streams and limits.max_streams_per_peer. A stream takes its slot before it reads a
// byte (WorkerService.Connect) and gives it back at OnDone, so that neither limit can be passed
// by streams connecting at once, and refused streams hold none.
//
// Threading: safe from any thread (one mutex, held for a counter and a hash-map update).

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/mutex.h"

namespace ckpt {

class StreamSlots {
 public:
  // Made on the controlling thread, used on gRPC's: the constructor's empty critical section
  // orders what it initialised before every later lock, wherever gRPC runs the caller.
  StreamSlots(int64_t max_total, int64_t max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {
    MutexLock lock(mu_);
  }

  enum class Outcome { kTaken, kAllTaken, kPeerFull };
  // Takes a slot for a stream of `peer`, unless the daemon or that peer is at its limit.
  Outcome TryTake(const std::string& peer) CKPT_EXCLUDES(mu_);
  // A stream that took a slot ended.
  void Remove(const std::string& peer) CKPT_EXCLUDES(mu_);
  int64_t total() const CKPT_EXCLUDES(mu_);
  int64_t Count(const std::string& peer) const CKPT_EXCLUDES(mu_);

 private:
  const int64_t max_total_;
  const int64_t max_per_peer_;
  mutable Mutex mu_;
  int64_t total_ CKPT_GUARDED_BY(mu_) = 0;
  std::unordered_map<std::string, int64_t> per_peer_ CKPT_GUARDED_BY(mu_);  // peers with some
};

}  // namespace ckpt
