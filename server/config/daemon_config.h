#pragma once
// The daemon's configuration: what `ckptd --config FILE` reads. Every field's default is written
// where the field is declared; config/ckptd.yaml and docs/man/ckptd.yaml.5 document the same.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auth/access_policy.h"
#include "auth/tls_settings.h"
#include "common/status.h"
#include "config/etcd_settings.h"
#include "core/admission_queue.h"
#include "core/limits.h"
#include "core/types.h"

namespace ckpt {

struct DaemonConfig {
  std::string listen = "127.0.0.1:7070";  // gRPC (WorkerService, AdminService)
  // HTTP /metrics, /healthz, /readyz; "" serves none of them. Port 0 picks a free port.
  std::string metrics_listen = "127.0.0.1:9464";
  // metrics.per_pipeline: also export per-pipeline series labelled job and pipeline. Off by
  // default: 100,000 pipelines would be 100,000 series per metric on the Prometheus server.
  bool metrics_per_pipeline = false;
  // metrics.web_view: serve the read-only web view (/, /pipelines/..., /api/v1/...) beside
  // /metrics. It shows ids, worker names and state locations to whoever reaches metrics_listen,
  // with no authentication of its own. Unset: see WebViewOn.
  std::optional<bool> metrics_web_view;
  std::string data_dir = "./ckptd-data";  // the SQLite store lives here
  // Where savepoints requested without a target go: <savepoint_root>/<job>/<pipeline>/<id>, told
  // to the workers, which write the state. "" = <data_dir>/savepoints. A path or URI the workers
  // can reach (e.g. a shared file system or s3://bucket/savepoints).
  std::string savepoint_root;
  std::string store_backend = "sqlite";  // store.backend: sqlite (embedded) or etcd (HA)
  // store.writer_nice: the nice value of the store's writer thread, through which every durable
  // completion passes (GroupCommitOptions::writer_nice): lowered to it, never raised. 0 leaves it.
  int store_writer_nice = -10;
  EtcdSettings etcd;  // store.etcd, with the etcd backend
  // HOST:PORT clients reach this daemon at when it leads (the etcd backend): standbys name it in
  // `ckpt-leader` and GetDaemonStatus. Required with etcd; unused with sqlite.
  std::string advertise;
  int threads = 0;                       // io_context threads; 0 = number of cores
  int64_t lease_ttl_ms = 10000;          // a silent worker stream loses its tasks after this
  int64_t heartbeat_interval_ms = 3000;  // told to workers in `welcome`
  // A stream that sends no hello within this is ended (DEADLINE_EXCEEDED): until then it holds
  // memory (about 20 KB in gRPC and here) and identifies no one.
  int64_t hello_timeout_ms = 10000;
  int64_t shutdown_grace_ms = 10000;  // SIGTERM: how long pending rounds may finish
  // When an overdue pipeline's tasks become all registered (a start, a takeover) or it is
  // resumed, its next periodic trigger waits a fixed per-pipeline fraction of min(this, its
  // interval), so pipelines whose workers connect together do not checkpoint in lockstep
  // (CoordinatorOptions::start_spread). Unset: of the whole interval. 0 = trigger at once.
  std::optional<int64_t> start_spread_ms;
  // A pending round older than this is logged once at warning with what holds it, and counted
  // (ckptd_checkpoints_stuck_total). 0 = automatic: max(3 x the pipeline's recent p95, 30 s).
  int64_t stuck_threshold_ms = 0;
  std::string log_level = "info";   // log.level: trace .. critical, or off
  std::string log_format = "text";  // log.format: text, or json (one object a line)
  // Security (docs/SECURITY.md, "Configuration"). A `listen` off loopback needs tls and auth,
  // unless insecure (then a warning at every start; docs/SECURITY.md, "Threat model").
  TlsSettings tls;
  AuthSpec auth;  // reloaded on SIGHUP
  Limits limits;
  // admission { max_concurrent_rounds, max_inflight_bytes }: caps on the rounds in flight across
  // every pipeline and group of the daemon, and on their predicted bytes (docs/PROTOCOL.md,
  // "Admission"). 0 = no cap (the default). Reloaded on SIGHUP.
  AdmissionCaps admission;
  bool insecure = false;
  PipelineDefaults defaults;            // applied to pipelines that leave a key out
  std::vector<PipelineSpec> pipelines;  // declared at start (and on SIGHUP)
  // pipelines[].restore_from: where a declared pipeline restores from, applied only when it is
  // created (as CreatePipeline's restore_from); a later change to the file does nothing.
  std::map<PipelineKey, CheckpointRef> pipeline_restore_from;
  // Alignment groups declared at start (and on SIGHUP); keys a group leaves out take `defaults`
  // (position_interval: 0).
  std::vector<AlignmentGroupSpec> alignment_groups;
  // Not a key: the file this was read from (LoadDaemonConfig), for messages; "" for defaults.
  std::string source_path;
};

// Parses and validates YAML text. `source_name` names the file in errors, which read
// "<source_name>:<line>:<column>: <reason>" (1-based) inside an INVALID_ARGUMENT status.
Result<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text,
                                       const std::string& source_name);

// A config file larger than this is refused: no real one comes near it, and reading a huge one
// (or /dev/zero) would take the daemon's memory.
inline constexpr uint64_t kMaxConfigBytes = 16 << 20;

// Reads `path` and parses it. Refused, with an error naming the path: a missing or unreadable
// file, a directory, anything but a regular file (a FIFO would block the reader), more than
// kMaxConfigBytes.
Result<DaemonConfig> LoadDaemonConfig(const std::string& path);

// Whether the web view is served: metrics.web_view when set; otherwise only while metrics_listen
// is on loopback and `auth` is off, so that a daemon which authenticates its callers does not show
// their pipelines to anyone who reaches the HTTP port unless told to.
bool WebViewOn(const DaemonConfig& config);

}  // namespace ckpt
