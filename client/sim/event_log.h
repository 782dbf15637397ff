#pragma once
// The --event-log file: one line per trigger, complete and abort a simulator saw, for crash tests
// that compare what workers were told with what the daemon stored.

#include <memory>
#include <string>

namespace ckpt::sim {

// Threading: safe for concurrent use without external synchronization.
class EventLog {
 public:
  // Opens (creates) path for appending; nullptr and *error on failure.
  static std::unique_ptr<EventLog> Open(const std::string& path, std::string* error);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends line and a newline with one write(2) on an O_APPEND descriptor: lines never interleave,
  // and a line is in the kernel when this returns, so a SIGKILL right after loses nothing.
  void Append(const std::string& line);

 private:
  explicit EventLog(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace ckpt::sim
