#include "http/metrics_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <optional>

namespace ckpt {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One accepted connection: read a request, answer it, repeat while the client keeps it alive.
// Threading: every member is touched only on the connection's strand (its stream's executor).
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, std::shared_ptr<MetricsServer::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    ++shared_->open;
  }
  ~HttpConnection() { --shared_->open; }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.max_header_bytes));
    parser_->body_limit(shared_->limits.max_body_bytes);
    stream_.expires_after(shared_->limits.io_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->OnRead(ec);
                     });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return Close();
    }
    if (ec) {
      // A request we cannot read whole: say why, then close (the stream may be mid-message).
      const int status = ec == http::error::header_limit ? 431
                         : ec == http::error::body_limit ? 413
                                                         : 400;
      HttpReply reply;
      reply.status = status;
      reply.body = "bad request: " + ec.message() + "\n";
      return Write(reply, /*keep_alive=*/false, /*version=*/11);
    }
    const auto& request = parser_->get();
    ++served_;
    const bool keep_alive =
        request.keep_alive() && served_ < shared_->limits.max_requests_per_connection;
    Write(Route(std::string_view(request.method_string().data(), request.method_string().size()),
                std::string_view(request.target().data(), request.target().size()),
                shared_->endpoints),
          keep_alive, request.version());
  }

  void Write(const HttpReply& reply, bool keep_alive, unsigned version) {
    response_.emplace(static_cast<http::status>(reply.status), version);
    response_->set(http::field::server, "ckptd");
    response_->set(http::field::content_type, reply.content_type);
    for (const auto& [name, value] : reply.headers) response_->set(name, value);
    response_->body() = reply.body;
    response_->keep_alive(keep_alive);
    response_->prepare_payload();
    stream_.expires_after(shared_->limits.io_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  const std::shared_ptr<MetricsServer::Shared> shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;  // alive until its write ends
  int served_ = 0;
};

// "HOST:PORT" with an optional [IPv6] host, already checked by the config loader.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty() && !port->empty();
}

}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, HttpEndpoints endpoints, HttpLimits limits)
    : io_(io),
      shared_(std::make_shared<Shared>()),
      acceptor_strand_(asio::make_strand(io)),
      acceptor_(acceptor_strand_),
      accept_retry_timer_(acceptor_strand_) {
  shared_->endpoints = std::move(endpoints);
  shared_->limits = limits;
}

Status MetricsServer::Listen(const std::string& address) {
  std::string host;
  std::string port;
  if (!SplitHostPort(address, &host, &port)) {
    return Status::InvalidArgument("metrics_listen: expected HOST:PORT, got '" + address + "'");
  }
  beast::error_code ec;
  tcp::resolver resolver(io_);
  // Synchronous on the controlling thread, once at start: a name like "localhost" resolves from
  // /etc/hosts without blocking any io thread.
  auto endpoints = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) {
    return Status::Unavailable("metrics_listen " + address + ": cannot resolve: " + ec.message());
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    return Status::Unavailable("cannot listen on metrics_listen " + address + ": " +
                               ec.message());
  }
  port_ = acceptor_.local_endpoint(ec).port();
  asio::post(acceptor_strand_, [this] { Accept(); });
  return Status::Ok();
}

void MetricsServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;  // Stop
    if (ec) {
      // Out of file descriptors, say: wait a little instead of spinning on the same error.
      spdlog::warn("metrics http: accept failed: {}; retrying in 100 ms", ec.message());
      accept_retry_timer_.expires_after(std::chrono::milliseconds(100));
      accept_retry_timer_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor_.is_open()) Accept();
      });
      return;
    }
    if (shared_->open.load() >= shared_->limits.max_connections) {
      // Full: close at once rather than queue; a scraper retries on its next interval.
      spdlog::debug("metrics http: {} connections open, refusing another",
                    shared_->limits.max_connections);
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<HttpConnection>(std::move(socket), shared_)->Start();
    }
    Accept();
  });
}

void MetricsServer::Stop() {
  // Waits for the close, so that the port is free (and probes see it closed) when Stop returns.
  // The io threads are still running here (Daemon::Shutdown stops them later); the bound only
  // guards against a wedged loop, which the closing of the whole process then takes care of.
  auto closed = std::make_shared<std::promise<void>>();
  auto done = closed->get_future();
  asio::post(acceptor_strand_, [this, closed] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_timer_.cancel();
    closed->set_value();
  });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    spdlog::warn("metrics: the listening socket was not closed within 5 s (event loop busy)");
  }
}

}  // namespace ckpt
