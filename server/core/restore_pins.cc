#include "core/restore_pins.h"

namespace ckpt {

void RestorePins::Add(const CheckpointRef& ref, const PipelineKey& holder) {
  MutexLock lock(mu_);
  ++pins_[ref.key][ref.checkpoint_id][holder];
}

bool RestorePins::Remove(const CheckpointRef& ref, const PipelineKey& holder) {
  MutexLock lock(mu_);
  auto source = pins_.find(ref.key);
  if (source == pins_.end()) return false;
  auto pin = source->second.find(ref.checkpoint_id);
  if (pin == source->second.end()) return false;
  auto held = pin->second.find(holder);
  if (held == pin->second.end()) return false;
  if (--held->second > 0) return false;
  pin->second.erase(held);
  if (!pin->second.empty()) return false;
  source->second.erase(pin);
  if (source->second.empty()) pins_.erase(source);
  return true;
}

bool RestorePins::IsPinned(const PipelineKey& source, int64_t checkpoint_id) const {
  MutexLock lock(mu_);
  auto it = pins_.find(source);
  return it != pins_.end() && it->second.count(checkpoint_id) > 0;
}

std::vector<int64_t> RestorePins::PinnedIds(const PipelineKey& source) const {
  MutexLock lock(mu_);
  std::vector<int64_t> ids;
  auto it = pins_.find(source);
  if (it == pins_.end()) return ids;
  for (const auto& [id, holders] : it->second) ids.push_back(id);
  return ids;
}

std::vector<std::pair<int64_t, PipelineKey>> RestorePins::HeldByOthers(
    const PipelineKey& source) const {
  MutexLock lock(mu_);
  std::vector<std::pair<int64_t, PipelineKey>> held;
  auto it = pins_.find(source);
  if (it == pins_.end()) return held;
  for (const auto& [id, holders] : it->second) {
    for (const auto& [holder, count] : holders) {
      if (holder != source) held.emplace_back(id, holder);
    }
  }
  return held;
}

}  // namespace ckpt
