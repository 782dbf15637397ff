#include "rpc/grpc_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "net/run_and_wait.h"
#include "net/tcp_listen.h"

namespace ckpt {

namespace asio = boost::asio;

namespace {

// Connections taken per readiness wake-up before the loop yields to other handlers.
constexpr int kAcceptsPerWake = 256;
// While accept fails for want of resources: how long to wait before trying again.
constexpr auto kResourceRetry = std::chrono::milliseconds(100);
// How often the connections gRPC closed are looked for.
constexpr auto kSweepInterval = std::chrono::seconds(1);
// ...and at most how often a cap reached makes Admit look at once.
constexpr auto kCapSweepEvery = std::chrono::milliseconds(100);
// Descriptors kept out of the connection cap: the store, etcd, the HTTP port, logs, pipes.
constexpr int64_t kDescriptorReserve = 256;

// The cap on connections the descriptor limit allows (the soft limit, which the daemon raised
// to the hard one at start).
int64_t DescriptorCap(int64_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return wanted;
  const int64_t room = static_cast<int64_t>(limit.rlim_cur) - kDescriptorReserve;
  return std::max<int64_t>(16, std::min(wanted, room));
}

std::string AddressOf(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
  }
  return text;
}

ino_t InodeOf(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

}  // namespace

GrpcListener::GrpcListener(asio::io_context& io,
                           std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
                           int64_t max_connections, int64_t max_connections_per_peer,
                           std::function<void(bool per_peer)> refused)
    : grpc_acceptor_(std::move(acceptor)),
      max_total_(DescriptorCap(max_connections)),
      max_per_peer_(max_connections_per_peer),
      refused_(std::move(refused)),
      strand_(asio::make_strand(io)),
      socket_(strand_),
      retry_timer_(strand_),
      sweep_timer_(strand_) {
  if (max_total_ < max_connections) {
    spdlog::info(
        "limits.max_connections is {}, but the descriptor limit allows {} connections beside "
        "the daemon's own descriptors; capping at {} (raise LimitNOFILE to lift it)",
        max_connections, max_total_, max_total_);
  }
}

Status GrpcListener::Listen(const std::string& address) {
  auto port = ListenTcp(socket_, address, "listen");
  if (!port.ok()) return port.status();
  port_ = *port;
  return Status::Ok();
}

void GrpcListener::Start() {
  asio::post(strand_, [this] {
    WaitForConnections();
    ArmSweep();
  });
}

void GrpcListener::ArmSweep() {
  if (stopped_) return;
  sweep_timer_.expires_after(kSweepInterval);
  sweep_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    Sweep();
    ArmSweep();
  });
}

void GrpcListener::Sweep() {
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    if (InodeOf(it->first) == it->second.inode) {
      ++it;
      continue;
    }
    // gRPC closed it (the descriptor is gone, or now holds something else).
    auto peer = per_peer_.find(it->second.peer);
    if (peer != per_peer_.end() && --peer->second <= 0) per_peer_.erase(peer);
    it = by_fd_.erase(it);
  }
  open_.store(static_cast<int64_t>(by_fd_.size()), std::memory_order_relaxed);
}

bool GrpcListener::Admit(const std::string& peer) {
  auto full = [&] {
    auto it = per_peer_.find(peer);
    const bool peer_full = it != per_peer_.end() && it->second >= max_per_peer_;
    return std::make_pair(static_cast<int64_t>(by_fd_.size()) >= max_total_, peer_full);
  };
  auto [all, peer_full] = full();
  const auto now = std::chrono::steady_clock::now();
  if ((all || peer_full) && now - last_cap_sweep_ >= kCapSweepEvery) {
    last_cap_sweep_ = now;
    Sweep();  // closed ones may have made room since the last look
    std::tie(all, peer_full) = full();
  }
  if (!all && !peer_full) return true;
  refused_(peer_full && !all);
  uint64_t held_back = 0;
  if (refusal_log_.Allow(now, &held_back)) {
    spdlog::warn(
        "gRPC listener: closed a new connection from {}: {} ({} more refused since the "
        "last line)",
        peer,
        all ? "limits.max_connections (" + std::to_string(max_total_) + ") reached"
            : "limits.max_connections_per_peer (" + std::to_string(max_per_peer_) +
                  ") reached for that address",
        held_back);
  }
  return false;
}

void GrpcListener::ForgetReused(int fd) {
  // A descriptor number gRPC closed and the kernel handed out again: that connection is over,
  // and its place is free for the one just accepted.
  if (auto old = by_fd_.find(fd); old != by_fd_.end()) {
    auto it = per_peer_.find(old->second.peer);
    if (it != per_peer_.end() && --it->second <= 0) per_peer_.erase(it);
    by_fd_.erase(old);
  }
}

void GrpcListener::Track(int fd, std::string peer) {
  ++per_peer_[peer];
  by_fd_[fd] = Connection{std::move(peer), InodeOf(fd)};
  open_.store(static_cast<int64_t>(by_fd_.size()), std::memory_order_relaxed);
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
    sockaddr_storage address{};
    socklen_t address_size = sizeof address;
    const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&address), &address_size,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
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
    std::string peer = AddressOf(address);
    ForgetReused(fd);
    if (!Admit(peer)) {
      ::close(fd);
      continue;
    }
    Track(fd, std::move(peer));
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
        sweep_timer_.cancel();
      },
      std::chrono::seconds(5));
  if (!closed) {
    spdlog::warn("gRPC listener: the socket was not closed within 5 s (control loop busy)");
  }
}

}  // namespace ckpt
