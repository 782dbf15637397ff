#include "rpc/grpc_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "net/run_and_wait.h"
#include "net/tcp_listen.h"

namespace ckpt {

namespace asio = boost::asio;

namespace {

// Connections taken per readiness wake-up before the loop yields to other handlers.
constexpr int kAcceptsPerWake = 256;
// While accept fails for want of resources: how long to wait before trying again.
constexpr auto kResourceRetry = std::chrono::milliseconds(100);

}  // namespace

GrpcListener::GrpcListener(asio::io_context& io,
                           std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor)
    : grpc_acceptor_(std::move(acceptor)),
      strand_(asio::make_strand(io)),
      socket_(strand_),
      retry_timer_(strand_) {}

Status GrpcListener::Listen(const std::string& address) {
  auto port = ListenTcp(socket_, address, "listen");
  if (!port.ok()) return port.status();
  port_ = *port;
  return Status::Ok();
}

void GrpcListener::Start() {
  asio::post(strand_, [this] { WaitForConnections(); });
}

void GrpcListener::WaitForConnections() {
  if (stopped_) return;
  socket_.async_wait(asio::ip::tcp::acceptor::wait_read, [this](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || stopped_) return;
    AcceptReady();
  });
}

void GrpcListener::AcceptReady() {
  const int listener = socket_.native_handle();
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        // The backlog is empty, and accept4 had a descriptor to spare (Linux reserves one before
        // it looks at the backlog): resources are back, whether or not a connection waited.
        MarkAccepting();
        break;
      }
      if (OnAcceptError(error)) continue;
      return;  // waiting for resources: the retry timer calls back
    }
    MarkAccepting();
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters connection;
    connection.listener_fd = listener;
    connection.fd = fd;  // gRPC owns it from here
    grpc_acceptor_->HandleNewConnection(&connection);
    accepted_.fetch_add(1, std::memory_order_relaxed);
  }
  WaitForConnections();
}

void GrpcListener::MarkAccepting() {
  if (accepting_.exchange(true)) return;
  spdlog::info("gRPC listener: accepting connections again ({} accepts failed meanwhile)",
               failed_accepts_);
  failed_accepts_ = 0;
}

bool GrpcListener::OnAcceptError(int error) {
  switch (error) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:  // a firewall rule refused this one
      return true;
    default: break;
  }
  // Out of descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), or something unexpected:
  // the connection stays in the backlog; try again shortly, never give up on the port.
  ++failed_accepts_;
  accepting_.store(false);
  uint64_t held_back = 0;
  if (failure_log_.Allow(std::chrono::steady_clock::now(), &held_back)) {
    spdlog::error(
        "gRPC listener: accept failed: {}; new connections wait in the backlog, "
        "retrying every {} ms (/healthz says 503 meanwhile; {} more failures since "
        "the last line)",
        std::strerror(error), kResourceRetry.count(), held_back);
  }
  retry_timer_.expires_after(kResourceRetry);
  retry_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && !stopped_) AcceptReady();
  });
  return false;
}

void GrpcListener::Stop() {
  const bool closed = RunAndWait(
      strand_,
      [this] {
        stopped_ = true;
        boost::system::error_code ignored;
        socket_.close(ignored);
        retry_timer_.cancel();
      },
      std::chrono::seconds(5));
  if (!closed) {
    spdlog::warn("gRPC listener: the socket was not closed within 5 s (control loop busy)");
  }
}

}  // namespace ckpt
