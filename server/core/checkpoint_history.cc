#include "core/checkpoint_history.h"

#include <algorithm>

namespace ckpt {

CheckpointHistory::CheckpointHistory(const std::vector<HistoryEntry>& stored, int64_t horizon,
                                     std::vector<int64_t> last_released)
    : entries_(stored.begin(), stored.end()),
      last_released_(std::move(last_released)),
      horizon_(horizon) {}

const PackedHistoryEntry* CheckpointHistory::Find(int64_t checkpoint_id) const {
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const PackedHistoryEntry& e) {
    return e.checkpoint_id() == checkpoint_id;
  });
  return it == entries_.end() ? nullptr : &*it;
}

size_t CheckpointHistory::savepoints() const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(),
                                           [](const PackedHistoryEntry& e) { return !e.plain(); }));
}

std::vector<int64_t> CheckpointHistory::Ids() const {
  std::vector<int64_t> ids;
  ids.reserve(entries_.size());
  for (const PackedHistoryEntry& entry : entries_) ids.push_back(entry.checkpoint_id());
  return ids;
}

int64_t CheckpointHistory::WindowStart(int32_t retained, int64_t extra) const {
  const int64_t keep = std::max<int32_t>(retained, 1);
  int64_t counted = extra > 0 ? 1 : 0;
  if (counted == keep) return extra;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (!it->plain()) continue;
    if (++counted == keep) return it->checkpoint_id();
  }
  return 0;
}

int64_t CheckpointHistory::Horizon(int32_t retained, int64_t extra) const {
  return std::max(WindowStart(retained, extra), horizon_);
}

std::vector<int64_t> CheckpointHistory::ReleasedBy(int32_t retained, int64_t extra,
                                                   const std::vector<int64_t>& keep) const {
  const int64_t window_start = WindowStart(retained, extra);
  std::vector<int64_t> released;
  for (const PackedHistoryEntry& entry : entries_) {
    if (entry.plain() && entry.checkpoint_id() < window_start &&
        !std::binary_search(keep.begin(), keep.end(), entry.checkpoint_id())) {
      released.push_back(entry.checkpoint_id());
    }
  }
  return released;
}

std::vector<int64_t> CheckpointHistory::Adopt(int64_t checkpoint_id, CheckpointKind kind,
                                              int32_t retained, const std::vector<int64_t>& keep) {
  // The window and the commit landing now: what the history usually holds just before its trim.
  const size_t window = static_cast<size_t>(std::max<int32_t>(retained, 1)) + 1;
  if (entries_.size() == entries_.capacity()) {
    // Doubling up to the window, then exactly that: the history lives as long as the pipeline.
    // Beyond the window (savepoints, pinned ids) doubling again.
    size_t room = std::max<size_t>(2 * entries_.size(), 1);
    if (entries_.size() < window) room = std::min(room, window);
    entries_.reserve(room);
  }
  entries_.emplace_back(checkpoint_id, kind);
  // The store's commit kept the max(retained, 1) newest plain checkpoints, every savepoint and
  // the pinned ones it was told to keep; the same ones stay here. Ids are committed in
  // increasing order, so the history stays sorted. Trimmed in place: no allocation a commit.
  const int64_t window_start = WindowStart(retained);
  horizon_ = std::max(horizon_, window_start);
  std::vector<int64_t> released;
  size_t kept = 0;
  for (const PackedHistoryEntry entry : entries_) {
    const bool out_of_window = entry.plain() && entry.checkpoint_id() < window_start &&
                               !std::binary_search(keep.begin(), keep.end(), entry.checkpoint_id());
    if (out_of_window) {
      released.push_back(entry.checkpoint_id());
    } else {
      entries_[kept++] = entry;
    }
  }
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(kept), entries_.end());
  // Savepoints or pins held once made it grow: it shrinks when they have gone.
  if (entries_.capacity() > 2 * window && entries_.size() < window) entries_.shrink_to_fit();
  if (!released.empty()) NoteReleased(released);
  return released;
}

std::vector<int64_t> CheckpointHistory::OutsideWindow(int32_t retained) const {
  const int64_t horizon = Horizon(retained);
  std::vector<int64_t> ids;
  for (const PackedHistoryEntry& entry : entries_) {
    if (!entry.plain() || entry.checkpoint_id() >= horizon) continue;
    if (BeingDeleted(entry.checkpoint_id())) continue;
    ids.push_back(entry.checkpoint_id());
  }
  return ids;
}

void CheckpointHistory::MarkDeleting(const std::vector<int64_t>& ids) {
  if (ids.empty()) return;
  if (!deleting_) deleting_ = std::make_unique<std::vector<int64_t>>();
  deleting_->insert(deleting_->end(), ids.begin(), ids.end());
}

bool CheckpointHistory::BeingDeleted(int64_t checkpoint_id) const {
  return deleting_ &&
         std::find(deleting_->begin(), deleting_->end(), checkpoint_id) != deleting_->end();
}

std::vector<int64_t> CheckpointHistory::OnDeleted(const std::vector<int64_t>& ids) {
  OnDeleteFailed(ids);  // no longer in flight either way
  std::vector<int64_t> released;
  for (int64_t id : ids) {
    const auto removed = std::erase_if(
        entries_, [id](const PackedHistoryEntry& e) { return e.checkpoint_id() == id; });
    if (removed > 0) released.push_back(id);
  }
  return released;
}

void CheckpointHistory::OnDeleteFailed(const std::vector<int64_t>& ids) {
  if (!deleting_) return;
  for (int64_t id : ids) std::erase(*deleting_, id);
  if (deleting_->empty()) deleting_.reset();
}

void CheckpointHistory::NoteReleased(const std::vector<int64_t>& released) {
  last_released_ = released;
  resend_release_ = false;
}

}  // namespace ckpt
