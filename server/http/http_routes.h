#pragma once
// What ckptd's HTTP endpoint answers, apart from the sockets: a request line in, a response out.
// GET /metrics (Prometheus text), GET /healthz (alive: every event loop turns and the gRPC port
// accepts), GET /readyz (ready to serve: alive, started, not shutting down, the store takes
// writes), 405 for their other methods; every other request goes to the pages (the web view,
// which answers a method other than GET itself), 404 without them. A 503 says why.
// Threading: Route is a pure function of its arguments; the endpoint callbacks must be safe to call
// from any io thread and must not block.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

struct HttpEndpoints {
  std::function<std::string()> metrics;  // the /metrics page
  // Why the daemon is not alive, "" while it is (none given: alive, answering is the proof).
  std::function<std::string()> not_alive;
  // Why the daemon is not ready, "" while it is (none given: not ready).
  std::function<std::string()> not_ready;
  struct Reply;
  // Every other request (the web view and its JSON), whatever its method: answered through
  // `answer`, exactly once, later and from any thread (it gathers what it shows without waiting
  // for it). None given: 404.
  std::function<void(std::string_view method, std::string_view target,
                     std::function<void(Reply)> answer)>
      pages;
};

struct HttpEndpoints::Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones, e.g. Allow
};
using HttpReply = HttpEndpoints::Reply;

// The content type Prometheus' text format 0.0.4 is served with.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// `target` is the request target as sent ("/metrics?x=1"); the query is ignored. Nullopt: the
// request is the pages' (endpoints.pages answers it).
std::optional<HttpReply> Route(std::string_view method, std::string_view target,
                               const HttpEndpoints& endpoints);

}  // namespace ckpt
