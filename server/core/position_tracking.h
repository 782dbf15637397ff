#pragma once
// PositionTracking: what a pipeline with a position_interval (or a group member) keeps about its
// tasks' positions (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): the gate a
// periodic trigger waits for (position_gate.h), since when it is open, the position the next
// round carries, the one-interval step after a round failed on a passed position, and when the
// tasks that never reported are named next. One of the coordinator's parts (docs/DESIGN.md,
// "The coordinator's parts"); the coordinator makes it only for a pipeline that needs it.
//
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/position_gate.h"
#include "core/task_id_set.h"

namespace ckpt {

class PositionTracking {
 public:
  explicit PositionTracking(SteadyTime first_warn_at) : next_warn_at_(first_warn_at) {}

  const PositionGate& gate() const { return gate_; }
  bool Open(size_t expected) const { return gate_.Open(expected); }

  // The gate's threshold is one `interval` (>= 0) past `base` (the last checkpoint's position),
  // for the tasks of `expected` only (a changed set forgets the others). True when that opened
  // the gate (the caller then says when: NoteOpened).
  bool Sync(const TaskIdSet& expected, int64_t base, int64_t interval);
  // A task's report (the caller checked that the reporting stream holds it). False when nothing
  // changed, or when `position` is outside [0, kMaxPosition].
  bool Report(const std::string& task, int64_t position);
  // The task may resume from an older position: what it reported no longer counts.
  void Forget(const std::string& task) { gate_.Forget(task); }
  // The gate has just opened (Sync said so, or reports opened it): from `now` on, a periodic
  // trigger it held is late.
  void NoteOpened(SteadyTime now) { opened_at_ = now; }
  // A periodic trigger due at `due` is due, once the positions are counted, not before the gate
  // opened (the trigger delay measures the scheduler, not the tasks).
  SteadyTime DueOnceOpen(SteadyTime due) const { return due > opened_at_ ? due : opened_at_; }

  // The position the next round carries: the next multiple of `interval` above every reported
  // position and `base`, one more after a passed position (once).
  int64_t NextRoundPosition(int64_t base, int64_t interval);
  // A task of the pending round (at `round_position`; 0: none) is at `position`: past it, the
  // next round steps one interval further.
  void NotePassed(int64_t position, int64_t round_position);
  // Whether a step is owed; and clears it (a group member's round: the group applies it).
  bool TakeStep();

  // Whether the warning naming the tasks that never reported is due at `now`; if so, the next is
  // `every` later.
  bool TakeWarnDue(SteadyTime now, Millis every);
  SteadyTime next_warn_at() const { return next_warn_at_; }

 private:
  PositionGate gate_;
  bool step_next_ = false;  // the last round failed on a passed position: one interval more
  SteadyTime next_warn_at_{};
  SteadyTime opened_at_{};  // when the gate last opened
};

}  // namespace ckpt
