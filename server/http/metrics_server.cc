#include "http/metrics_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <map>
#include <optional>

#include "common/mutex.h"
#include "net/run_and_wait.h"
#include "net/tcp_listen.h"

namespace ckpt {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
class HttpConnection;
}  // namespace

// The open connections, so that a new one can be let in by closing one that only waits.
// Threading: guarded by mu (connections run on strands of the control loop, Accept on its own).
struct MetricsServer::Shared {
  struct Entry {
    std::weak_ptr<HttpConnection> connection;
    std::string client;   // the peer's address
    bool waiting = true;  // for a request (idle, or a request arriving slowly)
    std::chrono::steady_clock::time_point waiting_since;
  };

  HttpEndpoints endpoints;
  HttpLimits limits;
  std::atomic<uint64_t> evicted{0};
  mutable Mutex mu;
  std::map<const HttpConnection*, Entry> open CKPT_GUARDED_BY(mu);

  // Makes room for one more connection from `client`: the connection of the full scope (the
  // client's own, else all) that has waited longest for a request is returned to be closed. Null
  // when there is room, or when none waits (then the newcomer is refused).
  std::shared_ptr<HttpConnection> MakeRoomLocked(const std::string& client, bool* refuse) const
      CKPT_REQUIRES(mu);
};

namespace {

// One accepted connection: read a request, answer it, repeat while the client keeps it alive.
// Threading: every member is touched only on the connection's strand (its stream's executor).
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, std::shared_ptr<MetricsServer::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {}
  ~HttpConnection() {
    MutexLock lock(shared_->mu);
    shared_->open.erase(this);
  }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // Closes the connection to let another in; on the connection's strand.
  void Evict() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->stream_.socket().close(ignored);  // the read in progress ends with an error
    });
  }

 private:
  void SetWaiting(bool waiting) {
    MutexLock lock(shared_->mu);
    auto it = shared_->open.find(this);
    if (it == shared_->open.end()) return;
    it->second.waiting = waiting;
    if (waiting) it->second.waiting_since = std::chrono::steady_clock::now();
  }

  void Read() {
    SetWaiting(true);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.max_header_bytes));
    parser_->body_limit(shared_->limits.max_body_bytes);
    stream_.expires_after(shared_->limits.request_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    SetWaiting(false);
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return Close();
    }
    if (ec) {
      // A request we cannot read whole: say why, then close (the stream may be mid-message).
      if (!stream_.socket().is_open()) return Close();  // evicted
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
    const std::string_view target(request.target().data(), request.target().size());
    const std::string_view method(request.method_string().data(), request.method_string().size());
    auto reply = Route(method, target, shared_->endpoints);
    if (reply) return Write(*reply, keep_alive, request.version());
    // A page: answered later, from another thread; written back on this connection's strand.
    // The connection is busy meanwhile (not evicted for idling); the pages always answer.
    shared_->endpoints.pages(
        method, target,
        [self = shared_from_this(), keep_alive, version = request.version()](HttpReply page) {
          asio::dispatch(self->stream_.get_executor(),
                         [self, keep_alive, version, page = std::move(page)] {
                           self->Write(page, keep_alive, version);
                         });
        });
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

}  // namespace

std::shared_ptr<HttpConnection> MetricsServer::Shared::MakeRoomLocked(const std::string& client,
                                                                      bool* refuse) const {
  *refuse = false;
  int from_client = 0;
  for (const auto& [ptr, entry] : open) from_client += entry.client == client ? 1 : 0;
  const bool client_full = from_client >= limits.max_connections_per_client;
  const bool all_full = static_cast<int>(open.size()) >= limits.max_connections;
  if (!client_full && !all_full) return nullptr;
  const Entry* oldest = nullptr;
  for (const auto& [ptr, entry] : open) {
    if (!entry.waiting || (client_full && entry.client != client)) continue;
    if (!oldest || entry.waiting_since < oldest->waiting_since) oldest = &entry;
  }
  auto victim = oldest ? oldest->connection.lock() : nullptr;
  *refuse = !victim;
  return victim;
}

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
  auto port = ListenTcp(acceptor_, address, "metrics_listen");
  if (!port.ok()) return port.status();
  port_ = *port;
  asio::post(acceptor_strand_, [this] { Accept(); });
  return Status::Ok();
}

void MetricsServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;  // Stop
    if (ec) {
      // Out of file descriptors, say: wait a little instead of spinning on the same error.
      uint64_t held_back = 0;
      if (accept_failure_log_.Allow(std::chrono::steady_clock::now(), &held_back)) {
        spdlog::warn(
            "metrics http: accept failed: {}; retrying every 100 ms ({} more failures "
            "since the last line)",
            ec.message(), held_back);
      }
      accept_retry_timer_.expires_after(std::chrono::milliseconds(100));
      accept_retry_timer_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor_.is_open()) Accept();
      });
      return;
    }
    beast::error_code endpoint_ec;
    const std::string client = socket.remote_endpoint(endpoint_ec).address().to_string();
    auto connection = std::make_shared<HttpConnection>(std::move(socket), shared_);
    std::shared_ptr<HttpConnection> victim;
    bool refuse = false;
    {
      MutexLock lock(shared_->mu);
      victim = shared_->MakeRoomLocked(client, &refuse);
      if (!refuse) {
        shared_->open[connection.get()] =
            Shared::Entry{connection, client, true, std::chrono::steady_clock::now()};
      }
    }
    if (victim) {
      ++shared_->evicted;
      victim->Evict();
    }
    if (refuse) {
      // Every connection of its scope is busy answering: close this one; the client retries.
      spdlog::debug("metrics http: no room for a connection from {}", client);
    } else {
      connection->Start();
    }
    Accept();
  });
}

int MetricsServer::open_connections() const {
  MutexLock lock(shared_->mu);
  return static_cast<int>(shared_->open.size());
}

uint64_t MetricsServer::evicted_connections() const { return shared_->evicted.load(); }

void MetricsServer::Stop() {
  // Waits for the close, so that the port is free (and probes see it closed) when Stop returns.
  // The io threads are still running here (Daemon::Shutdown stops them later); the bound only
  // guards against a wedged loop, which the closing of the whole process then takes care of.
  const bool closed = RunAndWait(
      acceptor_strand_,
      [this] {
        beast::error_code ignored;
        acceptor_.close(ignored);
        accept_retry_timer_.cancel();
      },
      std::chrono::seconds(5));
  if (!closed) {
    spdlog::warn("metrics: the listening socket was not closed within 5 s (event loop busy)");
  }
}

}  // namespace ckpt
