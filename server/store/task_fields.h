#pragma once
// The fields of a task's object in a stored checkpoint (task_json.h), by name: what both readers
// of that text (the general one and the fast path) look for, and the order both leave figures in.

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"

namespace ckpt {

enum class TaskField {
  kUri,
  kSizeBytes,
  kChecksum,
  kWorkerId,
  kAckedAt,
  kSync,
  kAsync,
  kAlignment,
  kAlignmentBytes,
  kOther  // any other key; also the count of the fields above
};
inline constexpr size_t kTaskFieldCount = static_cast<size_t>(TaskField::kOther);

inline TaskField TaskFieldNamed(std::string_view name) {
  static constexpr std::pair<std::string_view, TaskField> kNames[] = {
      {"uri", TaskField::kUri},
      {"size_bytes", TaskField::kSizeBytes},
      {"checksum", TaskField::kChecksum},
      {"worker_id", TaskField::kWorkerId},
      {"acked_at_ms", TaskField::kAckedAt},
      {"sync_duration_ms", TaskField::kSync},
      {"async_duration_ms", TaskField::kAsync},
      {"alignment_duration_ms", TaskField::kAlignment},
      {"bytes_processed_during_alignment", TaskField::kAlignmentBytes}};
  for (const auto& [known, field] : kNames) {
    if (name == known) return field;
  }
  return TaskField::kOther;
}

// CompletedCheckpoint::task_figures' order, by task id. Texts as the stores write them come in
// that order already (checked first); a hand-made one may not.
inline void SortByTaskId(std::vector<TaskFigures>* figures) {
  const auto by_id = [](const TaskFigures& a, const TaskFigures& b) {
    return a.task_id < b.task_id;
  };
  if (!std::is_sorted(figures->begin(), figures->end(), by_id)) {
    std::sort(figures->begin(), figures->end(), by_id);
  }
}

}  // namespace ckpt
