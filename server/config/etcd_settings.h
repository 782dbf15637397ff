#pragma once
// The `store.etcd` section (docs/man/ckptd.yaml.5, "STORAGE"): where the etcd cluster is and how
// this daemon campaigns on it. Plain values: the etcd layer reads them, config fills them.

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct EtcdTlsSettings {
  bool enabled = false;
  std::string ca_file;    // the CA that signs the etcd members' certificates
  std::string cert_file;  // optional: this daemon's client certificate
  std::string key_file;   // with cert_file
  bool operator==(const EtcdTlsSettings&) const = default;
};

struct EtcdSettings {
  // Client URLs of the members: http://HOST:PORT (https:// with tls). Required with the etcd
  // backend.
  std::vector<std::string> endpoints;
  // Every key of this daemon group lives under it; daemons sharing a prefix share one leader.
  std::string prefix = "/ckptd";
  // The election lease: a leader that stops renewing it is replaced after about this long. etcd
  // counts leases in whole seconds (rounded up here) with a minimum of 2 s.
  int64_t election_ttl_ms = 5000;
  // How long connecting to the cluster may take before a start fails (and is retried).
  int64_t dial_timeout_ms = 3000;
  // The deadline of one etcd request. A write that passes it has an unknown outcome: the leader
  // stops (exit 75) and a standby takes over.
  int64_t request_timeout_ms = 5000;
  // The most operations one etcd transaction may carry: etcd's own --max-txn-ops, whose default
  // is 128. A batch of completions goes to etcd in transactions of up to this many puts, so a
  // cluster whose members run with a higher --max-txn-ops takes more completions a second (each
  // transaction costs etcd a raft round whatever it holds). Never above the members' flag: the
  // leader checks it at takeover and exits (78) when etcd refuses a transaction this large.
  int64_t max_txn_ops = 128;
  EtcdTlsSettings tls;
  bool operator==(const EtcdSettings&) const = default;
};

}  // namespace ckpt
