#include "rpc/grpc_log_bridge.h"

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>
#include <spdlog/spdlog.h>

#include "common/mutex.h"
#include "logging/log_throttle.h"

namespace ckpt {

namespace {

void LogThroughSpdlog(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::err;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = spdlog::level::debug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = spdlog::level::info;
  spdlog::log(level, "grpc: {} ({}:{})", args->message ? args->message : "",
              args->file ? args->file : "?", args->line);
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

void RouteGrpcLogsToSpdlog() {
  gpr_set_log_function(&LogThroughSpdlog);
  google::protobuf::SetLogHandler(&LogProtobufThroughSpdlog);
}

}  // namespace ckpt
