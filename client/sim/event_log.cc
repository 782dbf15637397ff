#include "sim/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ckpt::sim {

std::unique_ptr<EventLog> EventLog::Open(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot open event log " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<EventLog>(new EventLog(fd));
}

EventLog::~EventLog() { ::close(fd_); }

void EventLog::Append(const std::string& line) {
  std::string buffer = line;
  buffer.push_back('\n');
  const char* data = buffer.data();
  size_t left = buffer.size();
  while (left > 0) {
    const ssize_t written = ::write(fd_, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // a full disk must not stop the simulation
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace ckpt::sim
