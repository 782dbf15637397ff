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
// Connections are capped (limits.max_connections, limits.max_connections_per_peer): one over
// either is closed at accept, counted in ckptd_limit_refusals_total and logged at most once per
// 10 s. gRPC owns a connection's descriptor once handed over and says nothing when it closes it,
// so the listener keeps each descriptor's socket inode and looks, about once a second and
// whenever a cap is reached, which of them no longer hold that socket: those connections are
// closed (a reused descriptor number holds another inode). The total cap is also held below the
// process's descriptor limit, so that the store, etcd and /healthz always find one.
//
// Threading: Listen, Start and Stop are called from the controlling thread. The accept loop runs
// on a strand of `io` and never blocks (a non-blocking socket, accept4 until EAGAIN).
// accepting(), accepted() and connections() are safe from any thread.

#include <grpcpp/server_builder.h>
#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "logging/log_throttle.h"

namespace ckpt {

class GrpcListener {
 public:
  // `acceptor` comes from ServerBuilder::experimental().AddExternalConnectionAcceptor; it must be
  // the server's that is started before Start().
  // `max_connections`, `max_connections_per_peer`: the caps (limits); `refused`: counts the
  // connections closed at either (by cap: true for the per-peer one). Both must outlive it.
  GrpcListener(boost::asio::io_context& io,
               std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
               int64_t max_connections, int64_t max_connections_per_peer,
               std::function<void(bool per_peer)> refused);
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
  // Connections open now (as of the last look), and the cap in force.
  int64_t connections() const { return open_.load(); }
  int64_t connection_cap() const { return max_total_; }

 private:
  struct Connection {
    std::string peer;
    ino_t inode = 0;
  };
  // Whether a connection from `peer` may be kept (a look at the closed ones first, when at a cap).
  bool Admit(const std::string& peer);   // strand_
  void Track(int fd, std::string peer);  // strand_
  // Forgets the connection that held `fd` before accept handed it out again.
  void ForgetReused(int fd);  // strand_
  // Forgets the connections gRPC has closed since.
  void Sweep();               // strand_
  void ArmSweep();            // strand_
  void WaitForConnections();  // strand_
  void AcceptReady();         // strand_
  // accept4 failed with `error`: true to keep accepting now, false to wait (resources, stop).
  bool OnAcceptError(int error);  // strand_
  // Resources are back (accept4 got a descriptor, or found the backlog empty).
  void MarkAccepting();  // strand_

  const std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> grpc_acceptor_;
  const int64_t max_total_;
  const int64_t max_per_peer_;
  const std::function<void(bool)> refused_;
  int port_ = 0;  // set by Listen, before the loop runs
  std::atomic<int64_t> open_{0};
  std::atomic<bool> accepting_{true};
  std::atomic<uint64_t> accepted_{0};

  // strand_ only (after Listen).
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::ip::tcp::acceptor socket_;
  boost::asio::steady_timer retry_timer_;
  uint64_t failed_accepts_ = 0;  // since accepting last stopped
  LogThrottle failure_log_{std::chrono::seconds(10)};
  std::unordered_map<int, Connection> by_fd_;
  std::unordered_map<std::string, int64_t> per_peer_;
  boost::asio::steady_timer sweep_timer_;
  LogThrottle refusal_log_{std::chrono::seconds(10)};
  // When a cap last made Admit sweep: a client reconnecting in a loop at its cap must not make
  // every accept look at every descriptor (one fstat each).
  std::chrono::steady_clock::time_point last_cap_sweep_{};
  bool stopped_ = false;
};

}  // namespace ckpt
