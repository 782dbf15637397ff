#include "views/task_order.h"

#include <algorithm>

namespace ckpt {

std::vector<const v1::TaskCheckpointInfo*> TasksSlowestFirst(const v1::CheckpointInfo& checkpoint) {
  std::vector<const v1::TaskCheckpointInfo*> rows;
  rows.reserve(checkpoint.tasks_size());
  for (const auto& t : checkpoint.tasks()) rows.push_back(&t);
  // The tasks come ordered by id, and a stable sort keeps that order among equals.
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    if ((a->acked_at_ms() == 0) != (b->acked_at_ms() == 0)) return a->acked_at_ms() == 0;
    return a->acked_at_ms() > b->acked_at_ms();
  });
  return rows;
}

}  // namespace ckpt
