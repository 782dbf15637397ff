#pragma once
// TaskOwners: which worker stream (session) holds each of a pipeline's tasks, by the task's index
// in the pipeline's TaskIdSet (task_id_set.h).
//
// Why not a map by task id: a coordinator holds it for its whole life, and a daemon holds up to
// 100,000 coordinators. A std::map<std::string, SessionId> costs a heap node per task with the
// name copied into it (about 80 bytes each, plus the map's 48): some 200 bytes a two-task
// pipeline. A vector of session ids costs 16 bytes of heap and its 24. The indices are the
// TaskIdSet's, so an update of the spec that changes the set remaps them (PipelineCoordinator::
// UpdateSpec).
//
// Threading: none of its own; a member of the coordinator, on its strand.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/actions.h"

namespace ckpt {

class TaskOwners {
 public:
  // Session ids start at 1 (WorkerService), so 0 means nobody.
  static constexpr SessionId kNobody = 0;

  // Who holds task `index`; kNobody when nobody does (or `index` is out of range, as
  // TaskIdSet::IndexOf answers for an unknown id).
  SessionId at(size_t index) const { return index < owners_.size() ? owners_[index] : kNobody; }
  void Set(size_t index, SessionId session) {
    if (index >= owners_.size()) {
      if (session == kNobody) return;
      owners_.resize(index + 1, kNobody);
    }
    if (owners_[index] == kNobody && session != kNobody) ++held_;
    if (owners_[index] != kNobody && session == kNobody) --held_;
    owners_[index] = session;
  }
  void Release(size_t index) { Set(index, kNobody); }
  // How many tasks have an owner.
  size_t held() const { return held_; }
  bool empty() const { return held_ == 0; }
  void clear() {
    std::vector<SessionId>().swap(owners_);
    held_ = 0;
  }

 private:
  std::vector<SessionId> owners_;  // by task index; shorter than the set until its last is held
  size_t held_ = 0;
};

}  // namespace ckpt
