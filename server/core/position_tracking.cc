#include "core/position_tracking.h"

#include <algorithm>

namespace ckpt {

bool PositionTracking::Sync(const TaskIdSet& expected, int64_t base, int64_t interval) {
  const bool was_open = gate_.Open(expected.size()) && gate_.reported() > 0;
  gate_.Retain(expected);
  const int64_t step = std::max<int64_t>(0, interval);
  gate_.SetThreshold(base > kMaxPosition - step ? kMaxPosition : base + step);
  return !was_open && gate_.Open(expected.size());
}

bool PositionTracking::Report(const std::string& task, int64_t position) {
  return gate_.Report(task, position);
}

int64_t PositionTracking::NextRoundPosition(int64_t base, int64_t interval) {
  const int64_t above = std::max(gate_.Highest().value_or(0), base);
  int64_t position = NextMultiple(above, interval);
  if (step_next_) position = NextMultiple(position, interval);
  step_next_ = false;  // once, not cumulative
  return position;
}

void PositionTracking::NotePassed(int64_t position, int64_t round_position) {
  if (round_position > 0 && position > round_position) step_next_ = true;
}

bool PositionTracking::TakeStep() {
  const bool step = step_next_;
  step_next_ = false;
  return step;
}

bool PositionTracking::TakeWarnDue(SteadyTime now, Millis every) {
  if (now < next_warn_at_) return false;
  next_warn_at_ = now + every;
  return true;
}

}  // namespace ckpt
