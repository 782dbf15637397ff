#pragma once
// When a pipeline's session retries at the standby pace (PipelineSession::kStandbyPollMax) rather
// than its normal backoff. A daemon that answers as a standby of an HA group says a takeover is
// under way, due within the election TTL: the worker should find the new leader within about a
// second of it, not after a backoff grown while the standby campaigned. But only for `window`
// after the first such answer since the last welcome: a group that stays without a leader (etcd's
// quorum lost) is then retried at the normal backoff again, and a welcome starts it over.
//
// Threading: a plain value; requires external synchronization (the session's strand). Times are
// passed in, so that tests need no clock.

#include <chrono>

namespace ckpt::sdk::internal {

class StandbyPoll {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit StandbyPoll(std::chrono::milliseconds window) : window_(window) {}

  // A stream ended at `now`: whether it had been welcomed, and whether a daemon answered as a
  // standby (its trailer named a leader, or said there is none yet).
  void StreamEnded(bool was_welcomed, bool standby_answered, TimePoint now) {
    if (was_welcomed) answered_ = false;
    if (standby_answered && !answered_) {
      answered_ = true;
      since_ = now;
    }
  }

  // Whether the next retry goes at the standby pace.
  bool Active(TimePoint now) const { return answered_ && now - since_ < window_; }

 private:
  const std::chrono::milliseconds window_;
  bool answered_ = false;  // a standby answered since the last welcome (or the start) ...
  TimePoint since_;        // ... first at this time
};

}  // namespace ckpt::sdk::internal
