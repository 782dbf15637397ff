#pragma once
// The web view's JSON under /api/v1: the documents its pages are drawn from. A pipeline, its
// explanation, its checkpoints are the admin protos' JSON (views/admin_json.h), the same as
// `ckptctl ... -o json` prints.
// Threading: pure functions.

#include "common/status.h"
#include "views/admin_json.h"
#include "web/pages.h"
#include "web/pipeline_table.h"

namespace ckpt {

// {total, matching, offset, limit, pipelines: [{job_id, pipeline_id, state, pending,
// last_checkpoint_id, last_completed_at_ms, last_duration_ms, completed_since_start,
// failed_since_start, expired_since_start}]}.
Json PipelineListJson(const TablePage& page, const TableQuery& query);
// {pipeline, explanation, checkpoints (newest first, the pending round first; each without its
// task states, `state_bytes` their total), history_error}.
Json PipelinePageJson(const PipelinePageData& data);
// {error: {code: "NOT_FOUND", message}}.
Json ErrorJson(const Status& status);

}  // namespace ckpt
