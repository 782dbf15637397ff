#pragma once
// The config's `store` section: the backend and, for etcd, its `store.etcd` settings; and the
// top-level `advertise` address that goes with the etcd backend.

#include <string>

#include "config/etcd_settings.h"
#include "config/yaml_walk.h"

namespace ckpt {

inline constexpr const char* kSqliteBackend = "sqlite";
inline constexpr const char* kEtcdBackend = "etcd";

// Reads `store { backend, writer_nice, etcd {...} }`. A backend of etcd needs
// store.etcd.endpoints; an etcd section with the sqlite backend is refused (it would be ignored,
// which hides a mistake). writer_nice: -20..19.
MaybeYamlError ReadStoreSection(const YamlField& field, std::string* backend, int* writer_nice,
                                EtcdSettings* etcd);

// The rule between the keys, checked once the whole file is read: with the etcd backend,
// `advertise` must be set (clients are sent there by standbys). "" when fine, else the reason.
std::string CheckAdvertise(const std::string& backend, const std::string& advertise);

}  // namespace ckpt
