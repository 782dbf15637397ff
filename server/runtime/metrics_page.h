#pragma once
// The /metrics page: ckptd's metrics (docs/OPERATING.md, "Operating ckptd") in the Prometheus text
// format.
//
// Threading: call from any thread that may take a short shared lock (an io thread serving HTTP, a
// test). It reads only atomics: the daemon-wide DaemonMetrics and, when per-pipeline series are
// on, each runner's PipelineMetrics through the registry's shared lock. It never posts to a
// strand nor waits for one.

#include <string>

#include "core/round_admission.h"
#include "runtime/daemon_metrics.h"
#include "runtime/registry.h"

namespace ckpt {

struct MetricsPageOptions {
  std::string version;            // ckptd_build_info{version}
  bool per_pipeline = false;      // metrics.per_pipeline: the ckptd_pipeline_* series
  double start_time_seconds = 0;  // process_start_time_seconds (Unix time)
  // store.backend etcd: the ckptd_etcd_transactions* counters (EtcdBackend's).
  bool etcd = false;
  uint64_t etcd_transactions = 0;
  uint64_t etcd_transactions_resent = 0;
  // ckptd_tls_handshake_failures_total (rpc/grpc_log_bridge.h counts them).
  uint64_t tls_handshake_failures = 0;
  // ckptd_store_unreadable_records (runtime/quarantine.h; a standby's watch).
  uint64_t store_unreadable_records = 0;
  // The daemon's admission (ckptd_rounds_in_flight, ckptd_inflight_state_bytes,
  // ckptd_rounds_waiting, ckptd_rounds_deferred_total); null: the series read 0.
  const RoundAdmission* admission = nullptr;
};

std::string RenderMetricsPage(const DaemonMetrics& metrics, const Registry& registry,
                              const MetricsPageOptions& options);

}  // namespace ckpt
