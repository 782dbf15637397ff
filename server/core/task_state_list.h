// Task states held for long (a pipeline's restore point, all its life) as one sorted array rather
// than a std::map: a map's node costs each task about 48 bytes more than its state and name, and
// one allocation more.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"

namespace ckpt {

// Sorted by task id, no duplicates (as the map it was made from).
using TaskStateList = std::vector<std::pair<std::string, TaskState>>;

// Moves each name and state out of `states` (node by node, so that names are moved, not copied).
inline TaskStateList ToTaskStateList(std::map<std::string, TaskState>&& states) {
  TaskStateList list;
  list.reserve(states.size());
  while (!states.empty()) {
    auto node = states.extract(states.begin());
    list.emplace_back(std::move(node.key()), std::move(node.mapped()));
  }
  return list;
}

// The state of `task`, or null.
inline const TaskState* FindTaskState(const TaskStateList& list, std::string_view task) {
  const auto it = std::lower_bound(list.begin(), list.end(), task,
                                   [](const std::pair<std::string, TaskState>& entry,
                                      std::string_view name) { return entry.first < name; });
  return it != list.end() && it->first == task ? &it->second : nullptr;
}

}  // namespace ckpt
