#pragma once
// MetricsServer: ckptd's HTTP endpoint (/metrics, /healthz, /readyz, the pages of the web view;
// http_routes.h), served with Boost.Beast on the daemon's io_context, so it costs no thread of its
// own and stops answering when the event loop is wedged (which is what /healthz is for).
//
// Bad clients cannot hurt the daemon nor lock out its probes: at most `max_connections` are open
// at once, and at most `max_connections_per_client` from one address. A connection beyond
// either is let in by closing the connection of that scope that has waited longest for a
// request (an idle or slow client: a probe sends its request at once and is gone in a
// millisecond), or closed if every one is busy answering. A request must arrive within
// `request_timeout` with headers under `max_header_bytes` (else 431, 413 or 400, then close),
// an answer be written within `io_timeout`, and a connection serves at most
// `max_requests_per_connection` requests.
//
// Threading: Listen and Stop are called from the controlling thread (Daemon::Start, Shutdown).
// The acceptor is touched only on acceptor_strand_; each connection runs on a strand of its own.
// Nothing blocks: the endpoint callbacks read atomics; the pages answer later, from any thread.
// Lifetime: connections hold only shared state (endpoints, the open count), never the server, so
// handlers dropped when the io_context stops may outlive it.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "http/http_routes.h"
#include "logging/log_throttle.h"

namespace ckpt {

struct HttpLimits {
  int max_connections = 256;
  int max_connections_per_client = 32;
  std::chrono::milliseconds request_timeout{
      5000};                                    // from connect (or the last answer) to a request
  std::chrono::milliseconds io_timeout{10000};  // to write an answer
  size_t max_header_bytes = 8192;
  size_t max_body_bytes = 4096;  // GET needs none; a small one is read and ignored
  int max_requests_per_connection = 1000;
};

class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, HttpEndpoints endpoints, HttpLimits limits = {});
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds HOST:PORT (port 0: a free one) and starts accepting. Synchronous: when it returns OK
  // the port accepts connections.
  Status Listen(const std::string& address);
  // The bound port; 0 before Listen succeeded.
  int port() const { return port_; }
  // Closes the listening socket on its strand and waits for that (the io threads must be
  // running); open connections finish their request or are dropped when the io_context stops.
  void Stop();

  // How many connections are open now (for tests); how many were closed to let others in.
  int open_connections() const;
  uint64_t evicted_connections() const;

  // What connections share with the server, by shared_ptr (see Lifetime above).
  struct Shared;

 private:
  void Accept();  // acceptor_strand_

  // Constant after construction (port_: after Listen, before any accept runs).
  boost::asio::io_context& io_;
  const std::shared_ptr<Shared> shared_;
  int port_ = 0;

  // acceptor_strand_
  boost::asio::strand<boost::asio::io_context::executor_type> acceptor_strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_timer_;  // after an accept error such as EMFILE
  LogThrottle accept_failure_log_{std::chrono::seconds(10)};
};

}  // namespace ckpt
