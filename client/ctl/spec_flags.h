#pragma once
// The flags of `pipeline create` and `pipeline update`, turned into a PipelineSpec. A flag left out
// stays unset in the spec (proto3 optional), so the daemon's defaults apply (create) or the value
// is kept (update).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/v1/admin.pb.h"

namespace ckpt::ctl {

// As typed; nullopt when the flag was not given.
struct SpecFlags {
  std::optional<std::string> tasks;     // --tasks a,b,c
  std::optional<int64_t> parallelism;   // --parallelism N: tasks "0" .. "N-1"
  std::optional<std::string> interval;  // durations: --interval 10s ...
  std::optional<std::string> timeout;
  std::optional<std::string> min_pause;
  std::optional<int64_t> tolerable_failures;
  std::optional<int64_t> retained;
  std::optional<int64_t> position_interval;   // --position-interval N (0: time alone)
  std::optional<std::string> commit_timeout;  // --commit-timeout 30s (0: no commit phase)
  std::optional<double> max_overhead;         // --max-overhead 0.1 (0: off)
  std::optional<std::string> max_interval;    // --max-interval 10m (0: no cap)

  bool empty() const {
    return !tasks && !parallelism && !interval && !timeout && !min_pause && !tolerable_failures &&
           !retained && !position_interval && !commit_timeout && !max_overhead && !max_interval;
  }
};

enum class TasksRule {
  kRequired,  // create: exactly one of --tasks and --parallelism
  kOptional,  // update: at most one; none keeps the task set
};

// A duration flag's value ("10s") in milliseconds; nullopt with *error naming the flag.
std::optional<int64_t> ParseDurationFlag(const char* flag, const std::string& text,
                                         std::string* error);

// Sets a duration field of a request when its flag was given. False with *error when the value
// does not parse.
template <typename Message>
bool SetDuration(const char* flag, const std::optional<std::string>& text,
                 void (Message::*setter)(int64_t), Message* message, std::string* error) {
  if (!text) return true;
  const std::optional<int64_t> ms = ParseDurationFlag(flag, *text, error);
  if (!ms) return false;
  (message->*setter)(*ms);
  return true;
}

// Sets max_overhead when --max-overhead was given: a fraction in [0, 1] (0: off). False with
// *error otherwise.
template <typename Message>
bool SetMaxOverhead(const std::optional<double>& value, void (Message::*setter)(double),
                    Message* message, std::string* error) {
  if (!value) return true;
  if (!(*value >= 0 && *value <= 1)) {
    *error = "--max-overhead: a fraction between 0 (off) and 1, got " + std::to_string(*value);
    return false;
  }
  (message->*setter)(*value);
  return true;
}

// "a,b,c" -> {"a","b","c"}; spaces around ids are dropped. Empty ids and duplicates are errors.
std::optional<std::vector<std::string>> ParseTaskList(const std::string& text, std::string* error);

// Fills spec's task_ids and the optional fields from flags. False with *error (one line naming the
// flag) when a value is bad: both or neither task flag (per `rule`), a duration without a unit,
// a negative or too large number.
bool ApplySpecFlags(const SpecFlags& flags, TasksRule rule, v1::PipelineSpec* spec,
                    std::string* error);

}  // namespace ckpt::ctl
