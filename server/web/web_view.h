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
// Bounds (WebLimits): at most max_in_flight requests are served at once (more get 503 with
// Retry-After at once), and a page not ready within its deadline (a pipeline loop or the store
// very busy) is answered 503 then, so that pages never hold the HTTP server's connections from its
// probes.
//
// Threading: Serve is called on `render_on` (the control loop, one thread: the HTTP server's
// connections live there) and returns at once. The list reads atomics (PipelineMetrics) and
// renders there; a pipeline's page visits its strand only to copy what memory holds (as the
// operator API does), reads the store off every strand, and renders back on `render_on`, never on
// a pipeline's loop. `answer` runs exactly once, on `render_on`.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string_view>

#include "api/admin_backend.h"
#include "http/http_routes.h"

namespace ckpt {

struct WebLimits {
  int max_in_flight = 16;  // of 256 connections the HTTP server takes
  std::chrono::milliseconds deadline{10000};
};

class WebView {
 public:
  // `backend` must outlive the view and every request it serves.
  WebView(AdminBackend& backend, boost::asio::io_context& render_on, WebLimits limits = {})
      : backend_(backend), render_on_(render_on), limits_(limits) {}

  // Read-only: a method other than GET is answered 405 (Allow: GET).
  void Serve(std::string_view method, std::string_view target,
             std::function<void(HttpReply)> answer);

 private:
  // Serve's work once the request is admitted; `answer` is the request's PageAnswer.
  void ServePage(std::string_view target, std::function<void(HttpReply)> answer);

  AdminBackend& backend_;
  boost::asio::io_context& render_on_;
  const WebLimits limits_;
  std::atomic<int> in_flight_{0};  // requests not answered yet
};

}  // namespace ckpt
