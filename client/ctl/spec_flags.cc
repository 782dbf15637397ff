#include "ctl/spec_flags.h"

#include <limits>
#include <set>

#include "ctl/durations.h"

namespace ckpt::ctl {
namespace {

constexpr int64_t kMaxParallelism = 100'000;  // more tasks per pipeline is surely a typo

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

bool SetCount(const char* flag, const std::optional<int64_t>& value,
              void (v1::PipelineSpec::*setter)(int32_t), v1::PipelineSpec* spec,
              std::string* error) {
  if (!value) return true;
  if (*value < 0 || *value > std::numeric_limits<int32_t>::max()) {
    *error = std::string(flag) + ": must be a non-negative number below 2^31, got " +
             std::to_string(*value);
    return false;
  }
  (spec->*setter)(static_cast<int32_t>(*value));
  return true;
}

bool SetPositionInterval(const std::optional<int64_t>& value, v1::PipelineSpec* spec,
                         std::string* error) {
  if (!value) return true;
  if (*value < 0) {
    *error = "--position-interval: must be 0 (time alone) or a positive number of positions, got " +
             std::to_string(*value);
    return false;
  }
  spec->set_position_interval(*value);  // the daemon checks the upper bound
  return true;
}

}  // namespace

std::optional<int64_t> ParseDurationFlag(const char* flag, const std::string& text,
                                         std::string* error) {
  std::string why;
  const std::optional<int64_t> ms = cli::ParseDurationMs(text, &why, kDurationOptions);
  if (!ms) *error = std::string(flag) + ": " + why;
  return ms;
}

std::optional<std::vector<std::string>> ParseTaskList(const std::string& text, std::string* error) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string id = Trim(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (id.empty()) {
      *error =
          "--tasks: empty task id in \"" + text + "\" (give ids separated by commas, e.g. a,b,c)";
      return std::nullopt;
    }
    if (!seen.insert(id).second) {
      *error = "--tasks: task id \"" + id + "\" appears twice";
      return std::nullopt;
    }
    ids.push_back(std::move(id));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

bool ApplySpecFlags(const SpecFlags& flags, TasksRule rule, v1::PipelineSpec* spec,
                    std::string* error) {
  if (flags.tasks && flags.parallelism) {
    *error = "give either --tasks or --parallelism, not both";
    return false;
  }
  if (rule == TasksRule::kRequired && !flags.tasks && !flags.parallelism) {
    *error = "the pipeline needs its tasks: give --tasks a,b,c or --parallelism N";
    return false;
  }
  if (flags.tasks) {
    std::optional<std::vector<std::string>> ids = ParseTaskList(*flags.tasks, error);
    if (!ids) return false;
    for (std::string& id : *ids) spec->add_task_ids(std::move(id));
  }
  if (flags.parallelism) {
    if (*flags.parallelism < 1 || *flags.parallelism > kMaxParallelism) {
      *error = "--parallelism: must be between 1 and " + std::to_string(kMaxParallelism) +
               ", got " + std::to_string(*flags.parallelism);
      return false;
    }
    for (int64_t i = 0; i < *flags.parallelism; ++i) spec->add_task_ids(std::to_string(i));
  }
  return SetDuration("--interval", flags.interval, &v1::PipelineSpec::set_interval_ms, spec,
                     error) &&
         SetDuration("--timeout", flags.timeout, &v1::PipelineSpec::set_timeout_ms, spec, error) &&
         SetDuration("--commit-timeout", flags.commit_timeout,
                     &v1::PipelineSpec::set_commit_timeout_ms, spec, error) &&
         SetDuration("--min-pause", flags.min_pause, &v1::PipelineSpec::set_min_pause_ms, spec,
                     error) &&
         SetCount("--tolerable-failures", flags.tolerable_failures,
                  &v1::PipelineSpec::set_tolerable_failures, spec, error) &&
         SetCount("--retained", flags.retained, &v1::PipelineSpec::set_retained, spec, error) &&
         SetPositionInterval(flags.position_interval, spec, error) &&
         SetDuration("--max-interval", flags.max_interval, &v1::PipelineSpec::set_max_interval_ms,
                     spec, error) &&
         SetMaxOverhead(flags.max_overhead, &v1::PipelineSpec::set_max_overhead, spec, error);
}

}  // namespace ckpt::ctl
