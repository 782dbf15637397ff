#include "http/http_routes.h"

namespace ckpt {

std::optional<HttpReply> Route(std::string_view method, std::string_view target,
                               const HttpEndpoints& endpoints) {
  const std::string_view path = target.substr(0, target.find('?'));
  HttpReply reply;
  const bool fixed = path == "/metrics" || path == "/healthz" || path == "/readyz";
  if (!fixed && !endpoints.pages) {
    reply.status = 404;
    reply.body = "not found; try /metrics, /healthz or /readyz\n";
    return reply;
  }
  if (!fixed) return std::nullopt;  // the pages', whatever the method (they answer it)
  if (method != "GET") {
    reply.status = 405;
    reply.body = "only GET is served here\n";
    reply.headers.emplace_back("Allow", "GET");
    return reply;
  }
  if (path == "/metrics") {
    reply.content_type = std::string(kPrometheusContentType);
    reply.body = endpoints.metrics ? endpoints.metrics() : std::string();
  } else if (path == "/healthz") {
    const std::string why = endpoints.not_alive ? endpoints.not_alive() : std::string();
    reply.status = why.empty() ? 200 : 503;
    reply.body = why.empty() ? "ok\n" : "not alive: " + why + "\n";
  } else {
    const std::string why = endpoints.not_ready ? endpoints.not_ready() : "no readiness check";
    reply.status = why.empty() ? 200 : 503;
    reply.body = why.empty() ? "ready\n" : "not ready: " + why + "\n";
  }
  return reply;
}

}  // namespace ckpt
