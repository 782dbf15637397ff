// Daemon's life: construction, Start (the store, then the pipelines, then serving; with the etcd
// backend a standby's start, whose campaign goes on in daemon_leadership.cc), the graceful
// Shutdown in its order, the destructor's order of teardown, and the stats line logged every
// minute while it runs and once at the end. Elsewhere: daemon_serving.cc (the gRPC server, the
// HTTP endpoints and what they say: health, liveness, readiness, /metrics), daemon_reload.cc
// (SIGHUP), daemon_leadership.cc (the etcd backend's campaign and takeover).
//
// Threading: the controlling thread (daemon.h); the stats timer's handlers run on
// shards_.control().
#include "app/daemon.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "app/admin_backend_impl.h"
#include "app/daemon_internal.h"
#include "app/store_factory.h"
#include "config/store_section.h"
#include "etcd/etcd_election.h"
#include "etcd/etcd_store.h"
#include "http/metrics_server.h"
#include "rpc/admin_service.h"
#include "rpc/gatekeeper.h"
#include "rpc/grpc_listener.h"
#include "rpc/tls_credentials.h"
#include "rpc/worker_service.h"
#include "runtime/heap_trimmer.h"
#include "runtime/loop_monitor.h"
#include "web/web_view.h"

namespace ckpt {

using daemon_internal::kReloadWait;

namespace {

// At shutdown, how long savepoint calls have to write their final message.
constexpr auto kSavepointStreamsFinish = std::chrono::seconds(2);

// The daemon's rule for `threads: 0`: one io thread per core.
unsigned IoThreadCount(const DaemonConfig& config) {
  return config.threads > 0 ? static_cast<unsigned>(config.threads)
                            : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

Daemon::Daemon(DaemonConfig config, std::unique_ptr<MetadataStore> store)
    : config_(std::move(config)), store_(std::move(store)), shards_(IoThreadCount(config_)) {
  in_force_ = config_;
  per_pipeline_metrics_ = config_.metrics_per_pipeline;
  web_view_on_ = WebViewOn(config_);
  log_level_ = config_.log_level;
  MutexLock lock(declared_mu_);
  declared_ = config_.pipelines;
  declared_restore_from_ = config_.pipeline_restore_from;
  declared_groups_ = config_.alignment_groups;
}

Daemon::~Daemon() {
  Shutdown();
  // Order matters. No blocking task may still read the store when it closes. The store goes
  // before the host: a write queued after Shutdown's flush (a runner's last handlers ran until
  // the shards stopped) completes on the store's writer when it closes, and its callback reaches
  // the runner and the host's StoreHealth, so both must still be alive. Runners post to their
  // shards from there: the shards outlive both (stopped, so such posts are only queued and
  // destroyed with them).
  if (host_) {
    host_->StopProbing();
    host_->JoinBlockingPool();
  }
  store_.reset();
  host_.reset();
}

Status Daemon::Start() {
  const bool on_etcd = config_.store_backend == kEtcdBackend;
  if (!store_) {
    auto lock = DataDirLock::Acquire(config_.data_dir);
    if (!lock.ok()) return lock.status();
    data_dir_lock_ = std::move(*lock);
    if (on_etcd) {
      if (Status s = StartCampaign(); !s.ok()) return s;
    } else {
      auto opened = OpenConfiguredStore(config_);
      if (!opened.ok()) return opened.status();
      store_ = std::move(*opened);
    }
  }
  PipelineHostOptions options;
  options.heartbeat_interval_ms = config_.heartbeat_interval_ms;
  options.lease_ttl_ms = config_.lease_ttl_ms;
  options.start_spread_ms = config_.start_spread_ms;
  options.stuck_threshold_ms = config_.stuck_threshold_ms;
  options.savepoint_root =
      config_.savepoint_root.empty() ? config_.data_dir + "/savepoints" : config_.savepoint_root;
  options.config_source = config_.source_path;
  options.limits = config_.limits;
  options.admission = config_.admission;
  host_ = std::make_unique<PipelineHost>(shards_, *store_, clock_, metrics_, options,
                                         config_.defaults, [this](bool) { UpdateHealthService(); });
  if (reload_cancelled_) host_->CancelApplyDeclared();
  if (!on_etcd) {
    if (auto s = host_->Load(config_.pipelines, config_.pipeline_restore_from,
                             config_.alignment_groups, kReloadWait);
        !s.ok()) {
      return s;
    }
  }

  shards_.Start();
  started_ = true;
  if (Status s = StartServing(); !s.ok()) {
    Shutdown();
    return s;
  }
  if (on_etcd) {
    // Serving as a standby: status and health answer, everything else names the leader. The
    // campaign decides the rest (TakeOver).
    spdlog::info(
        "ckptd standing by on port {} (advertise {}), campaigning on etcd {} prefix {}", grpc_port_,
        config_.advertise,
        [&] {
          std::string joined;
          for (const auto& e : config_.etcd.endpoints) joined += (joined.empty() ? "" : ",") + e;
          return joined;
        }(),
        config_.etcd.prefix);
    election_->Start();
    stats_timer_ = std::make_unique<boost::asio::steady_timer>(shards_.control());
    ScheduleStats();
    return Status::Ok();
  }
  // Every port accepts now: health SERVING (the default service starts so, by name too), unless
  // the store already fails writes. ready_ first, so that a change of the store's health from
  // now on reaches the health service (UpdateHealthService).
  ready_ = true;
  UpdateHealthService();
  spdlog::info("ckptd serving on port {} with {} io thread(s), data in {}; {}", grpc_port_,
               shards_.size(), config_.data_dir,
               metrics_server_ ? "metrics on port " + std::to_string(metrics_server_->port())
                               : std::string("metrics off"));
  stats_timer_ = std::make_unique<boost::asio::steady_timer>(shards_.control());
  ScheduleStats();
  return Status::Ok();
}

void Daemon::Shutdown() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  // A takeover under way finishes its load first (bounded by etcd's request deadline): the
  // shutdown below must see every pipeline it made.
  {
    MutexLock lock(takeover_mu_);  // TakeOver itself never takes it
    shutting_down_ = true;
    if (takeover_thread_.joinable()) takeover_thread_.join();
  }
  // Before anything says "not ready": whoever sees the daemon stopping can count on creates being
  // refused (a pipeline created now would be one this shutdown does not know of).
  host_->RefuseCreates();
  // Probes learn first: not ready, health NOT_SERVING (and it stays so), then the rest stops.
  ready_ = false;
  if (server_) {
    if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
  }
  if (metrics_server_) metrics_server_->Stop();
  spdlog::info("shutting down: no new triggers; pending rounds have {} ms to finish",
               config_.shutdown_grace_ms);
  auto runners = host_->registry().All();
  // The pending gauge is exact only once every runner has taken the shutdown in: a round whose
  // trigger went out an instant ago may not be counted yet, and must not be aborted as if none
  // were pending.
  auto begun = std::make_shared<std::atomic<size_t>>(0);
  for (auto& r : runners) r->BeginShutdown([begun] { begun->fetch_add(1); });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.shutdown_grace_ms);
  while ((begun->load() < runners.size() || metrics_.pending_checkpoints.load() > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(10));  // the controlling thread, not a strand
  }
  if (begun->load() < runners.size()) {
    spdlog::warn("{} of {} pipeline(s) did not take the shutdown in within the grace period",
                 runners.size() - begun->load(), runners.size());
  }
  if (metrics_.pending_checkpoints.load() > 0) {
    spdlog::warn("{} round(s) still pending after the grace period; they are aborted",
                 metrics_.pending_checkpoints.load());
  }
  for (auto& r : runners) r->EndAllSessions(Status::Unavailable("ckptd is shutting down"));
  // Every savepoint has its outcome now (completed in the grace period, or failed: queued ones
  // at BeginShutdown, pending ones with EndAllSessions): let the calls write their final
  // message, so that an operator is told how it ended; a call still open after that hears
  // UNAVAILABLE (and ckptctl looks the outcome up).
  if (admin_service_) {
    admin_service_->FinishSavepointStreams(
        std::chrono::steady_clock::now() + kSavepointStreamsFinish,
        Status::Unavailable("ckptd is shutting down before the savepoint's outcome was sent"));
  }
  if (tls_reloader_) tls_reloader_->Stop();
  if (grpc_listener_) grpc_listener_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // After the server: its shutdown cancels the streams, whose last completions the queues'
  // threads still run.
  if (stream_queues_) stream_queues_->Stop();
  host_->StopProbing();
  store_->Flush();
  host_->JoinBlockingPool();
  // Last: the flush above still needed the lease. Resigning lets a standby take over now
  // rather than after the lease's TTL. A write queued since (a runner's last handlers run until
  // the shards stop) is not sent once the lease is unconfirmed; one already sent lands before
  // the second flush returns. After the resign it would fail its fence and stop the daemon.
  if (election_) {
    election_->StopConfirming();
    store_->Flush();
    election_->Stop(/*resign=*/leadership_.role() == Leadership::Role::kLeader);
  }
  shards_.Stop();
  for (auto& r : runners) r->ReleaseAfterStop();
  LogStats("totals");
  spdlog::info("shutdown complete");
}

int64_t Daemon::uptime_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started_at_)
      .count();
}

void Daemon::ScheduleStats() {
  stats_timer_->expires_after(std::chrono::minutes(1));
  stats_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    LogStats("stats");
    ScheduleStats();
  });
}

void Daemon::LogStats(const char* what) const {
  const auto delay = metrics_.trigger_delay.Take();
  const auto duration = metrics_.checkpoint_duration.Take();
  spdlog::info(
      "{}: {} pipeline(s), {} worker session(s); checkpoints completed {}, failed {}, expired {}, "
      "aborted by task loss {}; "
      "trigger delay p50 <= {:.0f} us, p99 <= {:.0f} us, max {} us (n={}); checkpoint duration "
      "p50 <= {:.1f} ms, p99 <= {:.1f} ms (bucket bounds)",
      what, host_->registry().size(), metrics_.worker_sessions.load(),
      metrics_.checkpoints_completed_total.load(), metrics_.checkpoints_failed_total.load(),
      metrics_.checkpoints_expired_total.load(), metrics_.checkpoints_aborted_total.load(),
      delay.QuantileMicros(0.5), delay.QuantileMicros(0.99), delay.max_micros, delay.count,
      duration.QuantileMicros(0.5) / 1000, duration.QuantileMicros(0.99) / 1000);
}

}  // namespace ckpt
