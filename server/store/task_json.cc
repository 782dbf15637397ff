#include "store/task_json.h"

#include <algorithm>

namespace ckpt {

using nlohmann::json;

namespace {

// The figure keys, as the protos name them.
constexpr const char* kWorker = "worker_id";
constexpr const char* kAckedAt = "acked_at_ms";
constexpr const char* kSync = "sync_duration_ms";
constexpr const char* kAsync = "async_duration_ms";
constexpr const char* kAlignment = "alignment_duration_ms";
constexpr const char* kAlignmentBytes = "bytes_processed_during_alignment";

void PutIfSet(json& object, const char* key, int64_t value) {
  if (value != 0) object[key] = value;
}

// An integer under `key`, 0 when absent; false when present and not an integer.
bool ReadInt(const json& object, const char* key, int64_t* out) {
  auto it = object.find(key);
  if (it == object.end()) return true;
  if (!it->is_number_integer()) return false;
  *out = it->get<int64_t>();
  return true;
}

}  // namespace

json TaskJson(const TaskState& state, const TaskFigures* figures) {
  json object = {
      {"uri", state.uri}, {"size_bytes", state.size_bytes}, {"checksum", state.checksum}};
  if (figures) {
    if (!figures->worker_id.empty()) object[kWorker] = figures->worker_id;
    PutIfSet(object, kAckedAt, figures->acked_at_ms);
    PutIfSet(object, kSync, figures->reported.sync_duration_ms);
    PutIfSet(object, kAsync, figures->reported.async_duration_ms);
    PutIfSet(object, kAlignment, figures->reported.alignment_duration_ms);
    PutIfSet(object, kAlignmentBytes, figures->reported.bytes_processed_during_alignment);
  }
  return object;
}

bool ReadTaskJson(const std::string& task_id, const json& value, TaskState* state,
                  TaskFigures* figures, bool* has_figures) {
  if (!value.is_object()) return false;
  auto uri = value.find("uri");
  auto size = value.find("size_bytes");
  auto checksum = value.find("checksum");
  if (uri == value.end() || !uri->is_string() || size == value.end() ||
      !size->is_number_integer() || checksum == value.end() || !checksum->is_string()) {
    return false;
  }
  *state = TaskState{uri->get<std::string>(), size->get<int64_t>(), checksum->get<std::string>()};
  *has_figures = value.contains(kWorker) || value.contains(kAckedAt);
  if (!figures || !*has_figures) return true;
  figures->task_id = task_id;
  if (auto worker = value.find(kWorker); worker != value.end()) {
    if (!worker->is_string()) return false;
    figures->worker_id = worker->get<std::string>();
  }
  return ReadInt(value, kAckedAt, &figures->acked_at_ms) &&
         ReadInt(value, kSync, &figures->reported.sync_duration_ms) &&
         ReadInt(value, kAsync, &figures->reported.async_duration_ms) &&
         ReadInt(value, kAlignment, &figures->reported.alignment_duration_ms) &&
         ReadInt(value, kAlignmentBytes, &figures->reported.bytes_processed_during_alignment);
}

json TasksJson(const CompletedCheckpoint& checkpoint) {
  json object = json::object();
  // task_figures is ordered by task id, as task_states is: one pass over both.
  auto figures = checkpoint.task_figures.begin();
  for (const auto& [task_id, state] : checkpoint.task_states) {
    while (figures != checkpoint.task_figures.end() && figures->task_id < task_id) ++figures;
    const bool has = figures != checkpoint.task_figures.end() && figures->task_id == task_id;
    object[task_id] = TaskJson(state, has ? &*figures : nullptr);
  }
  return object;
}

bool ReadTasksJson(const json& object, std::map<std::string, TaskState>* states,
                   std::vector<TaskFigures>* figures) {
  if (!object.is_object()) return false;
  for (const auto& [task_id, value] : object.items()) {
    TaskState state;
    TaskFigures task;
    bool has_figures = false;
    if (!ReadTaskJson(task_id, value, &state, figures ? &task : nullptr, &has_figures)) {
      return false;
    }
    (*states)[task_id] = std::move(state);
    if (figures && has_figures) figures->push_back(std::move(task));
  }
  // json objects iterate in key order already; kept explicit for readers of other orders.
  if (figures) {
    std::sort(figures->begin(), figures->end(),
              [](const TaskFigures& a, const TaskFigures& b) { return a.task_id < b.task_id; });
  }
  return true;
}

}  // namespace ckpt
