#pragma once
// The order a checkpoint's tasks are shown in, slowest first: `ckptctl checkpoint get` and the
// web view's checkpoint page.

#include <vector>

#include "ckpt/v1/admin.pb.h"

namespace ckpt {

// The tasks that have not acked first (by task id), then by how long after the trigger they
// acked, latest first. Pointers into `checkpoint`.
std::vector<const v1::TaskCheckpointInfo*> TasksSlowestFirst(const v1::CheckpointInfo& checkpoint);

}  // namespace ckpt
