// Task states held for long (a pipeline's restore point, all its life) packed into one block of
// bytes rather than a container of strings: a pipeline of two tasks with short URIs holds about 60
// bytes here instead of about 210 (a (name, TaskState) pair is 104 bytes before any string spills
// to the heap), and a wide pipeline's long URIs cost one allocation in all rather than one each.
//
// Immutable once made; a read decodes in place. Lookups by task id are binary searches over an
// offset table at the front of the block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/types.h"

namespace ckpt {

class PackedTaskStates {
 public:
  // One task's state, viewing the block: valid as long as the PackedTaskStates it came from.
  struct Entry {
    std::string_view task;
    std::string_view uri;
    int64_t size_bytes = 0;
    std::string_view checksum;

    TaskState ToTaskState() const {
      return TaskState{std::string(uri), size_bytes, std::string(checksum)};
    }
  };

  PackedTaskStates() = default;
  // Keeps the map's order (by task id, no duplicates).
  explicit PackedTaskStates(const std::map<std::string, TaskState>& states);

  size_t size() const;
  bool empty() const { return size() == 0; }
  // The i-th state in task id order; i < size().
  Entry at(size_t i) const;
  // The state of `task`, if held.
  std::optional<Entry> Find(std::string_view task) const;
  // Every state, as the map it was made from.
  std::map<std::string, TaskState> ToMap() const;

 private:
  // [count: uint64][offset of each entry from the block's start: uint64 x count][entries]; an
  // entry is its task id, URI and checksum (each a varint length, then the bytes) and its size
  // (a varint of the int64's bits). Null when empty.
  std::unique_ptr<char[]> block_;
};

}  // namespace ckpt
