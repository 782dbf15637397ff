#pragma once
// Daemon assembles ckptd: the store, one runner per pipeline on the io shards (a fixed number of
// event loops, one thread each; runtime/io_shards.h), and the gRPC server. main.cc and the
// integration tests drive it.
//
// Threading: Start and Shutdown are called from one controlling thread (main, or a test), never
// from an io_context thread; Reload from that thread or from one thread of its own (main's
// ReloadThread), never beside another Reload, and CancelReload before Shutdown. Accessors are
// safe from any thread once Start returned.

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/daemon_config.h"
#include "core/clock.h"
#include "runtime/daemon_metrics.h"
#include "runtime/io_shards.h"
#include "runtime/registry.h"
#include "runtime/store_health.h"
#include "store/data_dir_lock.h"
#include "store/metadata_store.h"

namespace grpc {
class Server;
}

namespace ckpt {

class ReloadLatch;
class WorkerServiceImpl;
class AdminServiceImpl;
class MetricsServer;
class GrpcListener;
class LoopMonitor;
class HeapTrimmer;

// What a reload did (Daemon::Reload); every item is also logged.
struct ReloadResult {
  std::vector<std::string> needs_restart;  // keys that changed but apply only at the next start
  int created = 0;     // declared pipelines new to the daemon
  int updated = 0;     // declared pipelines whose spec changed
  int unchanged = 0;
  int left_alone = 0;  // declared in the file, but created through the API
  int undeclared = 0;  // declared until now, no longer in the file: the API's from now on
  int failed = 0;      // refused (invalid, store error) or not done in time
};

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

  // --- operator actions (AdminService); never called on a strand ---
  // Creates a pipeline (spec validated) and starts it once its record is durable. `done` runs on
  // the store's thread or the caller's; it must not block. Blocking: reads the id counter, so call
  // it from admin_pool().
  // `from_config`: declared in the config file (a reload may update it later).
  void CreatePipeline(const PipelineSpec& spec,
                      std::function<void(Result<std::shared_ptr<PipelineRunner>>)> done,
                      bool from_config = false);
  // Ends the pipeline's streams with NOT_FOUND, stops it and deletes its record and history (not
  // its id counter). `done` runs once the delete is durable; it must not block.
  void DeletePipeline(std::shared_ptr<PipelineRunner> runner, std::function<void(Status)> done);
  // One thread for operator work that blocks (store reads), so that no strand and no gRPC
  // reaction ever waits on disk.
  boost::asio::thread_pool& admin_pool() { return admin_pool_; }
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
  // Pipeline defaults as last loaded (start or reload). Safe from any thread.
  PipelineDefaults pipeline_defaults() const;
  // For the systemd watchdog, whose pings must come from the loops they vouch for.
  IoShards& shards() { return shards_; }
  Registry& registry() { return registry_; }
  DaemonMetrics& metrics() { return metrics_; }
  MetadataStore& store() { return *store_; }
  const DaemonConfig& config() const { return config_; }
  size_t io_threads() const { return shards_.size(); }

 private:
  Status LoadPipelines();
  // Logs one line of totals and trigger-delay percentiles now, and every minute while running.
  void LogStats(const char* what) const;
  void ScheduleStats();
  std::shared_ptr<PipelineRunner> MakeRunner(const StoredPipeline& stored, bool restarted);
  // StoreHealth's news: every pipeline holds or resumes its triggers; health and readiness follow.
  void OnStoreWritable(bool writable);
  // gRPC health SERVING while ready and the store takes writes. Any thread.
  void UpdateHealthService();

  // Constant after Start: the configuration the daemon started with (reloads never change it).
  DaemonConfig config_;
  SystemClock clock_;
  DaemonMetrics metrics_;
  std::unique_ptr<DataDirLock> data_dir_lock_;  // held while the store is open
  std::unique_ptr<MetadataStore> store_;
  IoShards shards_;
  // After shards_ (destroyed before them): its probe timer lives on a shard. Made by Start.
  std::unique_ptr<StoreHealth> store_health_;
  Registry registry_;
  // Keys whose CreatePipeline is between its registry check and its registry Add (the store
  // write in between): a second create of the same key is refused instead of overwriting the
  // first one's stored record. Any thread (admin pool, Reload on the controlling thread, the
  // store's callback); guarded by creating_mu_, held only for a set lookup.
  std::mutex creating_mu_;
  std::set<PipelineKey> creating_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  boost::asio::thread_pool admin_pool_{1};
  const std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::Server> server_;
  // On shards_.control() and every loop; declared after shards_, so destroyed before them.
  std::unique_ptr<GrpcListener> grpc_listener_;
  std::unique_ptr<LoopMonitor> loop_monitor_;
  std::unique_ptr<HeapTrimmer> heap_trimmer_;
  // Declared after shards_, so destroyed before them: its dropped handlers hold only shared state.
  std::unique_ptr<MetricsServer> metrics_server_;

  // Read from any thread; written by Start, Shutdown and Reload.
  std::atomic<bool> ready_{false};
  std::atomic<bool> per_pipeline_metrics_{false};
  std::mutex reload_mu_;
  std::weak_ptr<ReloadLatch> active_reload_;  // guarded by reload_mu_: the Reload waiting now
  bool reload_cancelled_ = false;             // guarded by reload_mu_: no Reload waits any more
  std::mutex health_mu_;  // orders the updates of the gRPC health service
  mutable std::mutex page_cache_mu_;
  mutable std::string page_cache_;                              // guarded by page_cache_mu_
  mutable std::chrono::steady_clock::time_point page_cache_at_;  // guarded by page_cache_mu_
  mutable std::mutex defaults_mu_;
  PipelineDefaults defaults_;  // guarded by defaults_mu_
  // Controlling thread only (Start, Reload): the log level in force.
  std::string log_level_;
  // On shards_.control(). Touched only by its own chain of handlers (one outstanding at a time) and
  // then dropped by shards_.Stop(): never cancelled from another thread.
  std::unique_ptr<boost::asio::steady_timer> stats_timer_;
  int grpc_port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ckpt
