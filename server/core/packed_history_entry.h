// One id of a pipeline's history as its coordinator holds it: a HistoryEntry in 8 bytes instead
// of 16. A pipeline holds `retained` of these all its life (at 100,000 pipelines with the
// default 10, 8 MB less).
#pragma once

#include <cstdint>

#include "core/types.h"

namespace ckpt {

class PackedHistoryEntry {
 public:
  // Ids above this do not fit. kMaxCheckpointId is no larger (a static_assert in
  // pipeline_coordinator.cc): the stores refuse ids above it at load (ValidateStored,
  // ValidateHistoryId), and none is handed out.
  static constexpr int64_t kMaxId = (int64_t{1} << 62) - 1;

  PackedHistoryEntry(int64_t checkpoint_id, CheckpointKind kind)
      : bits_(static_cast<uint64_t>(checkpoint_id) << 2 | static_cast<uint64_t>(kind)) {}
  explicit PackedHistoryEntry(const HistoryEntry& entry)
      : PackedHistoryEntry(entry.checkpoint_id, entry.kind) {}

  int64_t checkpoint_id() const { return static_cast<int64_t>(bits_ >> 2); }
  CheckpointKind kind() const { return static_cast<CheckpointKind>(bits_ & 3); }
  bool plain() const { return kind() == CheckpointKind::kCheckpoint; }

 private:
  uint64_t bits_;
};

static_assert(sizeof(PackedHistoryEntry) == 8);
static_assert(static_cast<int>(CheckpointKind::kSavepointAndStop) < 4, "the kind takes two bits");

}  // namespace ckpt
