#include "store/task_json_plain.h"

#include "store/task_fields.h"

#include <cstdint>
#include <limits>

namespace ckpt {
namespace {

// A cursor over the text; every Take* returns false (and the text is not plain) at the first
// byte it does not expect.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ == text_.size(); }
  bool Take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  // A string of printable ASCII (0x20-0x7F) without '"' or '\\': read as is.
  bool TakeString(std::string_view* out) {
    if (!Take('"')) return false;
    const size_t start = pos_;
    while (pos_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        *out = text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
      if (c < 0x20 || c > 0x7F || c == '\\') return false;
      ++pos_;
    }
    return false;
  }

  // An integer as JSON writes one (no leading zeros, no fraction or exponent) that fits int64_t.
  bool TakeInteger(int64_t* out) {
    const bool negative = Take('-');
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') return false;
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' &&
        text_[pos_ + 1] <= '9') {
      return false;
    }
    // Accumulated as a negative number: its range holds INT64_MIN.
    int64_t value = 0;
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      if (value < (kMin + digit) / 10) return false;
      value = value * 10 - digit;
      ++pos_;
    }
    if (!negative) {
      if (value == kMin) return false;
      value = -value;
    }
    // A fraction or exponent makes it a number of another kind: not plain.
    if (Peek('.') || Peek('e') || Peek('E')) return false;
    *out = value;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

bool IsText(TaskField f) {
  return f == TaskField::kUri || f == TaskField::kChecksum || f == TaskField::kWorkerId;
}

// One task's object: every field known, once, with its type, and the three a state needs.
bool TakeTask(Cursor& in, TaskState* state, TaskFigures* figures, bool* has_figures) {
  if (!in.Take('{')) return false;
  unsigned seen = 0;
  do {
    std::string_view name, text;
    int64_t number = 0;
    if (!in.TakeString(&name) || !in.Take(':')) return false;
    const TaskField field = TaskFieldNamed(name);
    const unsigned bit = 1u << static_cast<unsigned>(field);
    if (field == TaskField::kOther || (seen & bit)) return false;
    seen |= bit;
    if (IsText(field) ? !in.TakeString(&text) : !in.TakeInteger(&number)) return false;
    switch (field) {
      case TaskField::kUri: state->uri = text; break;
      case TaskField::kChecksum: state->checksum = text; break;
      case TaskField::kSizeBytes: state->size_bytes = number; break;
      case TaskField::kWorkerId: figures->worker_id = text; break;
      case TaskField::kAckedAt: figures->acked_at_ms = number; break;
      case TaskField::kSync: figures->reported.sync_duration_ms = number; break;
      case TaskField::kAsync: figures->reported.async_duration_ms = number; break;
      case TaskField::kAlignment: figures->reported.alignment_duration_ms = number; break;
      case TaskField::kAlignmentBytes:
        figures->reported.bytes_processed_during_alignment = number;
        break;
      case TaskField::kOther: return false;
    }
  } while (in.Take(','));
  constexpr unsigned kState = (1u << static_cast<unsigned>(TaskField::kUri)) |
                              (1u << static_cast<unsigned>(TaskField::kSizeBytes)) |
                              (1u << static_cast<unsigned>(TaskField::kChecksum));
  *has_figures = (seen & ((1u << static_cast<unsigned>(TaskField::kWorkerId)) |
                          (1u << static_cast<unsigned>(TaskField::kAckedAt)))) != 0;
  return (seen & kState) == kState && in.Take('}');
}

}  // namespace

bool ReadPlainTasksJson(std::string_view text, std::map<std::string, TaskState>* states,
                        std::vector<TaskFigures>* figures) {
  Cursor in(text);
  if (!in.Take('{')) return false;
  if (!in.Take('}')) {
    do {
      std::string_view id;
      if (!in.TakeString(&id) || !in.Take(':')) return false;
      TaskState state;
      TaskFigures task;
      bool has_figures = false;
      if (!TakeTask(in, &state, &task, &has_figures)) return false;
      // A task id twice: the general reader keeps the last; not plain.
      auto [it, added] = states->try_emplace(std::string(id), std::move(state));
      if (!added) return false;
      if (figures && has_figures) {
        task.task_id = it->first;
        figures->push_back(std::move(task));
      }
    } while (in.Take(','));
    if (!in.Take('}')) return false;
  }
  if (!in.AtEnd()) return false;
  if (figures) SortByTaskId(figures);
  return true;
}

}  // namespace ckpt
