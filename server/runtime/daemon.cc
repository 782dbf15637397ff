#include "runtime/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>

#include "core/spec_validation.h"
#include "http/metrics_server.h"
#include "rpc/admin_service.h"
#include "rpc/grpc_listener.h"
#include "runtime/heap_trimmer.h"
#include "runtime/loop_monitor.h"
#include "runtime/metrics_page.h"
#include "rpc/worker_service.h"
#include "store/sqlite_store.h"

namespace ckpt {

namespace {

// gRPC messages beyond this are refused with RESOURCE_EXHAUSTED: an ack carries a few ids and a
// URI, a hello at most kMaxTasksPerPipeline short ids.
constexpr int kMaxMessageBytes = 8 << 20;

// The gRPC services whose health grpc.health.v1 reports by name ("" is the whole server).
constexpr const char* kHealthServices[] = {"ckpt.v1.WorkerService", "ckpt.v1.AdminService"};

// /healthz: every event loop is probed this often, and one whose probe has not run for
// kLoopStallAfter is wedged (a liveness probe should restart the daemon).
constexpr auto kLoopProbeInterval = std::chrono::milliseconds(1000);
constexpr auto kLoopStallAfter = std::chrono::seconds(10);

// At shutdown, how long savepoint calls have to write their final message.
constexpr auto kSavepointStreamsFinish = std::chrono::seconds(2);

// With per-pipeline series on, a rendered /metrics page serves the scrapes of this long.
constexpr auto kMetricsPageReuse = std::chrono::seconds(1);

// A reload waits this long for its pipeline changes (store writes, strands) before reporting
// the ones not done as failed; they may still finish later.
constexpr auto kReloadWait = std::chrono::seconds(10);

// The daemon's rule for `threads: 0`: one io thread per core.
unsigned IoThreadCount(const DaemonConfig& config) {
  return config.threads > 0 ? static_cast<unsigned>(config.threads)
                            : std::max(1u, std::thread::hardware_concurrency());
}

const double kProcessStart =
    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

}  // namespace

Daemon::Daemon(DaemonConfig config, std::unique_ptr<MetadataStore> store)
    : config_(std::move(config)), store_(std::move(store)), shards_(IoThreadCount(config_)) {
  defaults_ = config_.defaults;
  per_pipeline_metrics_ = config_.metrics_per_pipeline;
  log_level_ = config_.log_level;
}

Daemon::~Daemon() {
  Shutdown();
  // The store's writer may still call back into runners, which post to their shards: close it
  // while the shards are alive (stopped, so such posts are only queued and destroyed with them).
  store_.reset();
}

std::shared_ptr<PipelineRunner> Daemon::MakeRunner(const StoredPipeline& stored, bool restarted) {
  RunnerOptions options;
  options.heartbeat_interval_ms = config_.heartbeat_interval_ms;
  options.lease_ttl_ms = config_.lease_ttl_ms;
  options.coordinator.start_spread = Millis(config_.start_spread_ms);
  options.store_health = store_health_.get();
  options.coordinator.savepoint_root =
      config_.savepoint_root.empty() ? config_.data_dir + "/savepoints" : config_.savepoint_root;
  return std::make_shared<PipelineRunner>(shards_.For(stored.record.spec.key), stored, restarted,
                                          *store_, clock_, metrics_, options);
}

Status Daemon::LoadPipelines() {
  auto loaded = store_->LoadPipelines();
  if (!loaded.ok()) return loaded.status();
  std::map<PipelineKey, StoredPipeline> stored;
  for (auto& p : *loaded) stored[p.record.spec.key] = std::move(p);

  // Config-declared pipelines are created, or updated to match the file; a pipeline created
  // through the API is left alone, at start as on reload, so that a restart never rewrites what
  // an operator made.
  std::map<PipelineKey, bool> fresh;
  for (const auto& spec : config_.pipelines) {
    auto it = stored.find(spec.key);
    if (it == stored.end()) {
      StoredPipeline p;
      p.record.spec = spec;
      p.record.from_config = true;
      p.spec_unsaved = true;  // its first write creates the record
      stored[spec.key] = p;
      fresh[spec.key] = true;
    } else if (!it->second.record.from_config) {
      spdlog::warn("[{}] declared in the config file but created through the API: left alone "
                   "(delete it to let the file manage it)",
                   spec.key.ToString());
    } else if (it->second.record.spec != spec) {
      spdlog::info("[{}] spec updated from the config file", spec.key.ToString());
      it->second.record.spec = spec;
      it->second.spec_unsaved = true;
    }
  }
  std::set<PipelineKey> declared;
  for (const auto& spec : config_.pipelines) declared.insert(spec.key);
  for (auto& [key, p] : stored) {
    if (p.record.from_config && !declared.count(key)) {
      // Its restart write persists this: from now on the API manages it (and may delete it).
      spdlog::info("[{}] no longer declared in the config file: managed through the API from now "
                   "on (ckptctl pipeline delete removes it)",
                   key.ToString());
      p.record.from_config = false;
    }
  }
  for (const auto& [key, p] : stored) {
    auto runner = MakeRunner(p, /*restarted=*/!fresh.count(key));
    registry_.Add(runner);
    runner->Start();
  }
  spdlog::info("{} pipeline(s) loaded ({} new from the config)", stored.size(), fresh.size());
  return Status::Ok();
}

Status Daemon::Start() {
  if (!store_) {
    if (config_.store_backend != "sqlite") {
      return Status::InvalidArgument("unknown store backend " + config_.store_backend);
    }
    auto lock = DataDirLock::Acquire(config_.data_dir);
    if (!lock.ok()) return lock.status();
    data_dir_lock_ = std::move(*lock);
    auto opened = SqliteStore::Open(config_.data_dir);
    if (!opened.ok()) return opened.status();
    store_ = std::move(*opened);
  }
  store_health_ = std::make_unique<StoreHealth>(*store_, shards_.control(),
                                                [this](bool writable) { OnStoreWritable(writable); });
  if (auto s = LoadPipelines(); !s.ok()) return s;

  shards_.Start();

  worker_service_ = std::make_unique<WorkerServiceImpl>(
      SessionDeps{registry_, metrics_, shards_, config_.lease_ttl_ms, config_.hello_timeout_ms});
  // Process-wide switches, read by the builder: grpc.health.v1.Health and
  // grpc.reflection.v1alpha.ServerReflection, so that standard probes and tools work.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // The daemon accepts the port's connections itself and hands them to gRPC (rpc/grpc_listener.h).
  grpc_listener_ = std::make_unique<GrpcListener>(
      shards_.control(),
      builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
          grpc::InsecureServerCredentials()));
  started_ = true;
  if (Status s = grpc_listener_->Listen(config_.listen); !s.ok()) {
    Shutdown();
    return s;
  }
  grpc_port_ = grpc_listener_->port();
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.RegisterService(worker_service_.get());
  admin_service_ = std::make_unique<AdminServiceImpl>(*this);
  builder.RegisterService(admin_service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    Shutdown();
    return Status::Unavailable("the gRPC server did not start (see gRPC's log above)");
  }
  grpc_listener_->Start();
  loop_monitor_ = std::make_unique<LoopMonitor>(shards_.AllLoops(), kLoopProbeInterval);
  heap_trimmer_ = std::make_unique<HeapTrimmer>(
      shards_.control(), [this] {
        return metrics_.worker_sessions_ended_total.load() +
               metrics_.savepoint_calls_ended_total.load();
      });
  // Until every port accepts; the default service starts SERVING and would say so too early.
  if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  if (!config_.metrics_listen.empty()) {
    HttpEndpoints endpoints;
    endpoints.metrics = [this] { return MetricsText(); };
    endpoints.not_alive = [this] { return NotAlive(); };
    endpoints.not_ready = [this] { return NotReady(); };
    metrics_server_ = std::make_unique<MetricsServer>(shards_.control(), std::move(endpoints));
    if (Status s = metrics_server_->Listen(config_.metrics_listen); !s.ok()) {
      Shutdown();
      return s;
    }
  }
  // Every port accepts now: health SERVING (the default service starts so, by name too), unless
  // the store already fails writes. ready_ first, so that a change of the store's health from
  // now on reaches the health service (OnStoreWritable).
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

int Daemon::metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }

std::string Daemon::NotAlive() const {
  if (loop_monitor_ && !loop_monitor_->AllTurning(kLoopStallAfter)) {
    return "an event loop has not turned for " + std::to_string(kLoopStallAfter.count()) + " s";
  }
  if (grpc_listener_ && !grpc_listener_->accepting()) {
    return "the gRPC port does not accept connections (out of file descriptors?)";
  }
  return "";
}

std::string Daemon::NotReady() const {
  if (!ready_.load()) return "starting or shutting down";
  if (store_health_ && !store_health_->writable()) return "the store fails writes";
  return NotAlive();
}

bool Daemon::ready() const { return NotReady().empty(); }

void Daemon::OnStoreWritable(bool writable) {
  metrics_.store_writable = writable ? 1 : 0;
  for (const auto& runner : registry_.All()) runner->SetStoreWritable(writable);
  UpdateHealthService();
}

void Daemon::UpdateHealthService() {
  std::lock_guard lock(health_mu_);
  if (!ready_.load()) return;  // not serving yet, or shutting down: health stays as it is
  // The store's state now, not the one a caller was told about: calls may cross.
  const bool serving = store_health_->writable();
  if (auto* health = server_ ? server_->GetHealthCheckService() : nullptr) {
    health->SetServingStatus(serving);
    for (const char* service : kHealthServices) health->SetServingStatus(service, serving);
  }
}

std::string Daemon::MetricsText() const {
  MetricsPageOptions options;
  options.version = CKPT_VERSION;
  options.per_pipeline = per_pipeline_metrics_.load();
  options.start_time_seconds = kProcessStart;
  if (!options.per_pipeline) return RenderMetricsPage(metrics_, registry_, options);
  // With a series set per pipeline a page is megabytes at 100,000 pipelines: scrapes within
  // kMetricsPageReuse of one another share one rendering, so that several scrapers cost what one
  // does. (The page is rendered on the control loop, never on a pipeline's.)
  std::lock_guard lock(page_cache_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (page_cache_.empty() || now - page_cache_at_ >= kMetricsPageReuse) {
    page_cache_ = RenderMetricsPage(metrics_, registry_, options);
    page_cache_at_ = now;
  }
  return page_cache_;
}

// Counts down the pipeline changes a reload started, so that it can wait for them with a deadline
// (or until the daemon shuts down).
class ReloadLatch {
 public:
  explicit ReloadLatch(int count) : remaining_(count) {}
  // The wait ends now, whatever is left (daemon shutdown).
  void Cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  // `outcome` null: done, nothing to count.
  void Done(int ReloadResult::*outcome) {
    std::lock_guard lock(mu_);
    if (outcome) ++(result_.*outcome);
    if (--remaining_ == 0) cv_.notify_all();
  }
  // The outcomes counted so far; the changes not done in time count as failed.
  ReloadResult Wait(std::chrono::steady_clock::duration timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return remaining_ == 0 || cancelled_; });
    ReloadResult result = result_;
    result.failed += remaining_;
    return result;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int remaining_;        // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
  ReloadResult result_;  // guarded by mu_
};

ReloadResult Daemon::Reload(const DaemonConfig& next) {
  std::vector<std::string> needs_restart;
  auto restart_only = [&](const char* key, const auto& running, const auto& wanted) {
    if (running == wanted) return;
    spdlog::warn("reload: {} changed ({} -> {}); needs a restart, keeping {}", key, running,
                 wanted, running);
    needs_restart.push_back(key);
  };
  restart_only("listen", config_.listen, next.listen);
  restart_only("metrics_listen", config_.metrics_listen, next.metrics_listen);
  restart_only("data_dir", config_.data_dir, next.data_dir);
  restart_only("savepoint_root", config_.savepoint_root, next.savepoint_root);
  restart_only("store.backend", config_.store_backend, next.store_backend);
  restart_only("threads", config_.threads, next.threads);
  restart_only("lease_ttl_ms", config_.lease_ttl_ms, next.lease_ttl_ms);
  restart_only("heartbeat_interval_ms", config_.heartbeat_interval_ms,
               next.heartbeat_interval_ms);
  restart_only("hello_timeout_ms", config_.hello_timeout_ms, next.hello_timeout_ms);
  restart_only("shutdown_grace_ms", config_.shutdown_grace_ms, next.shutdown_grace_ms);
  restart_only("start_spread_ms", config_.start_spread_ms, next.start_spread_ms);
  restart_only("log.format", config_.log_format, next.log_format);

  if (next.log_level != log_level_) {
    spdlog::info("reload: log.level {} -> {}", log_level_, next.log_level);
    spdlog::set_level(spdlog::level::from_str(next.log_level));
    log_level_ = next.log_level;
  }
  if (next.metrics_per_pipeline != per_pipeline_metrics_.load()) {
    spdlog::info("reload: metrics.per_pipeline -> {}", next.metrics_per_pipeline);
    per_pipeline_metrics_ = next.metrics_per_pipeline;
  }
  {
    std::lock_guard lock(defaults_mu_);
    if (!(next.defaults.interval_ms == defaults_.interval_ms &&
          next.defaults.timeout_ms == defaults_.timeout_ms &&
          next.defaults.min_pause_ms == defaults_.min_pause_ms &&
          next.defaults.tolerable_failures == defaults_.tolerable_failures &&
          next.defaults.retained == defaults_.retained)) {
      spdlog::info("reload: pipeline defaults changed; they apply to pipelines created from now on "
                   "and to declared ones");
    }
    defaults_ = next.defaults;
  }

  // Declared pipelines: created, or updated to match the file, as at start; but a pipeline
  // created through the API is never touched by a reload (CONTRACT.md).
  // Pipelines the file declared until now but no longer does become the API's (see Undeclare).
  std::set<PipelineKey> declared;
  for (const PipelineSpec& spec : next.pipelines) declared.insert(spec.key);
  std::vector<std::shared_ptr<PipelineRunner>> others;
  for (auto& runner : registry_.All()) {
    if (!declared.count(runner->key())) others.push_back(std::move(runner));
  }
  auto latch =
      std::make_shared<ReloadLatch>(static_cast<int>(next.pipelines.size() + others.size()));
  {
    std::lock_guard lock(reload_mu_);
    active_reload_ = latch;
    if (reload_cancelled_) latch->Cancel();  // shutdown came before the wait began
  }
  for (const auto& runner : others) {
    runner->Undeclare([latch](bool was_declared) {
      latch->Done(was_declared ? &ReloadResult::undeclared : nullptr);
    });
  }
  for (const PipelineSpec& spec : next.pipelines) {
    const std::string name = spec.key.ToString();
    if (auto runner = registry_.Find(spec.key)) {
      runner->ApplyDeclaredSpec(spec, [latch, name](Result<bool> changed) {
        if (!changed.ok()) {
          const bool api = changed.status().code() == StatusCode::kFailedPrecondition;
          spdlog::log(api ? spdlog::level::warn : spdlog::level::err, "[{}] reload: {}", name,
                      changed.status().message());
          return latch->Done(api ? &ReloadResult::left_alone : &ReloadResult::failed);
        }
        if (*changed) spdlog::info("[{}] reload: spec updated from the config file", name);
        latch->Done(*changed ? &ReloadResult::updated : &ReloadResult::unchanged);
      });
      continue;
    }
    CreatePipeline(
        spec,
        [latch, name](Result<std::shared_ptr<PipelineRunner>> created) {
          if (!created.ok()) {
            spdlog::error("[{}] reload: not created: {}", name, created.status().message());
            return latch->Done(&ReloadResult::failed);
          }
          latch->Done(&ReloadResult::created);
        },
        /*from_config=*/true);
  }
  ReloadResult result = latch->Wait(kReloadWait);
  {
    std::lock_guard lock(reload_mu_);
    active_reload_.reset();
  }
  result.needs_restart = std::move(needs_restart);
  spdlog::info(
      "reload done: {} pipeline(s) created, {} updated, {} unchanged, {} left alone (created "
      "through the API), {} no longer declared, {} failed; {} key(s) need a restart",
      result.created, result.updated, result.unchanged, result.left_alone, result.undeclared,
      result.failed, result.needs_restart.size());
  return result;
}

PipelineDefaults Daemon::pipeline_defaults() const {
  std::lock_guard lock(defaults_mu_);
  return defaults_;
}

int64_t Daemon::uptime_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started_at_)
      .count();
}

void Daemon::CreatePipeline(const PipelineSpec& spec,
                            std::function<void(Result<std::shared_ptr<PipelineRunner>>)> done,
                            bool from_config) {
  if (auto s = ValidateSpec(spec); !s.ok()) return done(s);
  {
    std::lock_guard lock(creating_mu_);
    if (registry_.Find(spec.key) || !creating_.insert(spec.key).second) {
      return done(Status::AlreadyExists("pipeline " + spec.key.ToString() + " exists"));
    }
  }
  auto created = [this, key = spec.key] {
    std::lock_guard lock(creating_mu_);
    creating_.erase(key);
  };
  // Ids are never reused, not even after DeletePipeline and a create under the same name.
  auto counter = store_->LoadIdCounter(spec.key);
  if (!counter.ok()) {
    created();
    return done(counter.status());
  }
  StoredPipeline stored;
  stored.record.spec = spec;
  stored.record.from_config = from_config;
  stored.id_counter = *counter;
  store_->PutPipeline(stored.record, [this, stored, created, done = std::move(done)](Status s) {
    store_health_->Report(s);
    if (!s.ok()) {
      created();
      return done(Status::Unavailable("storing the pipeline failed: " + s.message()));
    }
    auto runner = MakeRunner(stored, /*restarted=*/false);
    const bool added = registry_.Add(runner);
    created();
    if (!added) {
      return done(Status::AlreadyExists("pipeline " + stored.record.spec.key.ToString() + " exists"));
    }
    runner->Start();
    spdlog::info("[{}] pipeline created ({} tasks, interval {} ms)",
                 stored.record.spec.key.ToString(), stored.record.spec.task_ids.size(),
                 stored.record.spec.interval_ms);
    done(runner);
  });
}

void Daemon::DeletePipeline(std::shared_ptr<PipelineRunner> runner,
                            std::function<void(Status)> done) {
  const std::string declared_in = config_.source_path.empty() ? "(none)" : config_.source_path;
  runner->Delete(
      [this, key = runner->key(), done = std::move(done)](Status s) mutable {
        if (!s.ok()) return done(s);
        // The store delete is queued before the name is free: a create of the same name can
        // only pass its registry check after this, so its record is written after the delete,
        // never deleted by it (writes apply in call order).
        store_->DeletePipeline(key, std::move(done));
        registry_.Remove(key);
      },
      declared_in);
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
      what, registry_.size(), metrics_.worker_sessions.load(),
      metrics_.checkpoints_completed_total.load(), metrics_.checkpoints_failed_total.load(),
      metrics_.checkpoints_expired_total.load(), metrics_.checkpoints_aborted_total.load(),
      delay.QuantileMicros(0.5),
      delay.QuantileMicros(0.99), delay.max_micros, delay.count,
      duration.QuantileMicros(0.5) / 1000, duration.QuantileMicros(0.99) / 1000);
}

void Daemon::CancelReload() {
  std::lock_guard lock(reload_mu_);
  reload_cancelled_ = true;
  if (auto latch = active_reload_.lock()) latch->Cancel();
}

void Daemon::Shutdown() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  // Probes learn first: not ready, health NOT_SERVING (and it stays so), then the rest stops.
  ready_ = false;
  if (server_) {
    if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
  }
  if (metrics_server_) metrics_server_->Stop();
  spdlog::info("shutting down: no new triggers; pending rounds have {} ms to finish",
               config_.shutdown_grace_ms);
  auto runners = registry_.All();
  for (auto& r : runners) r->BeginShutdown();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.shutdown_grace_ms);
  while (metrics_.pending_checkpoints.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the controlling thread, not a strand
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
  if (grpc_listener_) grpc_listener_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (store_health_) store_health_->Stop();
  store_->Flush();
  admin_pool_.join();
  shards_.Stop();
  for (auto& r : runners) r->ReleaseAfterStop();
  LogStats("totals");
  spdlog::info("shutdown complete");
}

}  // namespace ckpt
