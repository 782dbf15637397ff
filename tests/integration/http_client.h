#pragma once
// A blocking HTTP/1.1 client on raw sockets, for tests of ckptd's HTTP endpoint: it can send
// exactly the bytes a test wants (malformed, oversized, half a request), and every read has a
// deadline so a server that never answers fails the test instead of hanging it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace ckpt::testing {

// An open TCP connection to 127.0.0.1:port; closed on destruction.
class TestSocket {
 public:
  explicit TestSocket(int port, std::chrono::milliseconds read_timeout = std::chrono::seconds(5)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{};
    tv.tv_sec = read_timeout.count() / 1000;
    tv.tv_usec = (read_timeout.count() % 1000) * 1000;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~TestSocket() { ::close(fd_); }
  TestSocket(const TestSocket&) = delete;
  TestSocket& operator=(const TestSocket&) = delete;

  bool connected() const { return connected_; }

  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until the peer closes (true) or the read timeout passes (false); `out` gets the bytes.
  bool ReadUntilClosed(std::string* out) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;  // a reset is a close too
      out->append(buf, static_cast<size_t>(n));
    }
  }

  // Reads one response (headers and a Content-Length body); "" on timeout or close before it.
  std::string ReadResponse() {
    std::string data;
    char buf[4096];
    for (;;) {
      const size_t header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        size_t length = 0;
        const size_t at = data.find("Content-Length: ");
        if (at != std::string::npos && at < header_end) length = std::stoul(data.substr(at + 16));
        if (data.size() >= header_end + 4 + length) return data.substr(0, header_end + 4 + length);
      }
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return "";
      data.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct HttpResult {
  int status = 0;  // 0: no answer
  std::string head;
  std::string body;
};

inline HttpResult ParseResponse(const std::string& raw) {
  HttpResult r;
  const size_t header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || header_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  r.head = raw.substr(0, header_end);
  r.body = raw.substr(header_end + 4);
  return r;
}

inline HttpResult HttpRequest(int port, const std::string& method, const std::string& path) {
  TestSocket socket(port);
  if (!socket.connected()) return {};
  socket.Send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  return ParseResponse(socket.ReadResponse());
}

inline HttpResult HttpGet(int port, const std::string& path) {
  return HttpRequest(port, "GET", path);
}

}  // namespace ckpt::testing
