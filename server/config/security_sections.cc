#include "config/security_sections.h"

#include <algorithm>

#include "common/host_port.h"

namespace ckpt {
namespace {

constexpr std::string_view kTlsKeys[] = {"cert_file",   "key_file",           "client_ca_file",
                                         "client_auth", "refresh_interval_s", "crl_dir"};
constexpr std::string_view kAuthKeys[] = {"principals"};
constexpr std::string_view kPrincipalKeys[] = {"name", "cert_identity", "token_sha256", "role",
                                               "jobs"};
constexpr std::string_view kLimitKeys[] = {"max_pipelines",
                                           "max_tasks_per_pipeline",
                                           "max_id_length",
                                           "max_streams",
                                           "max_streams_per_peer",
                                           "max_message_bytes",
                                           "max_session_queue_bytes",
                                           "savepoint_requests_per_minute",
                                           "max_savepoints_per_pipeline",
                                           "max_admin_calls_per_peer",
                                           "max_connections",
                                           "max_connections_per_peer",
                                           "max_pending_streams_per_peer",
                                           "connection_idle_timeout_ms",
                                           "handshake_timeout_ms"};
constexpr int64_t kMaxRefreshSeconds = 24 * 3600;
// gRPC's own ceiling for one message (and far beyond any real one).
constexpr int64_t kMaxMessageBytesCeiling = int64_t{1} << 30;

MaybeYamlError ReadPath(const YamlField& field, std::string* out) {
  if (auto error = ReadString(field, out)) return error;
  if (out->empty()) return field.ValueError(field.path + " is empty");
  return std::nullopt;
}

MaybeYamlError ReadClientAuth(const YamlField& field, ClientAuth* out) {
  std::string value;
  if (auto error = ReadString(field, &value)) return error;
  for (ClientAuth mode : {ClientAuth::kNone, ClientAuth::kRequest, ClientAuth::kRequire}) {
    if (value == ClientAuthName(mode)) {
      *out = mode;
      return std::nullopt;
    }
  }
  return field.ValueError(field.path + " '" + value +
                          "' is not one of none, request, require (require = mTLS)");
}

MaybeYamlError ReadPrincipal(const YAML::Node& entry, const std::string& path,
                             PrincipalSpec* principal) {
  if (!entry.IsMap()) {
    return YamlError{entry.Mark(), path + " must be a map of keys, got " + DescribeNode(entry)};
  }
  bool has_role = false;
  auto visit = [&](const YamlField& f) -> MaybeYamlError {
    if (f.name == "name") return ReadString(f, &principal->name);
    if (f.name == "cert_identity") return ReadString(f, &principal->cert_identity);
    if (f.name == "token_sha256") return ReadString(f, &principal->token_sha256);
    if (f.name == "jobs") return ReadStringList(f, &principal->jobs);
    std::string role;
    if (auto error = ReadString(f, &role)) return error;
    auto parsed = ParseRole(role);
    if (!parsed)
      return f.ValueError(f.path + " '" + role + "' is not one of admin, viewer, worker");
    principal->role = *parsed;
    has_role = true;
    return std::nullopt;
  };
  if (auto error = ForEachField(entry, path, kPrincipalKeys, visit)) return error;
  if (!has_role) return YamlError{entry.Mark(), path + ": missing required key 'role'"};
  return std::nullopt;
}

}  // namespace

MaybeYamlError ReadTlsSection(const YamlField& field, TlsSettings* tls) {
  tls->enabled = true;
  auto visit = [tls](const YamlField& f) -> MaybeYamlError {
    if (f.name == "cert_file") return ReadPath(f, &tls->cert_file);
    if (f.name == "key_file") return ReadPath(f, &tls->key_file);
    if (f.name == "client_ca_file") return ReadPath(f, &tls->client_ca_file);
    if (f.name == "crl_dir") return ReadPath(f, &tls->crl_dir);
    if (f.name == "client_auth") return ReadClientAuth(f, &tls->client_auth);
    return ReadInt(f, 1, kMaxRefreshSeconds, &tls->refresh_interval_s);
  };
  if (auto error = ForEachField(field.value, field.path, kTlsKeys, visit)) return error;
  const YAML::Mark mark = field.key.Mark();
  if (tls->cert_file.empty()) return YamlError{mark, "tls: missing required key 'cert_file'"};
  if (tls->key_file.empty()) return YamlError{mark, "tls: missing required key 'key_file'"};
  if (tls->client_auth != ClientAuth::kNone && tls->client_ca_file.empty()) {
    return YamlError{mark, std::string("tls: client_auth ") + ClientAuthName(tls->client_auth) +
                               " needs client_ca_file, the CA that signs client certificates"};
  }
  if (!tls->crl_dir.empty() && tls->client_auth == ClientAuth::kNone) {
    return YamlError{mark,
                     "tls: crl_dir revokes client certificates, which client_auth none "
                     "never asks for"};
  }
  return std::nullopt;
}

MaybeYamlError ReadAuthSection(const YamlField& field, AuthSpec* auth) {
  auth->enabled = true;
  auto visit = [auth](const YamlField& f) -> MaybeYamlError {
    const YAML::Node& list = f.value;
    if (list.IsNull()) return std::nullopt;
    if (!list.IsSequence()) {
      return f.ValueError(f.path + ": expected a list of principals, got " + DescribeNode(list));
    }
    size_t index = 0;
    for (auto it = list.begin(); it != list.end(); ++it, ++index) {
      PrincipalSpec principal;
      const std::string path = f.path + "[" + std::to_string(index) + "]";
      if (auto error = ReadPrincipal(*it, path, &principal)) return error;
      auth->principals.push_back(std::move(principal));
    }
    return std::nullopt;
  };
  if (auto error = ForEachField(field.value, field.path, kAuthKeys, visit)) return error;
  if (Status s = ValidateAuthSpec(*auth, "auth"); !s.ok()) {
    return YamlError{field.key.Mark(), s.message()};
  }
  return std::nullopt;
}

MaybeYamlError ReadLimitsSection(const YamlField& field, Limits* limits) {
  auto visit = [limits](const YamlField& f) -> MaybeYamlError {
    if (f.name == "max_pipelines") return ReadInt(f, 1, int64_t{1} << 40, &limits->max_pipelines);
    if (f.name == "max_tasks_per_pipeline") {
      return ReadInt(f, 1, kMaxTasksPerPipeline, &limits->max_tasks_per_pipeline);
    }
    if (f.name == "max_id_length") return ReadInt(f, 1, kMaxIdBytes, &limits->max_id_length);
    if (f.name == "max_streams") return ReadInt(f, 1, int64_t{1} << 40, &limits->max_streams);
    if (f.name == "max_streams_per_peer") {
      return ReadInt(f, 1, int64_t{1} << 40, &limits->max_streams_per_peer);
    }
    if (f.name == "max_message_bytes") {
      // A hello of 100,000 short task ids is about a megabyte: below 64 KiB nothing works.
      return ReadInt(f, 64 << 10, kMaxMessageBytesCeiling, &limits->max_message_bytes);
    }
    if (f.name == "max_session_queue_bytes") {
      return ReadInt(f, 64 << 10, kMaxMessageBytesCeiling, &limits->max_session_queue_bytes);
    }
    if (f.name == "max_savepoints_per_pipeline") {
      return ReadInt(f, 1, 100000, &limits->max_savepoints_per_pipeline);
    }
    if (f.name == "max_admin_calls_per_peer") {
      return ReadInt(f, 1, 1000000, &limits->max_admin_calls_per_peer);
    }
    if (f.name == "max_connections") {
      return ReadInt(f, 1, int64_t{1} << 24, &limits->max_connections);
    }
    if (f.name == "max_connections_per_peer") {
      return ReadInt(f, 1, int64_t{1} << 24, &limits->max_connections_per_peer);
    }
    if (f.name == "max_pending_streams_per_peer") {
      return ReadInt(f, 1, int64_t{1} << 24, &limits->max_pending_streams_per_peer);
    }
    if (f.name == "connection_idle_timeout_ms") {
      // At least a second (a smaller one would cut connections between a worker's heartbeats),
      // at most a day.
      return ReadInt(f, 1000, 86400000, &limits->connection_idle_timeout_ms);
    }
    if (f.name == "handshake_timeout_ms") {
      return ReadInt(f, 100, 600000, &limits->handshake_timeout_ms);
    }
    return ReadInt(f, 0, 1000000, &limits->savepoint_requests_per_minute);
  };
  return ForEachField(field.value, field.path, kLimitKeys, visit);
}

std::string ExposureProblem(const std::string& listen, const TlsSettings& tls, const AuthSpec& auth,
                            bool insecure) {
  auto parsed = ParseHostPort(listen);
  if (!parsed.ok() || IsLoopbackHost(parsed->host) || insecure) return "";
  std::vector<std::string> missing;
  if (!tls.enabled) missing.push_back("tls");
  if (!auth.enabled) missing.push_back("auth");
  if (missing.empty()) return "";
  std::string keys = missing.size() == 2 ? "'tls' and 'auth'" : "'" + missing[0] + "'";
  return "listen " + listen + " is reachable from other machines: it needs " + keys +
         " (see docs/SECURITY.md), or 'insecure: true' to serve without them anyway";
}

}  // namespace ckpt
