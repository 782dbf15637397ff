#pragma once
// One task's part of a completed checkpoint as both store backends write it: a JSON object with
// its state (uri, size_bytes, checksum) and, when kept, its figures (worker_id, acked_at_ms and
// the durations it reported; zeros left out). SQLite keeps one object per task in a column,
// etcd in a value or its chunks; both read what the other writes.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.h"

namespace ckpt {

// `figures`: null when the task has none.
nlohmann::json TaskJson(const TaskState& state, const TaskFigures* figures);

// False when `value` is not a task's object. `figures` (may be null: not wanted) is filled when
// the object holds any, with `task_id`.
bool ReadTaskJson(const std::string& task_id, const nlohmann::json& value, TaskState* state,
                  TaskFigures* figures, bool* has_figures);

// The object of every task of `checkpoint` (task id -> TaskJson), figures beside their states.
nlohmann::json TasksJson(const CompletedCheckpoint& checkpoint);

// TasksJson(checkpoint).dump(), written straight into `out` without building the object (a
// store writes one a commit). False, `out` unspecified, when a string is not valid UTF-8 (as
// dump() then throws).
bool WriteTasksJson(const CompletedCheckpoint& checkpoint, std::string* out);

// Reads TasksJson's object into task_states and, unless `figures` is null, the figures (by task
// id). False when it is not such an object.
bool ReadTasksJson(const nlohmann::json& object, std::map<std::string, TaskState>* states,
                   std::vector<TaskFigures>* figures);

// ReadTasksJson(json::parse(text)), the same result for every text, without building the
// document: events straight into the map (a store reads one a pipeline at start, 100,000 of them
// for a large daemon). A key twice keeps its last value, as the document does. `states` and
// `figures` start empty.
bool ReadTasksJsonText(std::string_view text, std::map<std::string, TaskState>* states,
                       std::vector<TaskFigures>* figures);

}  // namespace ckpt
