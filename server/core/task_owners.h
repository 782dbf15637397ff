#pragma once
// TaskOwners: which worker stream (session) holds each of a pipeline's tasks, and which tasks
// have registered at all in this process, by the task's index in the pipeline's TaskIdSet
// (task_id_set.h).
//
// Why not a map by task id (and a set of the registered ones, and each session's list of its
// tasks): a coordinator holds these for its whole life, and a daemon holds up to 100,000
// coordinators. A std::map<std::string, SessionId> costs a heap node per task with the name
// copied into it (about 80 bytes each, plus the map's 48), a session's own copy of its task
// names as much again: some 300 bytes a two-task pipeline. One vector of session ids, with a
// bit of each entry for "ever registered", costs 16 bytes of heap and 32 inline. The indices are
// the TaskIdSet's, so an update of the spec that changes the set remaps them
// (PipelineCoordinator::UpdateSpec).
//
// Threading: none of its own; a member of the coordinator, on its strand.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/actions.h"  // SessionId

namespace ckpt {

class TaskOwners {
 public:
  // Session ids start at 1 (WorkerService) and stay far below 2^63, so 0 means nobody and the
  // top bit is free for the "ever registered" mark (PipelineCoordinator::OnRegister refuses
  // any other).
  static constexpr SessionId kNobody = 0;
  static bool Holdable(SessionId session) { return session != kNobody && !(session & kEverBit); }

  // Who holds task `index`; kNobody when nobody does (or `index` is out of range, as
  // TaskIdSet::IndexOf answers for an unknown id).
  SessionId at(size_t index) const {
    return index < entries_.size() ? entries_[index] & ~kEverBit : kNobody;
  }
  // Whether task `index` registered since this process started.
  bool ever(size_t index) const {
    return index < entries_.size() && (entries_[index] & kEverBit) != 0;
  }
  // Task `index` of a set of `tasks` is held by `session` from now on (and has registered).
  void Hold(size_t index, size_t tasks, SessionId session) {
    if (!Holdable(session)) return;
    if (entries_.empty()) entries_.assign(tasks, kNobody);
    if (index >= entries_.size()) return;
    if (at(index) == kNobody) ++held_;
    entries_[index] = session | kEverBit;
  }
  // Nobody holds task `index` any more.
  void Release(size_t index) {
    if (at(index) == kNobody) return;
    entries_[index] &= kEverBit;
    --held_;
  }
  // How many tasks have a holder; how many ever registered.
  size_t held() const { return held_; }
  size_t ever_count() const {
    size_t n = 0;
    for (SessionId entry : entries_) n += (entry & kEverBit) ? 1 : 0;
    return n;
  }
  // Whether nobody holds any task.
  bool empty() const { return held_ == 0; }
  // Nobody holds anything (what registered stays marked).
  void ReleaseAll() {
    for (SessionId& entry : entries_) entry &= kEverBit;
    held_ = 0;
  }
  // The same tasks under a new set: `new_index(i)` is task i's index among `new_size` (or
  // new_size when it left). Returns the tasks that left while held: (holder, old index), a
  // holder once per such task.
  template <typename NewIndex>
  std::vector<std::pair<SessionId, size_t>> Remap(size_t new_size, NewIndex new_index) {
    std::vector<std::pair<SessionId, size_t>> left;
    if (entries_.empty()) return left;
    std::vector<SessionId> remapped(new_size, kNobody);
    size_t held = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const size_t j = new_index(i);
      if (j < new_size) {
        remapped[j] = entries_[i];
        held += (entries_[i] & ~kEverBit) != kNobody ? 1 : 0;
      } else if (at(i) != kNobody) {
        left.emplace_back(at(i), i);
      }
    }
    entries_ = std::move(remapped);
    held_ = held;
    return left;
  }

 private:
  static constexpr SessionId kEverBit = SessionId{1} << 63;

  std::vector<SessionId> entries_;  // by task index: holder | kEverBit; empty until the first hold
  size_t held_ = 0;
};

}  // namespace ckpt
