#include "rpc/grpc_log_bridge.h"

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string_view>

#include "common/mutex.h"
#include "logging/log_throttle.h"

namespace ckpt {

namespace {

std::atomic<uint64_t> tls_handshake_failures{0};

// Handshake failures, by reason (the message, which names no peer): each logged at most once
// per 10 s. A bounded number of reasons is tracked; beyond it they share one throttle.
class HandshakeLog {
 public:
  // Whether to log this one now; `*held_back` the lines of its reason held back since.
  bool Allow(const std::string& reason, uint64_t* held_back) {
    MutexLock lock(mu_);
    auto it = by_reason_.find(reason);
    if (it == by_reason_.end()) {
      if (by_reason_.size() >= kMaxReasons) {
        it = by_reason_.find("");
        if (it == by_reason_.end()) it = by_reason_.emplace("", LogThrottle(kInterval)).first;
      } else {
        it = by_reason_.emplace(reason, LogThrottle(kInterval)).first;
      }
    }
    return it->second.Allow(std::chrono::steady_clock::now(), held_back);
  }

 private:
  static constexpr size_t kMaxReasons = 64;
  static constexpr std::chrono::seconds kInterval{10};
  Mutex mu_;
  std::map<std::string, LogThrottle> by_reason_ CKPT_GUARDED_BY(mu_);
};

bool IsHandshakeFailure(const char* file, const std::string& message) {
  const std::string_view source = file ? file : "";
  return message.rfind("Handshake failed", 0) == 0 ||
         (source.find("ssl_transport_security") != std::string_view::npos &&
          message.find("andshake") != std::string::npos);
}

void LogThroughSpdlog(gpr_log_func_args* args) {
  LogGrpcLine(static_cast<int>(args->severity), args->file, args->line,
              args->message ? args->message : "");
}

// Protobuf logs, among others, a string field that is not valid UTF-8 when it refuses to parse a
// message (a client's bytes): without this it prints raw lines to stderr, outside the log format.
// A client sending such messages in a loop gets one line per 10 s, with the count held back.
void LogProtobufThroughSpdlog(google::protobuf::LogLevel level, const char* file, int line,
                              const std::string& message) {
  static Mutex mu;
  static LogThrottle throttle CKPT_GUARDED_BY(mu){std::chrono::seconds(10)};
  uint64_t held_back = 0;
  {
    MutexLock lock(mu);
    if (!throttle.Allow(std::chrono::steady_clock::now(), &held_back)) return;
  }
  spdlog::level::level_enum spd = spdlog::level::err;
  if (level == google::protobuf::LOGLEVEL_INFO) spd = spdlog::level::info;
  if (level == google::protobuf::LOGLEVEL_WARNING) spd = spdlog::level::warn;
  spdlog::log(spd, "protobuf: {} ({}:{}){}", message, file ? file : "?", line,
              held_back ? " (" + std::to_string(held_back) + " more such lines held back)" : "");
}

}  // namespace

bool LogGrpcLine(int severity, const char* file, int line, const std::string& message) {
  spdlog::level::level_enum level = spdlog::level::err;
  if (severity == GPR_LOG_SEVERITY_DEBUG) level = spdlog::level::debug;
  if (severity == GPR_LOG_SEVERITY_INFO) level = spdlog::level::info;
  if (IsHandshakeFailure(file, message)) {
    tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
    static HandshakeLog log;
    uint64_t held_back = 0;
    if (!log.Allow(message, &held_back)) return false;
    spdlog::log(
        level == spdlog::level::err ? spdlog::level::warn : level,
        "grpc: a TLS handshake failed: {} ({}:{}){}", message, file ? file : "?", line,
        held_back ? " (" + std::to_string(held_back) + " more such since the last line)" : "");
    return true;
  }
  spdlog::log(level, "grpc: {} ({}:{})", message, file ? file : "?", line);
  return true;
}

uint64_t TlsHandshakeFailures() { return tls_handshake_failures.load(std::memory_order_relaxed); }

void RouteGrpcLogsToSpdlog() {
  gpr_set_log_function(&LogThroughSpdlog);
  google::protobuf::SetLogHandler(&LogProtobufThroughSpdlog);
}

}  // namespace ckpt
