#pragma once
// GrpcListener: the gRPC port, accepted by the daemon and handed to gRPC's server connection by
// connection (ServerBuilder's external connection acceptor).
//
// Why not ServerBuilder::AddListeningPort: gRPC 1.51 binds with SO_REUSEPORT, so a second daemon
// with another data_dir could bind the same port and the kernel would split the workers between
// two stores; and its accept loop stops for good at the first accept4 error other than EAGAIN
// (EMFILE once descriptors run out), leaving the port dead while every probe says healthy.
// Here: no SO_REUSEPORT (a second daemon fails with "address already in use"), and while accept
// fails for want of descriptors or memory the listener reports not accepting (/healthz 503) and
// tries again every 100 ms, so connections are accepted again within moments of descriptors
// being freed.
//
// Threading: Listen, Start and Stop are called from the controlling thread. The accept loop runs
// on a strand of `io` and never blocks (a non-blocking socket, accept4 until EAGAIN).
// accepting() and accepted() are safe from any thread.

#include <grpcpp/server_builder.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "logging/log_throttle.h"

namespace ckpt {

class GrpcListener {
 public:
  // `acceptor` comes from ServerBuilder::experimental().AddExternalConnectionAcceptor; it must be
  // the server's that is started before Start().
  GrpcListener(boost::asio::io_context& io,
               std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor);
  GrpcListener(const GrpcListener&) = delete;
  GrpcListener& operator=(const GrpcListener&) = delete;

  // Binds HOST:PORT (port 0: a free one) and listens. When it returns OK the port accepts TCP
  // connections into its backlog; Start hands them to gRPC.
  Status Listen(const std::string& address);
  // Starts the accept loop. Call once the gRPC server is started.
  void Start();
  // Closes the socket (on its strand; waits up to 5 s for that). Idempotent.
  void Stop();

  int port() const { return port_; }
  // False while accept fails for want of resources (descriptors, memory).
  bool accepting() const { return accepting_.load(); }
  uint64_t accepted() const { return accepted_.load(); }

 private:
  void WaitForConnections();  // strand_
  void AcceptReady();         // strand_
  // accept4 failed with `error`: true to keep accepting now, false to wait (resources, stop).
  bool OnAcceptError(int error);  // strand_
  // Resources are back (accept4 got a descriptor, or found the backlog empty).
  void MarkAccepting();  // strand_

  const std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> grpc_acceptor_;
  int port_ = 0;  // set by Listen, before the loop runs
  std::atomic<bool> accepting_{true};
  std::atomic<uint64_t> accepted_{0};

  // strand_ only (after Listen).
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::ip::tcp::acceptor socket_;
  boost::asio::steady_timer retry_timer_;
  uint64_t failed_accepts_ = 0;  // since accepting last stopped
  LogThrottle failure_log_{std::chrono::seconds(10)};
  bool stopped_ = false;
};

}  // namespace ckpt
