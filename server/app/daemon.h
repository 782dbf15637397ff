#pragma once
// Daemon is ckptd's composition root: it opens the store, puts the pipelines (runtime's
// PipelineHost) on the io shards (a fixed number of event loops, one thread each), and serves the
// gRPC services and the HTTP endpoints over them. Nothing below app/ knows it: each service sees
// only the narrow interface it needs (api/admin_backend.h, rpc/worker_session.h's SessionDeps,
// http's HttpEndpoints). main.cc and the integration tests drive it.
//
// One class, in files of one job each: daemon.cc (construction, Start, Shutdown, the stats line),
// daemon_serving.cc (the gRPC server, the HTTP endpoints, health, readiness and /metrics),
// daemon_reload.cc (SIGHUP), daemon_leadership.cc (the etcd backend's campaign and takeover);
// daemon_internal.h holds what they share.
//
// Threading: Start and Shutdown are called from one controlling thread (main, or a test), never
// from an io_context thread; Reload from that thread or from one thread of its own (main's
// ReloadThread), never beside another Reload, and CancelReload before Shutdown. Accessors are
// safe from any thread once Start returned.

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "config/daemon_config.h"
#include "core/clock.h"
#include "ha/leadership.h"
#include "runtime/daemon_metrics.h"
#include "runtime/io_shards.h"
#include "runtime/pipeline_host.h"
#include "store/data_dir_lock.h"
#include "store/metadata_store.h"

namespace grpc {
class Server;
}

namespace ckpt {

class WorkerServiceImpl;
class StreamQueues;
class AdminServiceImpl;
class AdminCallLimit;
class DaemonAdminBackend;
class MetricsServer;
class WebView;
class GrpcListener;
class Gatekeeper;
class LoopMonitor;
class HeapTrimmer;
class EtcdStore;
class EtcdElection;
class TlsReloader;

class Daemon {
 public:
  // `store`: null opens the configured backend in data_dir; tests may inject one (e.g. a
  // fault-injecting wrapper).
  explicit Daemon(DaemonConfig config, std::unique_ptr<MetadataStore> store = nullptr);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Opens the store, loads and starts every pipeline, applies the config's pipelines, starts the
  // io threads, the gRPC server (with grpc.health.v1 and reflection) and the HTTP server. When it
  // returns OK every port accepts and ready() is true. An error leaves nothing running.
  // With store.backend etcd it returns once the ports accept as a STANDBY: the campaign runs on,
  // and winning it loads the pipelines and serves (TakeOver); ready() turns true then.
  Status Start();
  // SIGHUP: applies what can change while running (log.level, metrics.per_pipeline, defaults,
  // declared pipelines) from `next`, a freshly read config, and logs every other changed key as
  // needing a restart. Pipelines created through the API are left alone. Blocks its thread (store
  // reads, waiting for the strands) for a bounded time, or until CancelReload; never call it on
  // a strand.
  ReloadResult Reload(const DaemonConfig& next);
  // Ends a Reload's wait for its pipeline changes now (before Shutdown). Any thread.
  void CancelReload();
  // Graceful: stop triggering, let pending rounds finish within the grace period, flush the store,
  // end worker streams with UNAVAILABLE, stop the server and the threads. Idempotent.
  void Shutdown();

  // The pipelines (create, delete, find). Valid once Start returned OK, until destruction.
  PipelineHost& pipelines() { return *host_; }
  int64_t uptime_ms() const;

  int grpc_port() const { return grpc_port_; }
  // The HTTP port (/metrics, /healthz, /readyz); 0 when metrics_listen is "".
  int metrics_port() const;
  // True from the end of a successful Start until Shutdown begins, while the store takes writes
  // and the daemon is alive: /readyz and gRPC health.
  bool ready() const;
  // Why the daemon is not alive, "" while it is: every event loop turns, the gRPC port accepts.
  // /healthz says 503 with it. Safe from any thread.
  std::string NotAlive() const;
  // Why it is not ready, "" while it is. Safe from any thread.
  std::string NotReady() const;
  // The /metrics page. Safe from any thread; reads atomics only (and, with per-pipeline series,
  // reuses a page rendered within the last second).
  std::string MetricsText() const;
  // For the systemd watchdog, whose pings must come from the loops they vouch for.
  IoShards& shards() { return shards_; }
  DaemonMetrics& metrics() { return metrics_; }
  MetadataStore& store() { return *store_; }
  const DaemonConfig& config() const { return config_; }
  // SINGLE, or STANDBY / LEADER with the etcd backend. Any thread.
  const Leadership& leadership() const { return leadership_; }

 private:
  // Logs one line of totals and trigger-delay percentiles now, and every minute while running.
  void LogStats(const char* what) const;
  void ScheduleStats();
  // gRPC health SERVING while ready and the store takes writes. Any thread.
  void UpdateHealthService();
  Status StartServing();
  // The etcd backend: opens the store and starts campaigning (Start's part for it).
  Status StartCampaign();
  // On the takeover thread, once elected: fence, load, bump generations, reserve ids, serve.
  void TakeOver(const std::string& leader_key, int64_t epoch);

  // Constant after Start: the configuration the daemon started with (reloads never change it).
  DaemonConfig config_;
  SystemClock clock_;
  DaemonMetrics metrics_;
  Leadership leadership_;
  std::unique_ptr<DataDirLock> data_dir_lock_;  // held while the store is open
  std::unique_ptr<MetadataStore> store_;
  // With the etcd backend: store_ is this store (set before Start's load), and the election runs
  // on its own thread. The takeover thread runs TakeOver once; Shutdown joins it.
  EtcdStore* etcd_store_ = nullptr;
  std::unique_ptr<EtcdElection> election_;
  // Set by the election's thread when it wins (unless a shutdown began), joined by Shutdown.
  // The pipelines the config declares now (at start, then each reload). A standby keeps a
  // reload's list here for its takeover, which loads under this mutex: a reload waits for a
  // takeover under way, and applies to the pipelines once this daemon serves.
  Mutex declared_mu_;
  std::vector<PipelineSpec> declared_ CKPT_GUARDED_BY(declared_mu_);
  std::map<PipelineKey, CheckpointRef> declared_restore_from_ CKPT_GUARDED_BY(declared_mu_);
  std::vector<AlignmentGroupSpec> declared_groups_ CKPT_GUARDED_BY(declared_mu_);
  Mutex takeover_mu_;
  std::thread takeover_thread_ CKPT_GUARDED_BY(takeover_mu_);
  bool shutting_down_ CKPT_GUARDED_BY(takeover_mu_) = false;
  IoShards shards_;
  // After shards_ (destroyed before them): runners' strands and the store probe's timer live on
  // the shards. Made by Start.
  std::unique_ptr<PipelineHost> host_;
  std::unique_ptr<DaemonAdminBackend> admin_backend_;
  // The pages on metrics_listen, over admin_backend_; renders on shards_.control().
  std::unique_ptr<WebView> web_view_;
  // Before the services, which hold references to it; swapped policies on reload.
  std::unique_ptr<Gatekeeper> gatekeeper_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  // Before the service that refers to it; its interceptors count calls until the server is gone.
  std::unique_ptr<AdminCallLimit> admin_call_limit_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  const std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  // The worker streams' completion queues and threads; before server_, so destroyed after it (a
  // server's queues must outlive it).
  std::unique_ptr<StreamQueues> stream_queues_;
  std::unique_ptr<grpc::Server> server_;
  // Rewrites the TLS copies gRPC reads with each good set of files (null without TLS).
  std::unique_ptr<TlsReloader> tls_reloader_;
  // On shards_.control() and every loop; declared after shards_, so destroyed before them.
  std::unique_ptr<GrpcListener> grpc_listener_;
  std::unique_ptr<LoopMonitor> loop_monitor_;
  std::unique_ptr<HeapTrimmer> heap_trimmer_;
  // Declared after shards_, so destroyed before them: its dropped handlers hold only shared state.
  std::unique_ptr<MetricsServer> metrics_server_;

  // Read from any thread; written by Start, Shutdown and Reload.
  std::atomic<bool> ready_{false};
  std::atomic<bool> per_pipeline_metrics_{false};
  std::atomic<bool> web_view_on_{true};  // metrics.web_view
  Mutex health_mu_;                      // orders the updates of the gRPC health service
  mutable Mutex page_cache_mu_;
  mutable std::string page_cache_ CKPT_GUARDED_BY(page_cache_mu_);
  mutable std::chrono::steady_clock::time_point page_cache_at_ CKPT_GUARDED_BY(page_cache_mu_);
  // Controlling thread only (Start, Reload): the log level in force.
  std::string log_level_;
  // Reload's thread only: the configuration in force, config_ with what reloads applied since
  // (config/reload_rules.h). Its restart-only keys are always config_'s.
  DaemonConfig in_force_;
  // A CancelReload before Start made the host: its first ApplyDeclared must not wait.
  std::atomic<bool> reload_cancelled_{false};
  // On shards_.control(). Touched only by its own chain of handlers (one outstanding at a time) and
  // then dropped by shards_.Stop(): never cancelled from another thread.
  std::unique_ptr<boost::asio::steady_timer> stats_timer_;
  int grpc_port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ckpt
