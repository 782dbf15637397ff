#pragma once
// TaskIdSet: a pipeline's task ids, sorted and without duplicates, in one vector.
//
// Why not std::set: a coordinator holds its task set for its whole life, and a daemon holds up to
// 100,000 coordinators. A set costs a heap node per id (about 80 bytes with the allocator's
// overhead, for an id short enough to live inside its string); a sorted vector costs the strings
// alone. Lookups are a binary search over a few ids, as fast as the tree's. The set never changes
// in place: an update of the spec makes a new one.
//
// Threading: none of its own; a value, owned like any other member.

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

namespace ckpt {

class TaskIdSet {
 public:
  TaskIdSet() = default;
  template <class Iterator>
  TaskIdSet(Iterator first, Iterator last) : ids_(first, last) {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    ids_.shrink_to_fit();
  }
  TaskIdSet(std::initializer_list<std::string> ids) : TaskIdSet(ids.begin(), ids.end()) {}

  // 1 or 0, as std::set::count.
  size_t count(const std::string& id) const {
    return std::binary_search(ids_.begin(), ids_.end(), id) ? 1 : 0;
  }
  // Where `id` is in begin()..end(); size() when absent.
  size_t IndexOf(const std::string& id) const {
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    return it != ids_.end() && *it == id ? static_cast<size_t>(it - ids_.begin()) : ids_.size();
  }
  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  // Ascending.
  std::vector<std::string>::const_iterator begin() const { return ids_.begin(); }
  std::vector<std::string>::const_iterator end() const { return ids_.end(); }

  bool operator==(const TaskIdSet&) const = default;

 private:
  std::vector<std::string> ids_;
};

}  // namespace ckpt
