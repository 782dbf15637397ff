#pragma once
// The lines the daemon logs, captured for one test.

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

namespace ckpt::testing {

// A ring of the last `capacity` lines logged while it lives. Construct it before the daemon
// starts: the first tap adds one fan-out sink to the default logger, whose list of sinks must not
// change while other threads log; every tap then joins and leaves that fan-out sink, which takes
// its own lock, so a tap may end while the daemon still logs.
class LogTap {
 public:
  explicit LogTap(size_t capacity = 256)
      : ring_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(capacity)) {
    FanOut().add_sink(ring_);
  }
  ~LogTap() { FanOut().remove_sink(ring_); }
  LogTap(const LogTap&) = delete;
  LogTap& operator=(const LogTap&) = delete;

  std::vector<std::string> Lines() const { return ring_->last_formatted(); }
  bool Saw(const std::string& text) const {
    for (const std::string& line : Lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  static spdlog::sinks::dist_sink_mt& FanOut() {
    static const std::shared_ptr<spdlog::sinks::dist_sink_mt> fan_out = [] {
      auto sink = std::make_shared<spdlog::sinks::dist_sink_mt>();
      spdlog::default_logger()->sinks().push_back(sink);
      return sink;
    }();
    return *fan_out;
  }

  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> ring_;
};

}  // namespace ckpt::testing
