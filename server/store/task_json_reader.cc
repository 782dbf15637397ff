// ReadTasksJsonText: task_json.h's object read from its text by parser events (nlohmann's SAX
// interface), to the letter of ReadTasksJson over the parsed document. What the document would
// hold is tracked only as far as the rules read it: each field's last value and its type, and for
// a task id seen twice, its last object.

#include <set>

#include "store/task_fields.h"
#include "store/task_json.h"
#include "store/task_json_plain.h"

namespace ckpt {
namespace {

using nlohmann::json;

// The type of a field's last value, as ReadTaskJson tells them apart.
enum class Held { kAbsent, kString, kInteger, kOther };

struct FieldValue {
  Held held = Held::kAbsent;
  std::string text;
  int64_t number = 0;
};

class TasksReader {
 public:
  TasksReader(std::map<std::string, TaskState>* states, std::vector<TaskFigures>* figures)
      : states_(states), figures_(figures) {}

  // Depth 0: the tasks' object; 1: a task's object; 2 and more: inside a field's value.
  bool null() { return Scalar(Held::kOther); }
  bool boolean(bool) { return Scalar(Held::kOther); }
  bool number_integer(json::number_integer_t n) { return Integer(n); }
  bool number_unsigned(json::number_unsigned_t n) {
    return Integer(static_cast<int64_t>(n));  // as get<int64_t>() converts it
  }
  bool number_float(json::number_float_t, const json::string_t&) { return Scalar(Held::kOther); }
  bool binary(json::binary_t&) { return Scalar(Held::kOther); }
  bool string(json::string_t& s) {
    if (depth_ != 2) return Scalar(Held::kOther);
    if (field_ != TaskField::kOther) {
      Slot(field_).held = Held::kString;
      Slot(field_).text = std::move(s);
    }
    return true;
  }
  bool start_object(std::size_t) { return Open(/*object=*/true); }
  bool start_array(std::size_t) {
    if (depth_ == 0) return false;  // the tasks are an object
    return Open(/*object=*/false);
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      task_id_ = std::move(k);
    } else if (depth_ == 2) {
      field_ = TaskFieldNamed(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

  // After the last event: whether every task id's last object was a task's.
  bool Finish() {
    if (!invalid_.empty()) return false;
    if (figures_) SortByTaskId(figures_);
    return true;
  }

 private:
  bool Scalar(Held held) {
    if (depth_ == 0) return false;  // no object at all
    if (depth_ == 1) {
      invalid_.insert(task_id_);  // a task that is not an object (unless a later one replaces it)
    } else if (depth_ == 2 && field_ != TaskField::kOther) {
      Slot(field_).held = held;
    }
    return true;
  }
  bool Integer(int64_t n) {
    if (depth_ != 2) return Scalar(Held::kOther);
    if (field_ != TaskField::kOther) {
      Slot(field_).held = Held::kInteger;
      Slot(field_).number = n;
    }
    return true;
  }
  bool Open(bool object) {
    if (depth_ == 1) {
      task_is_object_ = object;
      for (FieldValue& f : fields_) f.held = Held::kAbsent;  // a new task's value
    } else if (depth_ == 2 && field_ != TaskField::kOther) {
      Slot(field_).held = Held::kOther;  // an object or array where a field is read
    }
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    if (depth_ == 1) {
      if (task_is_object_) {
        EndTask();
      } else {
        invalid_.insert(task_id_);  // an array where a task's object belongs
      }
    }
    return true;
  }

  // A task's object ended: ReadTaskJson's rules over its fields' last values. A task id seen
  // before is replaced whole, figures included, as the document's last value replaces the first.
  void EndTask() {
    TaskState state;
    TaskFigures task;
    bool has_figures = false;
    if (!Read(&state, &task, &has_figures)) {
      invalid_.insert(task_id_);
      return;
    }
    invalid_.erase(task_id_);
    auto [it, first_time] = states_->try_emplace(task_id_);
    it->second = std::move(state);
    if (!figures_) return;
    if (!first_time) {
      std::erase_if(*figures_, [this](const TaskFigures& f) { return f.task_id == task_id_; });
    }
    if (has_figures) {
      task.task_id = task_id_;
      figures_->push_back(std::move(task));
    }
  }

  bool Read(TaskState* state, TaskFigures* task, bool* has_figures) {
    const FieldValue& uri = Slot(TaskField::kUri);
    const FieldValue& size = Slot(TaskField::kSizeBytes);
    const FieldValue& checksum = Slot(TaskField::kChecksum);
    if (uri.held != Held::kString || size.held != Held::kInteger ||
        checksum.held != Held::kString) {
      return false;
    }
    *state = TaskState{uri.text, size.number, checksum.text};
    *has_figures = Slot(TaskField::kWorkerId).held != Held::kAbsent ||
                   Slot(TaskField::kAckedAt).held != Held::kAbsent;
    if (!figures_ || !*has_figures) return true;
    const FieldValue& worker = Slot(TaskField::kWorkerId);
    if (worker.held == Held::kString) {
      task->worker_id = worker.text;
    } else if (worker.held != Held::kAbsent) {
      return false;
    }
    return ReadInt(TaskField::kAckedAt, &task->acked_at_ms) &&
           ReadInt(TaskField::kSync, &task->reported.sync_duration_ms) &&
           ReadInt(TaskField::kAsync, &task->reported.async_duration_ms) &&
           ReadInt(TaskField::kAlignment, &task->reported.alignment_duration_ms) &&
           ReadInt(TaskField::kAlignmentBytes, &task->reported.bytes_processed_during_alignment);
  }
  bool ReadInt(TaskField field, int64_t* out) const {
    const FieldValue& f = Slot(field);
    if (f.held == Held::kAbsent) return true;
    if (f.held != Held::kInteger) return false;
    *out = f.number;
    return true;
  }

  FieldValue& Slot(TaskField field) { return fields_[static_cast<size_t>(field)]; }
  const FieldValue& Slot(TaskField field) const { return fields_[static_cast<size_t>(field)]; }

  std::map<std::string, TaskState>* states_;
  std::vector<TaskFigures>* figures_;
  int depth_ = 0;
  bool task_is_object_ = false;  // the value of the task being read (depth 2 and more) is one
  std::string task_id_;
  TaskField field_ = TaskField::kOther;
  FieldValue fields_[kTaskFieldCount];
  // Task ids whose last object so far is not a task's; a later valid object clears its id.
  std::set<std::string> invalid_;
};

}  // namespace

bool ReadTasksJsonText(std::string_view text, std::map<std::string, TaskState>* states,
                       std::vector<TaskFigures>* figures) {
  // Text as the stores write it is read without the general parser (ReadPlainTasksJson says
  // which): at start that is every pipeline's newest checkpoint.
  if (ReadPlainTasksJson(text, states, figures)) return true;
  states->clear();
  if (figures) figures->clear();
  TasksReader reader(states, figures);
  return json::sax_parse(text.begin(), text.end(), &reader) && reader.Finish();
}

}  // namespace ckpt
