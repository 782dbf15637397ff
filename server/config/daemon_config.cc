// The daemon's YAML config (docs/CONFIGURATION.md): ConfigReader walks the document once, key by
// key, and every error names its file, line and column. One reader over one document: the
// sections' rules need each other (the pipelines take the defaults; exposure checks read the
// listeners and the security section), so they stay in one pass. Sections with rules of their own
// are apart: security_sections.cc, store_section.cc, the walk itself in yaml_walk.cc.
#include "config/daemon_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>

#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "common/host_port.h"
#include "config/reload_rules.h"
#include "config/security_sections.h"
#include "config/store_section.h"
#include "config/yaml_walk.h"
#include "core/spec_validation.h"

namespace ckpt {
namespace {

constexpr std::string_view kTopLevelKeys[] = {"listen",
                                              "metrics_listen",
                                              "metrics",
                                              "data_dir",
                                              "savepoint_root",
                                              "store",
                                              "threads",
                                              "lease_ttl_ms",
                                              "heartbeat_interval_ms",
                                              "hello_timeout_ms",
                                              "shutdown_grace_ms",
                                              "start_spread_ms",
                                              "stuck_threshold_ms",
                                              "log",
                                              "defaults",
                                              "pipelines",
                                              "alignment_groups",
                                              "tls",
                                              "auth",
                                              "limits",
                                              "admission",
                                              "insecure",
                                              "advertise"};
constexpr std::string_view kLogKeys[] = {"level", "format"};
constexpr std::string_view kMetricsKeys[] = {"per_pipeline", "web_view"};
constexpr std::string_view kAdmissionKeys[] = {"max_concurrent_rounds", "max_inflight_bytes"};
// The keys PipelineDefaults and PipelineSpec share: `defaults` may set exactly what a pipeline may.
constexpr std::string_view kPolicyKeys[] = {"interval_ms", "timeout_ms", "min_pause_ms",
                                            "tolerable_failures", "retained"};
// position_interval and commit_timeout_ms are a pipeline's own (or its group's): no daemon-wide
// default.
constexpr std::string_view kPipelineKeys[] = {"job_id",
                                              "pipeline_id",
                                              "task_ids",
                                              "parallelism",
                                              "interval_ms",
                                              "timeout_ms",
                                              "min_pause_ms",
                                              "tolerable_failures",
                                              "retained",
                                              "restore_from",
                                              "position_interval",
                                              "alignment_group",
                                              "commit_timeout_ms",
                                              "max_overhead",
                                              "max_interval_ms"};
constexpr std::string_view kGroupKeys[] = {"name",         "interval_ms",       "timeout_ms",
                                           "min_pause_ms", "position_interval", "commit_timeout_ms",
                                           "max_overhead", "max_interval_ms"};
// pipelines[].restore_from: the fields of CreatePipeline's restore_from.
constexpr std::string_view kRestoreFromKeys[] = {"job_id", "pipeline_id", "checkpoint_id"};
// spdlog's level names.
constexpr std::string_view kLogLevels[] = {"trace", "debug",    "info", "warn",
                                           "error", "critical", "off"};
constexpr std::string_view kLogFormats[] = {"text", "json"};
constexpr int kMaxThreads = 256;

std::string JoinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// Reads one policy key into a PipelineDefaults or a PipelineSpec (same member names). Only the type
// is checked here: ValidateSpec judges the values, so the file and the admin API share one set of
// rules.
template <typename Policy>
MaybeYamlError ReadPolicyField(const YamlField& field, Policy* target) {
  if (field.name == "interval_ms") return ReadIntAs(field, &target->interval_ms);
  if (field.name == "timeout_ms") return ReadIntAs(field, &target->timeout_ms);
  if (field.name == "min_pause_ms") return ReadIntAs(field, &target->min_pause_ms);
  if (field.name == "tolerable_failures") return ReadIntAs(field, &target->tolerable_failures);
  if (field.name == "retained") return ReadIntAs(field, &target->retained);
  return field.ValueError("internal: no reader for key '" + field.name + "'");
}

PipelineSpec SpecFromDefaults(const PipelineDefaults& defaults) {
  PipelineSpec spec;
  spec.interval_ms = defaults.interval_ms;
  spec.timeout_ms = defaults.timeout_ms;
  spec.min_pause_ms = defaults.min_pause_ms;
  spec.tolerable_failures = defaults.tolerable_failures;
  spec.retained = defaults.retained;
  return spec;
}

// `parallelism: N` names the tasks "0" .. "N-1", as `ckptctl pipeline create --parallelism` does.
MaybeYamlError ReadParallelism(const YamlField& field, std::vector<std::string>* task_ids) {
  int64_t count = 0;
  if (auto error = ReadInt(field, 1, kMaxTasksPerPipeline, &count)) return error;
  task_ids->clear();
  for (int64_t i = 0; i < count; ++i) task_ids->push_back(std::to_string(i));
  return std::nullopt;
}

// The reason `address` is not HOST:PORT, or nothing.
std::optional<std::string> CheckHostPort(const std::string& address) {
  auto parsed = ParseHostPort(address);
  if (parsed.ok()) return std::nullopt;
  return parsed.status().message();
}

// Reads the YAML tree into a DaemonConfig, stopping at the first problem.
class ConfigReader {
 public:
  MaybeYamlError Read(const YAML::Node& root);
  DaemonConfig Take() { return std::move(config_); }

 private:
  MaybeYamlError ReadTopLevelField(const YamlField& field);
  MaybeYamlError ReadAddress(const YamlField& field, std::string* out);
  MaybeYamlError ReadDataDir(const YamlField& field);
  MaybeYamlError ReadChoice(const YamlField& field, std::span<const std::string_view> choices,
                            std::string* out);
  MaybeYamlError ReadDefaults(const YamlField& field);
  MaybeYamlError ReadPipelines(const YamlField& field);
  MaybeYamlError ReadAlignmentGroups(const YamlField& field);
  MaybeYamlError ReadPipeline(const YAML::Node& entry, const std::string& path, PipelineSpec* spec,
                              std::optional<CheckpointRef>* restore_from);
  MaybeYamlError CheckHeartbeat() const;
  MaybeYamlError CheckExposure() const;

  DaemonConfig config_;
  // Read after the walk, because pipelines inherit from `defaults` wherever it sits in the file.
  std::optional<YamlField> defaults_;
  std::optional<YamlField> pipelines_;
  std::optional<YamlField> alignment_groups_;
  // Remembered to point at whichever the file set when the two disagree.
  std::optional<YamlField> lease_;
  std::optional<YamlField> heartbeat_;
  std::optional<YamlField> listen_;
  std::optional<YamlField> store_;
};

MaybeYamlError ConfigReader::Read(const YAML::Node& root) {
  // An empty or comment-only file is a valid config: every default applies.
  if (root.IsNull()) return std::nullopt;
  auto visit = [this](const YamlField& field) { return ReadTopLevelField(field); };
  if (auto error = ForEachField(root, "", kTopLevelKeys, visit)) return error;
  if (defaults_) {
    if (auto error = ReadDefaults(*defaults_)) return error;
  }
  if (pipelines_) {
    if (auto error = ReadPipelines(*pipelines_)) return error;
  }
  if (alignment_groups_) {
    if (auto error = ReadAlignmentGroups(*alignment_groups_)) return error;
  }
  if (auto error = CheckHeartbeat()) return error;
  if (std::string why = CheckAdvertise(config_.store_backend, config_.advertise); !why.empty()) {
    return YamlError{store_->key.Mark(), why};
  }
  return CheckExposure();
}

MaybeYamlError ConfigReader::ReadTopLevelField(const YamlField& field) {
  const std::string& name = field.name;
  if (name == "listen") {
    listen_ = field;
    return ReadAddress(field, &config_.listen);
  }
  if (name == "tls") return ReadTlsSection(field, &config_.tls);
  if (name == "auth") return ReadAuthSection(field, &config_.auth);
  if (name == "limits") return ReadLimitsSection(field, &config_.limits);
  if (name == "admission") {
    return ForEachField(field.value, field.path, kAdmissionKeys, [this](const YamlField& f) {
      if (f.name == "max_concurrent_rounds") {
        return ReadInt(f, 0, int64_t{1} << 40, &config_.admission.max_concurrent_rounds);
      }
      return ReadInt(f, 0, int64_t{1} << 60, &config_.admission.max_inflight_bytes);
    });
  }
  if (name == "insecure") return ReadBool(field, &config_.insecure);
  if (name == "metrics_listen") {
    // "" (quoted: a bare `metrics_listen:` is more likely a mistake) turns the HTTP server off.
    if (field.value.IsScalar() && field.value.Scalar().empty()) {
      config_.metrics_listen.clear();
      return std::nullopt;
    }
    return ReadAddress(field, &config_.metrics_listen);
  }
  if (name == "metrics") {
    return ForEachField(field.value, field.path, kMetricsKeys, [this](const YamlField& f) {
      if (f.name != "web_view") return ReadBool(f, &config_.metrics_per_pipeline);
      bool on = true;
      auto error = ReadBool(f, &on);
      if (!error) config_.metrics_web_view = on;
      return error;
    });
  }
  if (name == "data_dir") return ReadDataDir(field);
  if (name == "savepoint_root") {
    if (auto error = ReadString(field, &config_.savepoint_root)) return error;
    if (auto s = ValidateSavepointTarget(config_.savepoint_root); !s.ok()) {
      return field.ValueError("savepoint_root: " + s.message());
    }
    return std::nullopt;
  }
  if (name == "threads") return ReadIntAs(field, &config_.threads, 0, kMaxThreads);
  if (name == "shutdown_grace_ms") {
    return ReadInt(field, 0, kMaxDurationMs, &config_.shutdown_grace_ms);
  }
  if (name == "stuck_threshold_ms") {
    return ReadInt(field, 0, kMaxDurationMs, &config_.stuck_threshold_ms);
  }
  if (name == "start_spread_ms") {
    int64_t spread = 0;
    if (auto error = ReadInt(field, 0, kMaxDurationMs, &spread)) return error;
    config_.start_spread_ms = spread;
    return std::nullopt;
  }
  if (name == "lease_ttl_ms") {
    lease_ = field;
    return ReadInt(field, 1, kMaxDurationMs, &config_.lease_ttl_ms);
  }
  if (name == "heartbeat_interval_ms") {
    heartbeat_ = field;
    return ReadInt(field, 1, kMaxDurationMs, &config_.heartbeat_interval_ms);
  }
  if (name == "hello_timeout_ms") {
    return ReadInt(field, 1, kMaxDurationMs, &config_.hello_timeout_ms);
  }
  if (name == "store") {
    store_ = field;
    return ReadStoreSection(field, &config_.store_backend, &config_.store_writer_nice,
                            &config_.etcd);
  }
  if (name == "advertise") {
    // Standbys send clients here in a gRPC trailer: a header value, dialable by any client.
    if (auto error = ReadString(field, &config_.advertise)) return error;
    if (Status s = CheckLeaderAddress(config_.advertise); !s.ok()) {
      return field.ValueError(field.path + ": " + s.message());
    }
    return std::nullopt;
  }
  if (name == "log") {
    return ForEachField(field.value, field.path, kLogKeys, [this](const YamlField& f) {
      if (f.name == "format") return ReadChoice(f, kLogFormats, &config_.log_format);
      return ReadChoice(f, kLogLevels, &config_.log_level);
    });
  }
  if (name == "alignment_groups") {
    alignment_groups_ = field;
  } else {
    (name == "defaults" ? defaults_ : pipelines_) = field;
  }
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadAddress(const YamlField& field, std::string* out) {
  if (auto error = ReadString(field, out)) return error;
  if (auto reason = CheckHostPort(*out)) return field.ValueError(field.path + ": " + *reason);
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadDataDir(const YamlField& field) {
  if (auto error = ReadString(field, &config_.data_dir)) return error;
  if (config_.data_dir.empty()) return field.ValueError("data_dir is empty");
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadChoice(const YamlField& field,
                                        std::span<const std::string_view> choices,
                                        std::string* out) {
  std::string value;
  if (auto error = ReadString(field, &value)) return error;
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
    *out = value;
    return std::nullopt;
  }
  std::string reason = field.path + " '" + value + "' is not one of " + JoinNames(choices);
  if (std::string guess = ClosestMatch(value, choices); !guess.empty()) {
    reason += "; did you mean '" + guess + "'?";
  }
  return field.ValueError(reason);
}

MaybeYamlError ConfigReader::ReadDefaults(const YamlField& field) {
  PipelineDefaults& defaults = config_.defaults;
  auto visit = [&defaults](const YamlField& f) { return ReadPolicyField(f, &defaults); };
  if (auto error = ForEachField(field.value, field.path, kPolicyKeys, visit)) return error;
  // Held to the pipeline rules with stand-in ids, so a bad default is reported once, here, rather
  // than at every pipeline that inherits it (or not at all when no pipeline is declared).
  PipelineSpec probe = SpecFromDefaults(defaults);
  probe.key = {"defaults", "defaults"};
  probe.task_ids = {"0"};
  if (Status status = ValidateSpec(probe); !status.ok()) {
    return field.ValueError("defaults: " + status.message());
  }
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadPipelines(const YamlField& field) {
  const YAML::Node& list = field.value;
  if (list.IsNull()) return std::nullopt;
  if (!list.IsSequence()) {
    return field.ValueError("pipelines: expected a list of pipelines, got " + DescribeNode(list));
  }
  std::map<PipelineKey, std::string> declared;  // key -> path of its first entry
  size_t index = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++index) {
    const YAML::Node entry = *it;
    const std::string path = "pipelines[" + std::to_string(index) + "]";
    if (entry.IsNull()) {
      // A bare "-" has the next token's mark; the list's own is the closest honest position.
      return YamlError{list.Mark(), path + " is empty; expected a map of keys"};
    }
    PipelineSpec spec;
    std::optional<CheckpointRef> restore_from;
    if (auto error = ReadPipeline(entry, path, &spec, &restore_from)) return error;
    if (auto [first, inserted] = declared.emplace(spec.key, path); !inserted) {
      return YamlError{entry.Mark(), path + ": duplicate pipeline " + spec.key.ToString() +
                                         ", already declared in " + first->second};
    }
    if (restore_from) config_.pipeline_restore_from[spec.key] = *restore_from;
    config_.pipelines.push_back(std::move(spec));
  }
  if (static_cast<int64_t>(config_.pipelines.size()) > config_.limits.max_pipelines) {
    return field.ValueError("pipelines: " + std::to_string(config_.pipelines.size()) +
                            " declared, more than " +
                            NameLimit("max_pipelines", config_.limits.max_pipelines));
  }
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadAlignmentGroups(const YamlField& field) {
  const YAML::Node& list = field.value;
  if (list.IsNull()) return std::nullopt;
  if (!list.IsSequence()) {
    return field.ValueError("alignment_groups: expected a list of groups, got " +
                            DescribeNode(list));
  }
  std::map<std::string, std::string> declared;  // name -> path of its first entry
  size_t index = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++index) {
    const YAML::Node entry = *it;
    const std::string path = "alignment_groups[" + std::to_string(index) + "]";
    if (!entry.IsMap()) return YamlError{entry.Mark(), path + ": expected a map of keys"};
    AlignmentGroupSpec spec;
    spec.interval_ms = config_.defaults.interval_ms;
    spec.timeout_ms = config_.defaults.timeout_ms;
    spec.min_pause_ms = config_.defaults.min_pause_ms;
    bool has_name = false;
    auto visit = [&](const YamlField& f) -> MaybeYamlError {
      if (f.name == "name") {
        has_name = true;
        return ReadString(f, &spec.name);
      }
      if (f.name == "interval_ms") return ReadIntAs(f, &spec.interval_ms);
      if (f.name == "timeout_ms") return ReadIntAs(f, &spec.timeout_ms);
      if (f.name == "min_pause_ms") return ReadIntAs(f, &spec.min_pause_ms);
      if (f.name == "commit_timeout_ms") return ReadIntAs(f, &spec.commit_timeout_ms);
      if (f.name == "max_overhead") return ReadFraction(f, 0, 1, &spec.max_overhead);
      if (f.name == "max_interval_ms") return ReadIntAs(f, &spec.max_interval_ms);
      return ReadIntAs(f, &spec.position_interval);
    };
    if (auto error = ForEachField(entry, path, kGroupKeys, visit)) return error;
    if (!has_name) return YamlError{entry.Mark(), path + ": missing required key 'name'"};
    if (Status s = ValidateGroupSpec(spec); !s.ok()) {
      return YamlError{entry.Mark(), path + ": " + s.message()};
    }
    if (Status s = CheckIdLength(spec.name, "name", config_.limits); !s.ok()) {
      return YamlError{entry.Mark(), path + ": " + s.message()};
    }
    if (auto [first, inserted] = declared.emplace(spec.name, path); !inserted) {
      return YamlError{entry.Mark(), path + ": duplicate alignment group " + spec.name +
                                         ", already declared in " + first->second};
    }
    config_.alignment_groups.push_back(std::move(spec));
  }
  return std::nullopt;
}

// pipelines[].restore_from: {job_id, pipeline_id, checkpoint_id (0 or absent: the newest)}.
MaybeYamlError ReadRestoreFrom(const YamlField& field, CheckpointRef* ref) {
  if (!field.value.IsMap()) {
    return field.ValueError(field.path +
                            ": expected a map of job_id, pipeline_id and "
                            "checkpoint_id, got " +
                            DescribeNode(field.value));
  }
  auto visit = [ref](const YamlField& f) -> MaybeYamlError {
    if (f.name == "checkpoint_id") {
      return ReadInt(f, 0, std::numeric_limits<int64_t>::max(), &ref->checkpoint_id);
    }
    std::string* id = f.name == "job_id" ? &ref->key.job_id : &ref->key.pipeline_id;
    if (auto error = ReadString(f, id)) return error;
    if (Status s = ValidatePathId(*id, f.path); !s.ok()) return f.ValueError(s.message());
    return std::nullopt;
  };
  if (auto error = ForEachField(field.value, field.path, kRestoreFromKeys, visit)) return error;
  if (ref->key.job_id.empty() || ref->key.pipeline_id.empty()) {
    return field.ValueError(field.path + ": needs job_id and pipeline_id");
  }
  return std::nullopt;
}

MaybeYamlError ConfigReader::ReadPipeline(const YAML::Node& entry, const std::string& path,
                                          PipelineSpec* spec,
                                          std::optional<CheckpointRef>* restore_from) {
  if (!entry.IsMap()) {
    return YamlError{entry.Mark(), path + " must be a map of keys, got " + DescribeNode(entry)};
  }
  *spec = SpecFromDefaults(config_.defaults);
  bool has_job_id = false;
  bool has_pipeline_id = false;
  bool has_tasks = false;
  auto visit = [&](const YamlField& field) -> MaybeYamlError {
    if (field.name == "job_id") {
      has_job_id = true;
      return ReadString(field, &spec->key.job_id);
    }
    if (field.name == "pipeline_id") {
      has_pipeline_id = true;
      return ReadString(field, &spec->key.pipeline_id);
    }
    if (field.name == "task_ids" || field.name == "parallelism") {
      if (has_tasks) {
        return YamlError{field.key.Mark(), path + ": give task_ids or parallelism, not both"};
      }
      has_tasks = true;
      return field.name == "task_ids" ? ReadStringList(field, &spec->task_ids)
                                      : ReadParallelism(field, &spec->task_ids);
    }
    if (field.name == "position_interval") return ReadIntAs(field, &spec->position_interval);
    if (field.name == "commit_timeout_ms") return ReadIntAs(field, &spec->commit_timeout_ms);
    if (field.name == "max_overhead") return ReadFraction(field, 0, 1, &spec->max_overhead);
    if (field.name == "max_interval_ms") return ReadIntAs(field, &spec->max_interval_ms);
    if (field.name == "alignment_group") return ReadString(field, &spec->alignment_group);
    if (field.name == "restore_from") {
      CheckpointRef ref;
      if (auto error = ReadRestoreFrom(field, &ref)) return error;
      *restore_from = std::move(ref);
      return std::nullopt;
    }
    return ReadPolicyField(field, spec);
  };
  if (auto error = ForEachField(entry, path, kPipelineKeys, visit)) return error;
  // A missing key has no position in yaml-cpp: point at the entry that lacks it.
  if (!has_job_id) return YamlError{entry.Mark(), path + ": missing required key 'job_id'"};
  if (!has_pipeline_id) {
    return YamlError{entry.Mark(), path + ": missing required key 'pipeline_id'"};
  }
  if (!has_tasks) {
    return YamlError{entry.Mark(), path + ": missing required key 'task_ids' or 'parallelism'"};
  }
  if (Status status = ValidateSpec(*spec); !status.ok()) {
    return YamlError{entry.Mark(), path + ": " + status.message()};
  }
  if (Status status = CheckSpecLimits(*spec, config_.limits); !status.ok()) {
    return YamlError{entry.Mark(), path + ": " + status.message()};
  }
  if (*restore_from && (*restore_from)->key == spec->key) {
    return YamlError{entry.Mark(), path +
                                       ".restore_from: names the pipeline itself (a new "
                                       "pipeline has no checkpoint; name another one)"};
  }
  return std::nullopt;
}

MaybeYamlError ConfigReader::CheckHeartbeat() const {
  if (config_.heartbeat_interval_ms < config_.lease_ttl_ms) return std::nullopt;
  // The defaults agree, so the file set at least one of them; blame the heartbeat if it is there.
  const YamlField& culprit = heartbeat_ ? *heartbeat_ : *lease_;
  return culprit.ValueError(
      "heartbeat_interval_ms (" + std::to_string(config_.heartbeat_interval_ms) +
      ") must be less than lease_ttl_ms (" + std::to_string(config_.lease_ttl_ms) + ")");
}

MaybeYamlError ConfigReader::CheckExposure() const {
  const std::string problem =
      ExposureProblem(config_.listen, config_.tls, config_.auth, config_.insecure);
  if (problem.empty()) return std::nullopt;
  // The defaults are loopback, so the file set listen.
  return listen_->ValueError(problem);
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text,
                                       const std::string& source_name) {
  // yaml-cpp reports syntax errors (and too-deep nesting) by exception; they end here.
  try {
    YAML::Node root;
    ConfigReader reader;
    MaybeYamlError error = LoadSingleDocument(yaml_text, &root);
    if (!error) error = reader.Read(root);
    if (error) return Status::InvalidArgument(FormatYamlError(source_name, *error));
    return reader.Take();
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(FormatYamlError(source_name, {e.mark, e.msg}));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(source_name + ": " + e.what());
  } catch (...) {
    return Status::InvalidArgument(source_name + ": unexpected error while reading the config");
  }
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  // Non-blocking: a FIFO (or a device) put where the file was must not hang whoever reads it,
  // the signal thread at SIGHUP least of all. Only a regular file of bounded size is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string reason = path + ": cannot open: " + std::strerror(error);
    return error == ENOENT ? Status::NotFound(reason) : Status::InvalidArgument(reason);
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::InvalidArgument(path + ": cannot inspect: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(path + ": is a directory, not a config file");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path +
                                   ": is not a regular file (a FIFO, a device?); the "
                                   "config must be a plain file");
  }
  const auto too_big = [&path] {
    return Status::InvalidArgument(path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                   " MiB; that is no config file");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) return too_big();
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::InvalidArgument(path + ": read error: " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) return too_big();  // it grew while being read
  }
  auto config = ParseDaemonConfig(text, path);
  if (config.ok()) config->source_path = path;
  return config;
}

std::span<const std::string_view> TopLevelConfigKeys() { return kTopLevelKeys; }

bool WebViewOn(const DaemonConfig& config) {
  if (config.metrics_web_view) return *config.metrics_web_view;
  auto http = ParseHostPort(config.metrics_listen);
  return http.ok() && IsLoopbackHost(http->host) && !config.auth.enabled;
}

}  // namespace ckpt
