// Positions (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): the tasks' reported
// progress, the position gate of periodic triggers, the position a round carries, and the step
// after a passed position.
#include <algorithm>

#include "common/name_list.h"
#include "core/pipeline_coordinator.h"
#include "core/printable.h"

namespace ckpt {

void PipelineCoordinator::SyncPositionGate() {
  // A member keeps positions for its group's gate (GroupPositions), whatever its own spec says.
  if (spec_.position_interval <= 0 && !group_) {
    positions_.reset();
    return;
  }
  if (!positions_) {
    positions_ =
        std::make_unique<PositionTracking>(clock_.SteadyNow() + options_->positions_warn_interval);
  }
  if (positions_->Sync(expected_, BasePosition(), spec_.position_interval)) {
    positions_->NoteOpened(clock_.SteadyNow());
  }
}

SteadyTime PipelineCoordinator::PeriodicDueWithPositions(SteadyTime due) const {
  return positions_ ? positions_->DueOnceOpen(due) : due;
}

int64_t PipelineCoordinator::BasePosition() const { return restore_ ? restore_->position : 0; }

bool PipelineCoordinator::PositionsOpen() const {
  return !positions_ || positions_->Open(expected_.size());
}

int64_t PipelineCoordinator::NextRoundPosition() {
  if (!positions_) return 0;
  return positions_->NextRoundPosition(BasePosition(), spec_.position_interval);
}

void PipelineCoordinator::NotePassedPosition(int64_t position) {
  if (!positions_ || !pending_) return;
  positions_->NotePassed(position, pending_->position());
}

void PipelineCoordinator::WarnUnreportedPositions(SteadyTime now, Actions& out) {
  if (!positions_ || !positions_->TakeWarnDue(now, options_->positions_warn_interval)) return;
  if (positions_->gate().reported() >= expected_.size()) return;  // all report: only slow
  std::vector<std::string> unreported;
  size_t total = 0;
  for (const std::string& task : spec_.task_ids) {
    if (positions_->gate().PositionOf(task)) continue;
    ++total;
    if (unreported.size() < kNamesListed) unreported.push_back(Printable(task));
  }
  out.push_back(Log{LogLevel::kWarn,
                    "position_interval is " + std::to_string(spec_.position_interval) + " but " +
                        std::to_string(total) + " of " + std::to_string(expected_.size()) +
                        " tasks never reported a position (heartbeat.positions): " +
                        FirstNames(unreported, total) +
                        "; no periodic checkpoint until every task does"});
}

void PipelineCoordinator::ForgetPositions(const std::vector<std::string>& tasks) {
  if (!positions_) return;
  for (const std::string& task : tasks) positions_->Forget(task);
}

Actions PipelineCoordinator::OnPositions(
    SessionId session, const std::vector<std::pair<std::string, int64_t>>& positions) {
  Actions out;
  if (!positions_ || deleted_) return out;
  const bool was_open = PositionsOpen();
  bool changed = false;
  bool refused = false;
  for (const auto& [task, position] : positions) {
    if (OwnerOf(task) != session) {
      refused = true;
      continue;
    }
    if (position < 0 || position > kMaxPosition) {
      refused = true;
      continue;
    }
    changed |= positions_->Report(task, position);
  }
  if (refused) {
    std::string text =
        "ignored positions of a heartbeat: tasks this stream does not hold, or "
        "positions outside [0, " +
        std::to_string(kMaxPosition) + "]";
    if (AllowSessionWarning(session, &text)) out.push_back(Log{LogLevel::kWarn, std::move(text)});
  }
  if (!was_open && PositionsOpen()) positions_->NoteOpened(clock_.SteadyNow());
  if (changed) Rearm(out);  // the gate may have opened
  return out;
}

}  // namespace ckpt
