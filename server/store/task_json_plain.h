#pragma once
// ReadPlainTasksJson: the fast path of ReadTasksJsonText (task_json.h) for text as
// WriteTasksJson writes it, which is what a store reads back at start, 100,000 times for a large
// daemon: no whitespace, strings of printable ASCII without escapes, each task id and each field
// once, every field one this ckptd writes with its type. Any other text is not read here (false),
// and the general reader decides; for text read here it answers exactly as the general reader.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace ckpt {

// True: read into `states` and (unless null) `figures`, which start empty. False: not plain;
// both are left in an unspecified state for the caller to clear.
bool ReadPlainTasksJson(std::string_view text, std::map<std::string, TaskState>* states,
                        std::vector<TaskFigures>* figures);

}  // namespace ckpt
