#pragma once
// The fields of a task's object in a stored checkpoint (task_json.h) and their keys: what the
// writer writes and every reader of that text looks for, and the order the readers leave figures
// in.

#include <algorithm>
#include <cstddef>
#include <string_view>
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

// The key each field is written under (the protos' names).
constexpr const char* TaskFieldKey(TaskField field) {
  switch (field) {
    case TaskField::kUri: return "uri";
    case TaskField::kSizeBytes: return "size_bytes";
    case TaskField::kChecksum: return "checksum";
    case TaskField::kWorkerId: return "worker_id";
    case TaskField::kAckedAt: return "acked_at_ms";
    case TaskField::kSync: return "sync_duration_ms";
    case TaskField::kAsync: return "async_duration_ms";
    case TaskField::kAlignment: return "alignment_duration_ms";
    case TaskField::kAlignmentBytes: return "bytes_processed_during_alignment";
    case TaskField::kOther: break;
  }
  return "";
}

inline TaskField TaskFieldNamed(std::string_view name) {
  for (size_t i = 0; i < kTaskFieldCount; ++i) {
    const auto field = static_cast<TaskField>(i);
    if (name == TaskFieldKey(field)) return field;
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
