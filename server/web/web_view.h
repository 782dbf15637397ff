#pragma once
// WebView: the read-only web view on metrics_listen, and the JSON behind it.
//
//   /                                              the pipelines (filter, sort, pages)
//   /pipelines/<job>/<pipeline>                    its state, why, pending round, history, plot
//   /pipelines/<job>/<pipeline>/checkpoints/<id>   one round, a row per task, slowest first
//   /api/v1/pipelines[...]                         the same three as JSON
//
// Ids in paths are percent-encoded, one segment each. Nothing here writes: the pages read what
// GetPipeline, ExplainPipeline, ListCheckpoints and GetCheckpoint read, the same way.
//
// Threading: Serve may be called from any thread and returns at once. The list reads atomics
// (PipelineMetrics) and renders where Serve was called; a pipeline's page visits its strand only
// to copy what memory holds (as the operator API does), reads the store off every strand, and
// renders on `render_on` (the control loop, never a pipeline's). `answer` runs exactly once, on
// whichever thread finished.

#include <boost/asio/io_context.hpp>
#include <functional>
#include <string_view>

#include "http/http_routes.h"
#include "rpc/admin_backend.h"

namespace ckpt {

class WebView {
 public:
  // `backend` must outlive the view and every request it serves.
  WebView(AdminBackend& backend, boost::asio::io_context& render_on)
      : backend_(backend), render_on_(render_on) {}

  void Serve(std::string_view target, std::function<void(HttpReply)> answer);

 private:
  AdminBackend& backend_;
  boost::asio::io_context& render_on_;
};

}  // namespace ckpt
