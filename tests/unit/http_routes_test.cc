// What the HTTP endpoint answers, without sockets.
#include "http/http_routes.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

HttpEndpoints Endpoints(bool ready, std::string not_alive = "") {
  HttpEndpoints e;
  e.metrics = [] { return std::string("m_total 1\n"); };
  e.not_ready = [ready] { return ready ? std::string() : std::string("the store fails writes"); };
  e.not_alive = [not_alive] { return not_alive; };
  return e;
}

TEST(HttpRoutes, MetricsInThePrometheusContentType) {
  HttpReply r = *Route("GET", "/metrics", Endpoints(true));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, kPrometheusContentType);
  EXPECT_EQ(r.body, "m_total 1\n");
}

TEST(HttpRoutes, QueryStringIsIgnored) {
  EXPECT_EQ(Route("GET", "/metrics?name[]=x", Endpoints(true))->status, 200);
  EXPECT_EQ(Route("GET", "/healthz?verbose", Endpoints(true))->status, 200);
}

TEST(HttpRoutes, HealthzAnswersWhateverTheReadiness) {
  EXPECT_EQ(Route("GET", "/healthz", Endpoints(false))->status, 200);
  EXPECT_EQ(Route("GET", "/healthz", Endpoints(true))->status, 200);
  EXPECT_EQ(Route("GET", "/healthz", HttpEndpoints{})->status, 200);  // answering is the proof
}

TEST(HttpRoutes, HealthzSaysWhyItIsNotAlive) {
  HttpReply r = *Route("GET", "/healthz", Endpoints(true, "the gRPC port does not accept"));
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("the gRPC port does not accept"), std::string::npos) << r.body;
}

TEST(HttpRoutes, ReadyzFollowsReadiness) {
  EXPECT_EQ(Route("GET", "/readyz", Endpoints(true))->status, 200);
  HttpReply r = *Route("GET", "/readyz", Endpoints(false));
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("not ready: the store fails writes"), std::string::npos) << r.body;
  EXPECT_EQ(Route("GET", "/readyz", HttpEndpoints{})->status, 503);  // no callback: not ready
}

TEST(HttpRoutes, UnknownPathIs404WithoutPages) {
  for (const char* target : {"/", "/metrics/", "/METRICS", "metrics", "", "/healthz/x", "*"}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(Route("GET", target, Endpoints(true))->status, 404);
  }
}

TEST(HttpRoutes, OtherMethodsAre405WithAllow) {
  for (const char* method : {"POST", "PUT", "DELETE", "HEAD", "get", "BREW"}) {
    SCOPED_TRACE(method);
    HttpReply r = *Route(method, "/metrics", Endpoints(true));
    EXPECT_EQ(r.status, 405);
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0].first, "Allow");
    EXPECT_EQ(r.headers[0].second, "GET");
  }
}

TEST(HttpRoutes, EveryOtherRequestIsThePages) {
  HttpEndpoints e = Endpoints(true);
  e.pages = [](std::string_view, std::string_view, std::function<void(HttpReply)>) {};
  for (const char* target : {"/", "/pipelines/a/b", "/api/v1/pipelines?job=x", "/metrics/"}) {
    SCOPED_TRACE(target);
    EXPECT_FALSE(Route("GET", target, e).has_value());
  }
  EXPECT_EQ(Route("GET", "/metrics", e)->status, 200);  // the fixed paths stay the route's
  // Whatever the method: the pages answer it (the web view refuses all but GET itself).
  EXPECT_FALSE(Route("POST", "/pipelines/a/b", e).has_value());
  EXPECT_EQ(Route("POST", "/metrics", e)->status, 405) << "the fixed routes stay GET only";
}

}  // namespace
}  // namespace ckpt
