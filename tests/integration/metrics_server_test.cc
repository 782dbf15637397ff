// The HTTP endpoint's server on its own io_context: routes over real sockets, and bad clients
// (malformed, oversized, slow, too many) never take it down.
#include "http/metrics_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.h"
#include "http_client.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

class MetricsServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits = {}, decltype(HttpEndpoints::pages) pages = nullptr) {
    HttpEndpoints endpoints;
    endpoints.pages = std::move(pages);
    endpoints.metrics = [this] { return "scrapes_total " + std::to_string(++scrapes_) + "\n"; };
    endpoints.not_ready = [this] { return ready_.load() ? std::string() : "test says no"; };
    server_ = std::make_unique<MetricsServer>(io_, std::move(endpoints), limits);
    Status s = server_->Listen("127.0.0.1:0");
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_GT(server_->port(), 0);
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }
  int port() const { return server_->port(); }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::unique_ptr<MetricsServer> server_;
  std::thread thread_;
  std::atomic<int> scrapes_{0};
  std::atomic<bool> ready_{false};
};

TEST_F(MetricsServerTest, ServesTheRoutes) {
  Start();
  HttpResult metrics = HttpGet(port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(metrics.body, "scrapes_total 1\n");
  EXPECT_EQ(HttpGet(port(), "/healthz").status, 200);
  EXPECT_EQ(HttpGet(port(), "/readyz").status, 503);
  ready_ = true;
  EXPECT_EQ(HttpGet(port(), "/readyz").status, 200);
  EXPECT_EQ(HttpGet(port(), "/nope").status, 404);
  HttpResult post = HttpRequest(port(), "POST", "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.head.find("Allow: GET"), std::string::npos);
}

TEST_F(MetricsServerTest, APageAnsweredLaterFromAnotherThreadIsWrittenBackInOrder) {
  std::vector<std::thread> answerers;
  std::mutex mu;
  Start({}, [&](std::string_view method, std::string_view target,
                std::function<void(HttpReply)> answer) {
    std::lock_guard<std::mutex> lock(mu);
    answerers.emplace_back(
        [method = std::string(method), target = std::string(target), answer = std::move(answer)] {
          std::this_thread::sleep_for(milliseconds(20));  // the page takes its time elsewhere
          HttpReply reply;
          reply.status = method == "GET" ? 200 : 405;
          reply.content_type = "text/html; charset=utf-8";
          reply.body = "page " + target;
          answer(std::move(reply));
        });
  });
  TestSocket socket(port());
  ASSERT_TRUE(socket.connected());
  // Two pages on one keep-alive connection, then a fixed route: each answer in its turn.
  for (const std::string target : {"/pipelines/a/b", "/?job=x"}) {
    ASSERT_TRUE(socket.Send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpResult r = ParseResponse(socket.ReadResponse());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "page " + target);
  }
  ASSERT_TRUE(socket.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(ParseResponse(socket.ReadResponse()).status, 200);
  EXPECT_EQ(HttpRequest(port(), "POST", "/pipelines/a/b").status, 405)
      << "a page's method reaches the pages, which answer it";
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : answerers) t.join();
}

TEST_F(MetricsServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start();
  TestSocket socket(port());
  ASSERT_TRUE(socket.connected());
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(socket.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpResult r = ParseResponse(socket.ReadResponse());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "scrapes_total " + std::to_string(i) + "\n");
  }
}

TEST_F(MetricsServerTest, OversizedHeadersGet431AndTheServerLivesOn) {
  Start();
  TestSocket socket(port());
  socket.Send("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  std::string reply;
  EXPECT_TRUE(socket.ReadUntilClosed(&reply)) << "the connection must be closed after the error";
  EXPECT_EQ(ParseResponse(reply).status, 431) << reply.substr(0, 200);
  EXPECT_EQ(HttpGet(port(), "/healthz").status, 200);
}

TEST_F(MetricsServerTest, GarbageGets400AndTheServerLivesOn) {
  Start();
  for (const std::string& junk :
       {std::string("NOT HTTP AT ALL\r\n\r\n"), std::string("GET /metrics HTTP/9.9\r\n\r\n"),
        std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n",
        std::string("GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n")}) {
    TestSocket socket(port());
    socket.Send(junk);
    std::string reply;
    EXPECT_TRUE(socket.ReadUntilClosed(&reply));
    EXPECT_EQ(ParseResponse(reply).status, 400) << reply.substr(0, 200);
  }
  EXPECT_EQ(HttpGet(port(), "/healthz").status, 200);
}

TEST_F(MetricsServerTest, ABodyTooLargeGets413) {
  Start();
  TestSocket socket(port());
  socket.Send("GET /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(100, 'x'));
  std::string reply;
  EXPECT_TRUE(socket.ReadUntilClosed(&reply));
  EXPECT_EQ(ParseResponse(reply).status, 413) << reply.substr(0, 200);
}

TEST_F(MetricsServerTest, ASlowClientIsCutOffAfterTheTimeout) {
  HttpLimits limits;
  limits.request_timeout = milliseconds(300);
  Start(limits);
  TestSocket socket(port(), milliseconds(5000));
  socket.Send("GET /metrics HTTP/1.1\r\nHost:");  // and nothing more
  const auto started = std::chrono::steady_clock::now();
  std::string reply;
  EXPECT_TRUE(socket.ReadUntilClosed(&reply)) << "not closed within the read timeout";
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(3000));
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() == 0; }));
}

TEST_F(MetricsServerTest, IdleConnectionsAtTheCapMakeRoomForAProbe) {
  HttpLimits limits;
  limits.max_connections = 3;
  Start(limits);
  std::vector<std::unique_ptr<TestSocket>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<TestSocket>(port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  ASSERT_TRUE(Eventually([&] { return server_->open_connections() == 3; }));
  // At the cap, a probe still gets its answer: the connection idle the longest makes room.
  for (int probe = 0; probe < 5; ++probe) {
    EXPECT_EQ(HttpGet(port(), "/healthz").status, 200) << "probe " << probe;
  }
  EXPECT_GE(server_->evicted_connections(), 1u);
  std::string reply;
  EXPECT_TRUE(idle[0]->ReadUntilClosed(&reply)) << "the oldest idle connection was closed";
  EXPECT_LE(server_->open_connections(), 3);
}

TEST_F(MetricsServerTest, OneClientCannotHoldEveryConnection) {
  HttpLimits limits;
  limits.max_connections = 100;
  limits.max_connections_per_client = 4;
  Start(limits);
  std::vector<std::unique_ptr<TestSocket>> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<TestSocket>(port()));
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() <= 4; }));
  ASSERT_TRUE(Eventually([&] { return server_->evicted_connections() >= 16; }))
      << "a client beyond its share closes its own oldest idle connections";
  EXPECT_EQ(HttpGet(port(), "/healthz").status, 200);
}

TEST_F(MetricsServerTest, APortInUseIsAnError) {
  Start();
  boost::asio::io_context other_io;
  MetricsServer other(other_io, HttpEndpoints{});
  Status s = other.Listen("127.0.0.1:" + std::to_string(port()));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("(metrics_listen): address already in use"), std::string::npos)
      << s.message();
}

TEST_F(MetricsServerTest, StopClosesTheListeningSocket) {
  Start();
  server_->Stop();
  EXPECT_TRUE(Eventually([&] { return !TestSocket(port()).connected(); }));
}

}  // namespace
}  // namespace ckpt::testing
