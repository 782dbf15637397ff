#pragma once
// When a pipeline's session retries at the standby pace (PipelineSession::kStandbyPollMax) rather
// than its normal backoff. A daemon that answers as a standby of an HA group says a takeover is
// under way, due within the election TTL: the worker should find the new leader within about a
// second of it, not after a backoff grown while the standby campaigned. So does a leader lost by a
// worker that knows several daemons (a stream that had stayed welcomed for a while ended
// UNAVAILABLE): its leader may have died, and the standby's answer may never reach this worker
// before the takeover (its channel to the standby can still fail fast from an earlier outage, a
// restart of that standby). A stream lost soon after its welcome, again and again, is not such a
// sign: it backs off as any other. The pace lasts only `window` after the first sign since the
// last welcome: a group that stays without a leader (etcd's quorum lost) is then retried at the
// normal backoff again, and a welcome starts it over.
//
// Threading: a plain value; requires external synchronization (the session's strand). Times are
// passed in, so that tests need no clock.

#include <chrono>

namespace ckpt::sdk::internal {

class StandbyPoll {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `in_group`: the worker was given more than one daemon, so a lost leader has a successor.
  StandbyPoll(std::chrono::milliseconds window, bool in_group)
      : window_(window), in_group_(in_group) {}

  // A stream ended at `now`: whether it had been welcomed, whether a daemon answered as a
  // standby (its trailer named a leader, or said there is none yet), and whether it was a leader
  // lost (welcomed and up for a while, then UNAVAILABLE).
  void StreamEnded(bool was_welcomed, bool standby_answered, bool leader_lost, TimePoint now) {
    if (was_welcomed) answered_ = false;
    if ((standby_answered || (was_welcomed && leader_lost && in_group_)) && !answered_) {
      answered_ = true;
      since_ = now;
    }
  }

  // Whether the next retry goes at the standby pace.
  bool Active(TimePoint now) const { return answered_ && now - since_ < window_; }

 private:
  const std::chrono::milliseconds window_;
  const bool in_group_;
  bool answered_ = false;  // a standby answered (or a welcomed stream was lost) since the last
                           // welcome or the start ...
  TimePoint since_;        // ... first at this time
};

}  // namespace ckpt::sdk::internal
