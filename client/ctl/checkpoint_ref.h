#pragma once
// "JOB/PIPELINE[@ID]": how ckptctl names a checkpoint to restore from (--from, --restore-from).

#include <optional>
#include <string>

#include "ckpt/v1/common.pb.h"

namespace ckpt::ctl {

// Job and pipeline ids hold no '/' (they name paths), so the first '/' splits them; "@ID" at the
// end names the checkpoint (none: the pipeline's newest completed). Nothing and *error when the
// text is not of that form.
std::optional<v1::CheckpointRef> ParseCheckpointRef(const std::string& text, std::string* error);

}  // namespace ckpt::ctl
