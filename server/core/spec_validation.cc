#include "core/spec_validation.h"

#include <initializer_list>
#include <set>

#include "core/position_gate.h"
#include "core/printable.h"

namespace ckpt {

namespace {

// The rules every stored id met: not empty, at most `max_bytes`, no C0 control character or DEL.
Status ValidateShape(const std::string& id, const std::string& what, size_t max_bytes) {
  if (id.empty()) return Status::InvalidArgument(what + " is empty");
  if (id.size() > max_bytes) {
    return Status::InvalidArgument(what + " is longer than " + std::to_string(max_bytes) +
                                   " bytes");
  }
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(what + " contains a control character");
    }
  }
  return Status::Ok();
}

Status ValidateIdShape(const std::string& id, const std::string& what) {
  return ValidateShape(id, what, kMaxIdBytes);
}

// An id's rules but its length: UTF-8 without control or format characters, at most
// `max_bytes`.
Status ValidateText(const std::string& id, const std::string& what, size_t max_bytes) {
  if (auto s = ValidateShape(id, what, max_bytes); !s.ok()) return s;
  if (!IsValidUtf8(id)) return Status::InvalidArgument(what + " is not valid UTF-8");
  for (size_t i = 0; i + 1 < id.size(); ++i) {
    // C1 controls, U+0080..U+009F: C2 80..C2 9F in UTF-8.
    if (static_cast<unsigned char>(id[i]) == 0xC2 &&
        static_cast<unsigned char>(id[i + 1]) <= 0x9F) {
      return Status::InvalidArgument(what + " contains a control character");
    }
  }
  if (HasFormatCharacter(id)) {
    return Status::InvalidArgument(what +
                                   " contains an invisible Unicode format character (such as "
                                   "U+202E, which reverses what follows it)");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateId(const std::string& id, const std::string& what) {
  if (auto s = ValidateText(id, what, kMaxIdBytes); !s.ok()) return s;
  if (id == "." || id == "..") return Status::InvalidArgument(what + " may not be . or ..");
  return Status::Ok();
}

Status ValidatePathId(const std::string& id, const std::string& what) {
  if (auto s = ValidateId(id, what); !s.ok()) return s;
  if (id.find_first_of("/\\") != std::string::npos) {
    return Status::InvalidArgument(what +
                                   " contains / or \\, which job and pipeline ids may not "
                                   "(they name paths)");
  }
  return Status::Ok();
}

Status ValidateSavepointTarget(const std::string& target) {
  if (target.empty()) return Status::Ok();
  return ValidateText(target, "savepoint target", kMaxUriBytes);
}

std::string TruncateReason(std::string text) {
  if (text.size() <= kMaxReasonBytes) return text;
  // Not within a UTF-8 character: the text goes into protobuf strings, which must stay valid.
  size_t cut = kMaxReasonBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "... (truncated)";
}

namespace {

Status CheckDuration(int64_t value, int64_t min, const char* name) {
  if (value < min) {
    return Status::InvalidArgument(std::string(name) + " is " + std::to_string(value) +
                                   ", must be at least " + std::to_string(min));
  }
  if (value > kMaxDurationMs) {
    return Status::InvalidArgument(std::string(name) + " is " + std::to_string(value) +
                                   ", must be at most " + std::to_string(kMaxDurationMs) +
                                   " (a week)");
  }
  return Status::Ok();
}

// Each named counter in 0..kMaxCheckpointId, as the store must hold them.
Status CheckCounters(std::initializer_list<std::pair<const char*, int64_t>> numbers) {
  for (const auto& [name, value] : numbers) {
    if (value < 0 || value > kMaxCheckpointId) {
      return Status::InvalidArgument(std::string(name) + " is " + std::to_string(value) +
                                     ", outside 0.." + std::to_string(kMaxCheckpointId));
    }
  }
  return Status::Ok();
}

}  // namespace

// max_overhead and max_interval_ms, of a pipeline or a group (docs/PROTOCOL.md, "Adaptive
// interval"): a fraction in [0, 1] (0: off), and 0 (no cap) or at least the interval.
static Status CheckAdaptiveInterval(double max_overhead, int64_t max_interval_ms,
                                    int64_t interval_ms) {
  // A floor of 0.001: below it the interval would stretch a thousandfold past the rounds'
  // p95, a week without a cap.
  if (!(max_overhead == 0 || (max_overhead >= 0.001 && max_overhead <= 1))) {  // NaN fails
    return Status::InvalidArgument("max_overhead is " + std::to_string(max_overhead) +
                                   ", must be 0 (off) or a fraction between 0.001 and 1");
  }
  if (auto s = CheckDuration(max_interval_ms, 0, "max_interval_ms"); !s.ok()) return s;
  if (max_interval_ms > 0 && max_interval_ms < interval_ms) {
    return Status::InvalidArgument("max_interval_ms " + std::to_string(max_interval_ms) +
                                   " is below interval_ms " + std::to_string(interval_ms) +
                                   " (0: no cap)");
  }
  return Status::Ok();
}

// position_interval, of a pipeline or a group: 0 (none) up to kMaxPosition.
static Status CheckPositionInterval(int64_t position_interval) {
  if (position_interval < 0 || position_interval > kMaxPosition) {
    return Status::InvalidArgument("position_interval is " + std::to_string(position_interval) +
                                   ", must be between 0 (no positions) and " +
                                   std::to_string(kMaxPosition));
  }
  return Status::Ok();
}

Status ValidateGroupSpec(const AlignmentGroupSpec& spec) {
  if (auto s = ValidatePathId(spec.name, "name"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.interval_ms, kMinIntervalMs, "interval_ms"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.timeout_ms, 1, "timeout_ms"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.min_pause_ms, 0, "min_pause_ms"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.commit_timeout_ms, 0, "commit_timeout_ms"); !s.ok()) return s;
  if (auto s = CheckAdaptiveInterval(spec.max_overhead, spec.max_interval_ms, spec.interval_ms);
      !s.ok()) {
    return s;
  }
  return CheckPositionInterval(spec.position_interval);
}

Status ValidateSpec(const PipelineSpec& spec, bool stored) {
  auto check_path_id = stored ? ValidateIdShape : ValidatePathId;
  auto check_id = stored ? ValidateIdShape : ValidateId;
  if (auto s = check_path_id(spec.key.job_id, "job_id"); !s.ok()) return s;
  if (auto s = check_path_id(spec.key.pipeline_id, "pipeline_id"); !s.ok()) return s;
  if (spec.task_ids.empty()) return Status::InvalidArgument("task_ids is empty");
  if (spec.task_ids.size() > kMaxTasksPerPipeline) {
    return Status::InvalidArgument("more than " + std::to_string(kMaxTasksPerPipeline) +
                                   " tasks in one pipeline");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < spec.task_ids.size(); ++i) {
    const std::string what = "task_ids[" + std::to_string(i) + "]";
    if (auto s = check_id(spec.task_ids[i], what); !s.ok()) return s;
    if (!seen.insert(spec.task_ids[i]).second) {
      return Status::InvalidArgument(what + " \"" + spec.task_ids[i] + "\" is a duplicate");
    }
  }
  if (auto s = CheckDuration(spec.interval_ms, kMinIntervalMs, "interval_ms"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.timeout_ms, 1, "timeout_ms"); !s.ok()) return s;
  if (auto s = CheckDuration(spec.min_pause_ms, 0, "min_pause_ms"); !s.ok()) return s;
  if (spec.tolerable_failures < 0) {
    return Status::InvalidArgument("tolerable_failures is negative");
  }
  if (spec.retained < 1 || spec.retained > kMaxRetained) {
    return Status::InvalidArgument("retained is " + std::to_string(spec.retained) +
                                   ", must be between 1 and " + std::to_string(kMaxRetained));
  }
  if (auto s = CheckDuration(spec.commit_timeout_ms, 0, "commit_timeout_ms"); !s.ok()) return s;
  if (auto s = CheckAdaptiveInterval(spec.max_overhead, spec.max_interval_ms, spec.interval_ms);
      !s.ok()) {
    return s;
  }
  return CheckPositionInterval(spec.position_interval);
}

Status ValidateStoredGroup(const StoredGroup& group) {
  if (auto s = ValidateGroupSpec(group.spec); !s.ok()) return s;
  return CheckCounters(
      {{"id counter", group.progress.id_counter}, {"last_round_id", group.progress.last_round_id}});
}

Status ValidateHistoryId(int64_t checkpoint_id) {
  if (checkpoint_id >= 1 && checkpoint_id <= kMaxCheckpointId) return Status::Ok();
  return Status::InvalidArgument("the history holds checkpoint id " +
                                 std::to_string(checkpoint_id) + ", outside 1.." +
                                 std::to_string(kMaxCheckpointId));
}

Status ValidateStored(const StoredPipeline& stored) {
  const PipelineRecord& r = stored.record;
  if (auto s = ValidateSpec(r.spec, /*stored=*/true); !s.ok()) return s;
  if (auto s = CheckCounters({
          {"id counter", stored.id_counter},
          {"generation", r.generation},
          {"completed_count", r.counters.completed_count},
          {"failed_count", r.counters.failed_count},
          {"expired_count", r.counters.expired_count},
          {"consecutive_failures", r.counters.consecutive_failures},
          {"last_completed_id", r.last_completed_id},
          {"last_completed_at_ms", r.last_completed_at_ms},
      });
      !s.ok()) {
    return s;
  }
  if (r.generation < 1) return Status::InvalidArgument("generation is 0; generations start at 1");
  for (const HistoryEntry& entry : stored.history) {
    if (Status s = ValidateHistoryId(entry.checkpoint_id); !s.ok()) return s;
  }
  if (r.last_completed_id > stored.id_counter) {
    return Status::InvalidArgument("last_completed_id " + std::to_string(r.last_completed_id) +
                                   " is above the id counter " + std::to_string(stored.id_counter) +
                                   " (ids at or below the counter could be handed out again)");
  }
  return Status::Ok();
}

}  // namespace ckpt
