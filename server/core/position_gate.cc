#include "core/position_gate.h"

#include <algorithm>

namespace ckpt {

int64_t NextMultiple(int64_t above, int64_t interval) {
  above = std::clamp<int64_t>(above, 0, kMaxPosition);
  return (above / interval + 1) * interval;
}

void PositionGate::SetThreshold(int64_t threshold) {
  threshold_ = threshold;
  at_threshold_ = static_cast<size_t>(std::count_if(
      positions_.begin(), positions_.end(), [&](const auto& p) { return p.second >= threshold_; }));
}

bool PositionGate::Report(const std::string& task, int64_t position) {
  if (position < 0 || position > kMaxPosition) return false;
  auto [it, inserted] = positions_.try_emplace(task, position);
  if (inserted || position > it->second) ++version_;
  if (!inserted) {
    if (position <= it->second) return false;
    if (it->second >= threshold_) {
      it->second = position;
      return true;
    }
    it->second = position;
  }
  if (position >= threshold_) ++at_threshold_;
  return true;
}

void PositionGate::Forget(const std::string& task) {
  auto it = positions_.find(task);
  if (it == positions_.end()) return;
  if (it->second >= threshold_) --at_threshold_;
  positions_.erase(it);
  ++version_;
}

void PositionGate::Retain(const TaskIdSet& tasks) {
  if (std::erase_if(positions_, [&](const auto& p) { return !tasks.count(p.first); }) > 0) {
    ++version_;
  }
  SetThreshold(threshold_);
}

std::optional<int64_t> PositionGate::Highest() const {
  if (positions_.empty()) return std::nullopt;
  int64_t highest = 0;
  for (const auto& [task, position] : positions_) highest = std::max(highest, position);
  return highest;
}

std::optional<int64_t> PositionGate::Lowest() const {
  if (positions_.empty()) return std::nullopt;
  int64_t lowest = kMaxPosition;
  for (const auto& [task, position] : positions_) lowest = std::min(lowest, position);
  return lowest;
}

std::optional<int64_t> PositionGate::PositionOf(const std::string& task) const {
  auto it = positions_.find(task);
  if (it == positions_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ckpt
