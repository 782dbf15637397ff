#include "store/task_json.h"

#include <algorithm>
#include <charconv>

#include "store/task_fields.h"

namespace ckpt {

using nlohmann::json;

namespace {

// The keys (store/task_fields.h), as the protos name them.
constexpr const char* kUri = TaskFieldKey(TaskField::kUri);
constexpr const char* kSizeBytes = TaskFieldKey(TaskField::kSizeBytes);
constexpr const char* kChecksum = TaskFieldKey(TaskField::kChecksum);
constexpr const char* kWorker = TaskFieldKey(TaskField::kWorkerId);
constexpr const char* kAckedAt = TaskFieldKey(TaskField::kAckedAt);
constexpr const char* kSync = TaskFieldKey(TaskField::kSync);
constexpr const char* kAsync = TaskFieldKey(TaskField::kAsync);
constexpr const char* kAlignment = TaskFieldKey(TaskField::kAlignment);
constexpr const char* kAlignmentBytes = TaskFieldKey(TaskField::kAlignmentBytes);

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

// Appends `text` as a JSON string, escaped as nlohmann's dump() escapes it. False on invalid
// UTF-8 (an overlong form, a surrogate, a code point above U+10FFFF or a cut sequence).
bool AppendString(const std::string& text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    // A run of bytes that stand for themselves goes out in one append: ids and uris are mostly
    // that, and a byte at a time was a tenth of the writer's time on a 2,000-task checkpoint.
    const auto* run = p;
    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') ++p;
    if (p != run) out->append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
    if (p == end) break;
    const unsigned char c = *p;
    if (c < 0x80) {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\b': out->append("\\b"); break;
        case '\f': out->append("\\f"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c < 0x20) {
            out->append("\\u00");
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 0xF]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++p;
      continue;
    }
    // A multi-byte sequence: its length from the lead byte, each continuation 10xxxxxx, and the
    // code point neither overlong, a surrogate, nor above U+10FFFF.
    int length = 0;
    uint32_t code = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
      code = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      code = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      code = c & 0x07;
    } else {
      return false;
    }
    if (end - p < length) return false;
    for (int i = 1; i < length; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[i] & 0x3F);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    out->append(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
    p += length;
  }
  out->push_back('"');
  return true;
}

// Appends `"key":` and the value; keys must come in dump()'s (sorted) order.
void AppendIntField(const char* key, int64_t value, bool* first, std::string* out) {
  if (!*first) out->push_back(',');
  *first = false;
  out->push_back('"');
  out->append(key);
  out->append("\":");
  char digits[24];
  const auto written = std::to_chars(digits, digits + sizeof digits, value);
  out->append(digits, written.ptr);
}

bool AppendStringField(const char* key, const std::string& value, bool* first, std::string* out) {
  if (!*first) out->push_back(',');
  *first = false;
  out->push_back('"');
  out->append(key);
  out->append("\":");
  return AppendString(value, out);
}

// One task's object, its keys in dump()'s order (sorted), zeros and an empty worker left out as
// TaskJson leaves them out.
bool AppendTask(const TaskState& state, const TaskFigures* f, std::string* out) {
  bool first = true;
  out->push_back('{');
  if (f && f->acked_at_ms != 0) AppendIntField(kAckedAt, f->acked_at_ms, &first, out);
  if (f && f->reported.alignment_duration_ms != 0) {
    AppendIntField(kAlignment, f->reported.alignment_duration_ms, &first, out);
  }
  if (f && f->reported.async_duration_ms != 0) {
    AppendIntField(kAsync, f->reported.async_duration_ms, &first, out);
  }
  if (f && f->reported.bytes_processed_during_alignment != 0) {
    AppendIntField(kAlignmentBytes, f->reported.bytes_processed_during_alignment, &first, out);
  }
  if (!AppendStringField(kChecksum, state.checksum, &first, out)) return false;
  AppendIntField(kSizeBytes, state.size_bytes, &first, out);
  if (f && f->reported.sync_duration_ms != 0) {
    AppendIntField(kSync, f->reported.sync_duration_ms, &first, out);
  }
  if (!AppendStringField(kUri, state.uri, &first, out)) return false;
  if (f && !f->worker_id.empty() && !AppendStringField(kWorker, f->worker_id, &first, out)) {
    return false;
  }
  out->push_back('}');
  return true;
}

}  // namespace

json TaskJson(const TaskState& state, const TaskFigures* figures) {
  json object = {{kUri, state.uri}, {kSizeBytes, state.size_bytes}, {kChecksum, state.checksum}};
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
  auto uri = value.find(kUri);
  auto size = value.find(kSizeBytes);
  auto checksum = value.find(kChecksum);
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

bool WriteTasksJson(const CompletedCheckpoint& checkpoint, std::string* out) {
  out->clear();
  out->reserve(checkpoint.task_states.size() * 128);
  out->push_back('{');
  auto figures = checkpoint.task_figures.begin();
  bool first = true;
  for (const auto& [task_id, state] : checkpoint.task_states) {
    while (figures != checkpoint.task_figures.end() && figures->task_id < task_id) ++figures;
    const bool has = figures != checkpoint.task_figures.end() && figures->task_id == task_id;
    if (!first) out->push_back(',');
    first = false;
    if (!AppendString(task_id, out)) return false;
    out->push_back(':');
    if (!AppendTask(state, has ? &*figures : nullptr, out)) return false;
  }
  out->push_back('}');
  return true;
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
