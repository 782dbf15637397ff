#include "http/http_routes.h"

namespace ckpt {

HttpReply Route(std::string_view method, std::string_view target, const HttpEndpoints& endpoints) {
  const std::string_view path = target.substr(0, target.find('?'));
  HttpReply reply;
  if (path != "/metrics" && path != "/healthz" && path != "/readyz") {
    reply.status = 404;
    reply.body = "not found; try /metrics, /healthz or /readyz\n";
    return reply;
  }
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
    // Answering at all is the check: this runs on the io_context, so a wedged loop answers nothing
    // and the probe times out.
    reply.body = "ok\n";
  } else {
    const bool ready = endpoints.ready && endpoints.ready();
    reply.status = ready ? 200 : 503;
    reply.body = ready ? "ready\n" : "not ready: starting or shutting down\n";
  }
  return reply;
}

}  // namespace ckpt
