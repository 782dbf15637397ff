#pragma once
// The web view's HTML: the pipeline list, a pipeline's page, a checkpoint's page, and errors.
// Server-rendered, no script: a page reloads itself (refresh_s) and the plot is inline SVG, so
// the daemon serves it under a Content-Security-Policy that allows no script at all. Every id and
// every string a worker or operator sent is escaped (web/escape.h).
// Threading: pure functions of their arguments.

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/v1/admin.pb.h"
#include "core/types.h"
#include "web/pipeline_table.h"

namespace ckpt {

// What a pipeline's page shows; the same as /api/v1/pipelines/<job>/<pipeline> serves.
struct PipelinePageData {
  v1::Pipeline pipeline;                // as GetPipeline answers (task ids left out)
  v1::PipelineExplanation explanation;  // as ExplainPipeline answers
  v1::ListCheckpointsResponse history;  // ListCheckpoints' first page: the pending round first
  std::string history_error;            // the store could not be read: why (history is empty)
  // Each history entry's task states in total, in bytes, in history order. The entries come
  // without their states (ReadCheckpointHistory): a wide pipeline's would make every page and
  // every reload megabytes; a checkpoint's own page has them.
  std::vector<int64_t> state_bytes;
};

// A standby has no pipelines: the list says so and where the leader is.
struct DaemonBanner {
  std::string text;  // empty: none
};

std::string RenderPipelineListPage(const TablePage& page, const TableQuery& query,
                                   const DaemonBanner& banner, int64_t now_ms);
std::string RenderPipelinePage(const PipelinePageData& data, int refresh_s, int64_t now_ms);
std::string RenderCheckpointPage(const PipelineKey& key, const v1::CheckpointInfo& checkpoint,
                                 int refresh_s, int64_t now_ms);
// `status`: the HTTP status; `message` is shown escaped.
std::string RenderErrorPage(int status, const std::string& message);

// The link to a pipeline's page and to one of its checkpoints (ids percent-encoded).
std::string PipelinePath(const PipelineKey& key);
std::string CheckpointPath(const PipelineKey& key, int64_t checkpoint_id);

}  // namespace ckpt
