#include "core/id_reservation.h"

#include <algorithm>
#include <string>

#include "core/spec_validation.h"

namespace ckpt {

IdReservation::IdReservation(int64_t stored_counter, int64_t last_completed_id)
    : next_(std::max(stored_counter, last_completed_id) + 1), reserved_end_(stored_counter) {}

std::optional<int64_t> IdReservation::Take() {
  if (next_ > reserved_end_) {
    trigger_waits_ = true;
    return std::nullopt;
  }
  return next_++;
}

void IdReservation::MaybeReserve(int64_t block, Actions& out) {
  if (in_flight_ || retry_at_) return;
  const int64_t left = reserved_end_ - next_ + 1;
  if (left > block / 2) return;
  if (Highest() > kMaxCheckpointId - block) {
    // Unreachable in practice (ValidateStored keeps loaded counters far below): never overflow.
    if (!exhausted_logged_) {
      out.push_back(Log{LogLevel::kError, "checkpoint ids are exhausted (the counter reached " +
                                              std::to_string(reserved_end_) +
                                              "); no more ids are reserved"});
      exhausted_logged_ = true;
    }
    return;
  }
  in_flight_ = true;
  out.push_back(ReserveIds{Highest() + block});
}

bool IdReservation::OnReserved(int64_t counter) {
  in_flight_ = false;
  reserved_end_ = std::max(reserved_end_, counter);
  const bool waited = trigger_waits_;
  trigger_waits_ = false;
  return waited;
}

void IdReservation::OnReserveFailed(SteadyTime retry_at) {
  in_flight_ = false;
  retry_at_ = retry_at;
}

bool IdReservation::TakeDueRetry(SteadyTime now) {
  if (!retry_at_ || now < *retry_at_) return false;
  retry_at_.reset();
  return true;
}

void IdReservation::RaiseAbove(int64_t id) { next_ = std::max(next_, id + 1); }

}  // namespace ckpt
