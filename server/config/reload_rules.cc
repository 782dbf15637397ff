#include "config/reload_rules.h"

#include <functional>
#include <optional>
#include <sstream>

namespace ckpt {
namespace {

template <typename T>
std::string Text(const T& value);

template <typename T>
std::string Text(const std::optional<T>& value) {
  return value ? Text(*value) : "unset";
}

template <typename T>
std::string Text(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(value);
  } else {
    return value;
  }
}

// One restart-only key: its name and how two configs' values compare (and print).
struct RestartOnlyKey {
  const char* key;
  bool section;  // a section as a whole: no values printed
  std::function<bool(const DaemonConfig&, const DaemonConfig&)> same;
  std::function<std::string(const DaemonConfig&)> text;
};

template <typename T>
RestartOnlyKey Value(const char* key, T DaemonConfig::*field) {
  return {key, false,
          [field](const DaemonConfig& a, const DaemonConfig& b) { return a.*field == b.*field; },
          [field](const DaemonConfig& c) { return Text(c.*field); }};
}

template <typename T>
RestartOnlyKey Section(const char* key, T DaemonConfig::*field) {
  return {key, true,
          [field](const DaemonConfig& a, const DaemonConfig& b) { return a.*field == b.*field; },
          [](const DaemonConfig&) { return std::string(); }};
}

const std::vector<RestartOnlyKey>& RestartOnlyKeys() {
  static const std::vector<RestartOnlyKey> keys = {
      Value("listen", &DaemonConfig::listen),
      Value("metrics_listen", &DaemonConfig::metrics_listen),
      Value("data_dir", &DaemonConfig::data_dir),
      Value("savepoint_root", &DaemonConfig::savepoint_root),
      Value("store.backend", &DaemonConfig::store_backend),
      Value("store.writer_nice", &DaemonConfig::store_writer_nice),
      Section("store.etcd", &DaemonConfig::etcd),
      Value("advertise", &DaemonConfig::advertise),
      Value("threads", &DaemonConfig::threads),
      Value("lease_ttl_ms", &DaemonConfig::lease_ttl_ms),
      Value("heartbeat_interval_ms", &DaemonConfig::heartbeat_interval_ms),
      Value("hello_timeout_ms", &DaemonConfig::hello_timeout_ms),
      Value("shutdown_grace_ms", &DaemonConfig::shutdown_grace_ms),
      Value("start_spread_ms", &DaemonConfig::start_spread_ms),
      Value("stuck_threshold_ms", &DaemonConfig::stuck_threshold_ms),
      Value("log.format", &DaemonConfig::log_format),
      Section("tls", &DaemonConfig::tls),
      Section("limits", &DaemonConfig::limits),
      Value("insecure", &DaemonConfig::insecure),
      {"auth (on/off)", false,
       [](const DaemonConfig& a, const DaemonConfig& b) {
         return a.auth.enabled == b.auth.enabled;
       },
       [](const DaemonConfig& c) { return std::string(c.auth.enabled ? "on" : "off"); }},
  };
  return keys;
}

}  // namespace

std::vector<RestartOnlyChange> RestartOnlyChanges(const DaemonConfig& running,
                                                  const DaemonConfig& next) {
  std::vector<RestartOnlyChange> changes;
  for (const RestartOnlyKey& k : RestartOnlyKeys()) {
    if (k.same(running, next)) continue;
    changes.push_back({k.key, k.text(running), k.text(next)});
  }
  return changes;
}

std::vector<std::string> ReloadableChanges(const DaemonConfig& running, const DaemonConfig& next) {
  std::vector<std::string> changes;
  if (running.log_level != next.log_level) changes.push_back("log.level");
  if (running.metrics_per_pipeline != next.metrics_per_pipeline) {
    changes.push_back("metrics.per_pipeline");
  }
  if (running.metrics_web_view != next.metrics_web_view) changes.push_back("metrics.web_view");
  if (!(running.defaults == next.defaults)) changes.push_back("defaults");
  if (running.pipelines != next.pipelines ||
      running.pipeline_restore_from != next.pipeline_restore_from) {
    changes.push_back("pipelines");
  }
  if (running.alignment_groups != next.alignment_groups) changes.push_back("alignment_groups");
  if (!(running.admission == next.admission)) changes.push_back("admission");
  if (running.auth.enabled == next.auth.enabled && !(running.auth == next.auth)) {
    changes.push_back("auth");
  }
  return changes;
}

DaemonConfig InForceAfterReload(const DaemonConfig& running, const DaemonConfig& next) {
  DaemonConfig in_force = running;
  in_force.log_level = next.log_level;
  in_force.metrics_per_pipeline = next.metrics_per_pipeline;
  in_force.metrics_web_view = next.metrics_web_view;
  in_force.defaults = next.defaults;
  in_force.pipelines = next.pipelines;
  in_force.pipeline_restore_from = next.pipeline_restore_from;
  in_force.alignment_groups = next.alignment_groups;
  in_force.admission = next.admission;
  if (running.auth.enabled == next.auth.enabled) in_force.auth = next.auth;
  in_force.source_path = next.source_path;
  return in_force;
}

}  // namespace ckpt
