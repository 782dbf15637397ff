#include "core/restore_pins.h"

namespace ckpt {

void RestorePins::Add(const CheckpointRef& ref) {
  MutexLock lock(mu_);
  ++pins_[ref.key][ref.checkpoint_id];
}

bool RestorePins::Remove(const CheckpointRef& ref) {
  MutexLock lock(mu_);
  auto source = pins_.find(ref.key);
  if (source == pins_.end()) return false;
  auto pin = source->second.find(ref.checkpoint_id);
  if (pin == source->second.end()) return false;
  if (--pin->second > 0) return false;
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

size_t RestorePins::CountFor(const PipelineKey& source) const {
  MutexLock lock(mu_);
  auto it = pins_.find(source);
  return it == pins_.end() ? 0 : it->second.size();
}

}  // namespace ckpt
