#pragma once
// IdReservation: a pipeline's checkpoint ids. They are reserved durably in blocks ahead of use, so
// that a trigger does not wait on the store in the common case and no id is handed out twice,
// across restarts included (docs/DESIGN.md, "Layers"): next() .. reserved_end() are durable and
// free. This part decides when to ask for a block (at most half of one left) and holds the
// request's state (in flight, or a time to retry at after a failure); the coordinator carries
// out the ReserveIds action it appends and reports the outcome.
//
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.

#include <cstdint>
#include <optional>

#include "core/actions.h"
#include "core/maybe_time.h"

namespace ckpt {

class IdReservation {
 public:
  // From the store: the durable counter and the newest completed id (a group member's ids came
  // from its group, above its own counter).
  IdReservation(int64_t stored_counter, int64_t last_completed_id);

  // The next id, or none when no durable id is left: then a trigger waits (waiting()) until a
  // block is reserved.
  std::optional<int64_t> Take();
  bool waiting() const { return trigger_waits_; }

  // Appends a ReserveIds of one more block of `block` ids when at most half a block is left and
  // no request is in flight or waiting for its retry; an error Log, once, when the ids are
  // exhausted.
  void MaybeReserve(int64_t block, Actions& out);
  // The store made ids durable up to `counter`. True when a trigger waited for them: the caller
  // re-drives it.
  bool OnReserved(int64_t counter);
  // The reservation failed; it is asked for again once `retry_at` has come (TakeDueRetry).
  void OnReserveFailed(SteadyTime retry_at);
  // When a failed reservation is to be retried (none while one is in flight).
  MaybeTime retry_at() const { return in_flight_ ? MaybeTime() : retry_at_; }
  // True (once) when the retry is due at `now`.
  bool TakeDueRetry(SteadyTime now);

  // Ids continue above `id` (one a group handed out to this pipeline).
  void RaiseAbove(int64_t id);
  int64_t next() const { return next_; }
  int64_t reserved_end() const { return reserved_end_; }
  // The highest id used or durably reserved.
  int64_t Highest() const { return next_ - 1 > reserved_end_ ? next_ - 1 : reserved_end_; }

 private:
  int64_t next_ = 1;
  int64_t reserved_end_ = 0;
  MaybeTime retry_at_;
  bool in_flight_ = false;
  bool trigger_waits_ = false;
  bool exhausted_logged_ = false;
};

}  // namespace ckpt
