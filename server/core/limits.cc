#include "core/limits.h"

#include <iterator>

namespace ckpt {

const char* CountedLimitLabel(CountedLimit limit) {
  static constexpr const char* kLabels[] = {"max_pipelines",
                                            "max_streams",
                                            "max_streams_per_peer",
                                            "max_session_queue_bytes",
                                            "savepoint_requests_per_minute",
                                            "max_savepoints_per_pipeline",
                                            "max_admin_calls_per_peer",
                                            "max_connections",
                                            "max_connections_per_peer",
                                            "max_pending_streams_per_peer",
                                            "operator_queue"};
  static_assert(std::size(kLabels) == kCountedLimitCount);
  const auto index = static_cast<size_t>(limit);
  return index < kCountedLimitCount ? kLabels[index] : "unknown";
}

std::string NameLimit(const char* key, int64_t value) {
  return std::string("limits.") + key + " (" + std::to_string(value) + ")";
}

Status CheckIdLength(const std::string& id, const char* what, const Limits& limits) {
  if (static_cast<int64_t>(id.size()) <= limits.max_id_length) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " is " + std::to_string(id.size()) +
                                 " bytes, longer than " +
                                 NameLimit("max_id_length", limits.max_id_length));
}

Status CheckSpecLimits(const PipelineSpec& spec, const Limits& limits) {
  if (auto s = CheckIdLength(spec.key.job_id, "job_id", limits); !s.ok()) return s;
  if (auto s = CheckIdLength(spec.key.pipeline_id, "pipeline_id", limits); !s.ok()) return s;
  if (static_cast<int64_t>(spec.task_ids.size()) > limits.max_tasks_per_pipeline) {
    return Status::InvalidArgument(
        std::to_string(spec.task_ids.size()) + " tasks, more than " +
        NameLimit("max_tasks_per_pipeline", limits.max_tasks_per_pipeline));
  }
  for (const std::string& task : spec.task_ids) {
    if (auto s = CheckIdLength(task, "task_id", limits); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace ckpt
