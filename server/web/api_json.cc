#include "web/api_json.h"

namespace ckpt {

Json PipelineListJson(const TablePage& page, const TableQuery& query) {
  Json rows = Json::array();
  for (const PipelineRow& row : page.rows) {
    rows.push_back({{"job_id", row.key->job_id},
                    {"pipeline_id", row.key->pipeline_id},
                    {"state", PipelineStateName(row.state)},
                    {"pending", row.pending},
                    {"last_checkpoint_id", row.last_checkpoint_id},
                    {"last_completed_at_ms", row.last_completed_at_ms},
                    {"last_duration_ms", row.last_duration_ms},
                    {"completed_since_start", row.completed},
                    {"failed_since_start", row.failed},
                    {"expired_since_start", row.expired}});
  }
  return {{"total", page.total},
          {"matching", page.matching},
          {"offset", query.offset},
          {"limit", query.limit},
          {"pipelines", std::move(rows)}};
}

Json PipelinePageJson(const PipelinePageData& data) {
  Json checkpoints = Json::array();
  for (int i = 0; i < data.history.checkpoints_size(); ++i) {
    Json entry = CheckpointJson(data.history.checkpoints(i));
    entry["state_bytes"] =
        static_cast<size_t>(i) < data.state_bytes.size() ? data.state_bytes[i] : 0;
    checkpoints.push_back(std::move(entry));
  }
  return {{"pipeline", PipelineJson(data.pipeline)},
          {"explanation", ExplanationJson(data.explanation)},
          {"checkpoints", std::move(checkpoints)},
          {"history_error", data.history_error}};
}

Json ErrorJson(const Status& status) {
  return {{"error", {{"code", StatusCodeName(status.code())}, {"message", status.message()}}}};
}

}  // namespace ckpt
