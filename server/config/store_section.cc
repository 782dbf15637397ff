#include "config/store_section.h"

#include <string_view>

#include "common/host_port.h"

namespace ckpt {
namespace {

constexpr std::string_view kStoreKeys[] = {"backend", "writer_nice", "etcd"};
constexpr std::string_view kEtcdKeys[] = {
    "endpoints",   "prefix", "election_ttl_ms", "dial_timeout_ms", "request_timeout_ms",
    "max_txn_ops", "tls"};
constexpr std::string_view kEtcdTlsKeys[] = {"ca_file", "cert_file", "key_file"};
constexpr std::string_view kBackends[] = {kSqliteBackend, kEtcdBackend};

// etcd's keys are bytes, but the prefix is written in logs and by operators with etcdctl: plain
// printable ASCII, starting with '/', not ending with one (the layout adds its own).
std::string CheckPrefix(const std::string& prefix) {
  if (prefix.size() < 2 || prefix.front() != '/' || prefix.back() == '/') {
    return "must start with '/', name something, and not end with '/' (e.g. /ckptd)";
  }
  if (prefix.size() > 256) return "is longer than 256 bytes";
  for (char c : prefix) {
    if (c <= ' ' || c > '~') return "may hold only printable ASCII without spaces";
  }
  return "";
}

// http://HOST:PORT or https://HOST:PORT, nothing after the port.
std::string CheckEndpoint(const std::string& url, bool tls) {
  const std::string scheme = tls ? "https://" : "http://";
  if (url.rfind(scheme, 0) != 0) {
    return "'" + url + "' must start with " + scheme +
           (tls ? " (store.etcd.tls is set)" : " (https:// needs store.etcd.tls)");
  }
  auto parsed = ParseHostPort(url.substr(scheme.size()));
  if (!parsed.ok()) return "'" + url + "': " + parsed.status().message();
  return "";
}

MaybeYamlError ReadFile(const YamlField& f, std::string* out) {
  if (auto error = ReadString(f, out)) return error;
  if (out->empty()) return f.ValueError(f.path + " is empty");
  return std::nullopt;
}

MaybeYamlError ReadEtcdSection(const YamlField& field, EtcdSettings* etcd) {
  std::optional<YamlField> endpoints;
  auto visit = [&](const YamlField& f) -> MaybeYamlError {
    if (f.name == "endpoints") {
      endpoints = f;
      return ReadStringList(f, &etcd->endpoints);
    }
    if (f.name == "prefix") {
      if (auto error = ReadString(f, &etcd->prefix)) return error;
      if (std::string why = CheckPrefix(etcd->prefix); !why.empty()) {
        return f.ValueError(f.path + " " + why);
      }
      return std::nullopt;
    }
    // etcd's leases have a 2 s floor; an hour is far past any sane takeover time.
    if (f.name == "election_ttl_ms") return ReadInt(f, 2000, 3600000, &etcd->election_ttl_ms);
    if (f.name == "dial_timeout_ms") return ReadInt(f, 100, 600000, &etcd->dial_timeout_ms);
    if (f.name == "request_timeout_ms") return ReadInt(f, 100, 600000, &etcd->request_timeout_ms);
    // etcd's default is the floor (a commit's trims and a group round are sized to fit it); past
    // 10,000 a transaction is bound by its bytes (about 1 MiB) long before its operations.
    if (f.name == "max_txn_ops") return ReadInt(f, 128, 10000, &etcd->max_txn_ops);
    etcd->tls.enabled = true;
    auto tls_visit = [&](const YamlField& t) -> MaybeYamlError {
      if (t.name == "ca_file") return ReadFile(t, &etcd->tls.ca_file);
      if (t.name == "cert_file") return ReadFile(t, &etcd->tls.cert_file);
      return ReadFile(t, &etcd->tls.key_file);
    };
    if (auto error = ForEachField(f.value, f.path, kEtcdTlsKeys, tls_visit)) return error;
    if (etcd->tls.cert_file.empty() != etcd->tls.key_file.empty()) {
      return YamlError{f.key.Mark(), f.path + ": cert_file and key_file go together"};
    }
    return std::nullopt;
  };
  if (auto error = ForEachField(field.value, field.path, kEtcdKeys, visit)) return error;
  if (etcd->endpoints.empty()) {
    return YamlError{field.key.Mark(), field.path + ": missing required key 'endpoints'"};
  }
  for (const std::string& url : etcd->endpoints) {
    if (std::string why = CheckEndpoint(url, etcd->tls.enabled); !why.empty()) {
      return endpoints->ValueError(endpoints->path + ": " + why);
    }
  }
  return std::nullopt;
}

}  // namespace

MaybeYamlError ReadStoreSection(const YamlField& field, std::string* backend, int* writer_nice,
                                EtcdSettings* etcd) {
  std::optional<YamlField> etcd_field;
  std::optional<YamlField> backend_field;
  auto visit = [&](const YamlField& f) -> MaybeYamlError {
    if (f.name == "etcd") {
      etcd_field = f;
      return ReadEtcdSection(f, etcd);
    }
    if (f.name == "writer_nice") return ReadIntAs(f, writer_nice, -20, 19);
    backend_field = f;
    std::string value;
    if (auto error = ReadString(f, &value)) return error;
    for (std::string_view known : kBackends) {
      if (value == known) {
        *backend = value;
        return std::nullopt;
      }
    }
    return f.ValueError(f.path + " '" + value + "' is not one of sqlite, etcd");
  };
  if (auto error = ForEachField(field.value, field.path, kStoreKeys, visit)) return error;
  if (*backend == kEtcdBackend && !etcd_field) {
    return YamlError{field.key.Mark(),
                     "store.backend etcd needs a store.etcd section with its endpoints"};
  }
  if (*backend != kEtcdBackend && etcd_field) {
    return YamlError{etcd_field->key.Mark(), "store.etcd is set but store.backend is " + *backend +
                                                 "; set store.backend: etcd to use it"};
  }
  return std::nullopt;
}

std::string CheckAdvertise(const std::string& backend, const std::string& advertise) {
  if (backend != kEtcdBackend) return "";
  if (advertise.empty()) {
    return "store.backend etcd needs `advertise: HOST:PORT`, the address standbys send clients "
           "to when this daemon leads";
  }
  return "";
}

}  // namespace ckpt
