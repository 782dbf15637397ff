#pragma once
// The positions a pipeline's tasks reported (heartbeat.positions) and the gate they open
// (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): a periodic trigger waits until
// every task reported a position at least `position_interval` past the last checkpoint's. The gate
// counts the tasks at or past its threshold as reports come in, so a report costs O(log tasks) and
// never a scan of the task set.
//
// Threading: none of its own; it belongs to its pipeline's coordinator (that pipeline's strand).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/task_id_set.h"

namespace ckpt {

// Positions above this are refused: a target one interval past it still fits in an int64.
inline constexpr int64_t kMaxPosition = int64_t{1} << 60;

// The smallest multiple of `interval` (> 0) strictly greater than `above` (>= 0), saturating at
// kMaxPosition's next multiple.
int64_t NextMultiple(int64_t above, int64_t interval);

class PositionGate {
 public:
  // The position every task must reach. Recounts the tasks at or past it (O(tasks)).
  void SetThreshold(int64_t threshold);
  int64_t threshold() const { return threshold_; }

  // Keeps the highest position reported for `task`. False when nothing changed, or when
  // `position` is outside [0, kMaxPosition] (the caller says why).
  bool Report(const std::string& task, int64_t position);
  // The task may resume from an older position (its stream ended, or it registered anew): what it
  // reported before no longer counts.
  void Forget(const std::string& task);
  // Keeps only the tasks of `tasks` (a changed task set).
  void Retain(const TaskIdSet& tasks);

  // Whether each of `expected` tasks reported a position at or past the threshold. The gate
  // holds only tasks the caller reported, which must be of the expected set.
  bool Open(size_t expected) const { return at_threshold_ >= expected; }
  // The highest position any task reported now; nullopt when none did.
  std::optional<int64_t> Highest() const;
  // The lowest; nullopt when none did. O(reported), like Highest.
  std::optional<int64_t> Lowest() const;
  std::optional<int64_t> PositionOf(const std::string& task) const;
  size_t reported() const { return positions_.size(); }
  // Changes with every report, forget and retain that changed something (a cheap "did anything
  // move" for whoever summarizes the positions).
  uint64_t version() const { return version_; }
  size_t at_threshold() const { return at_threshold_; }

 private:
  std::map<std::string, int64_t> positions_;
  int64_t threshold_ = 0;
  size_t at_threshold_ = 0;  // tasks of positions_ at or past threshold_
  uint64_t version_ = 0;
};

}  // namespace ckpt
