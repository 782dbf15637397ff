#include "runtime/daemon.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <map>

#include "core/spec_validation.h"
#include "rpc/admin_service.h"
#include "rpc/worker_service.h"
#include "store/sqlite_store.h"

namespace ckpt {

namespace {

// gRPC messages beyond this are refused with RESOURCE_EXHAUSTED: an ack carries a few ids and a
// URI, a hello at most kMaxTasksPerPipeline short ids.
constexpr int kMaxMessageBytes = 8 << 20;

}  // namespace

Daemon::Daemon(DaemonConfig config, std::unique_ptr<MetadataStore> store)
    : config_(std::move(config)), store_(std::move(store)) {}

Daemon::~Daemon() {
  Shutdown();
  // The store's writer may still call back into runners, which post to io_: close it while io_ is
  // alive (io_ is stopped, so such posts are only queued and destroyed with it).
  store_.reset();
}

std::shared_ptr<PipelineRunner> Daemon::MakeRunner(const StoredPipeline& stored, bool restarted) {
  RunnerOptions options;
  options.heartbeat_interval_ms = config_.heartbeat_interval_ms;
  options.lease_ttl_ms = config_.lease_ttl_ms;
  options.coordinator.savepoint_root = config_.data_dir + "/savepoints";
  return std::make_shared<PipelineRunner>(io_, stored, restarted, *store_, clock_, metrics_,
                                          options);
}

Status Daemon::LoadPipelines() {
  auto loaded = store_->LoadPipelines();
  if (!loaded.ok()) return loaded.status();
  std::map<PipelineKey, StoredPipeline> stored;
  for (auto& p : *loaded) stored[p.record.spec.key] = std::move(p);

  // Config-declared pipelines are created, or updated to match the file; API-created ones are
  // left alone.
  std::map<PipelineKey, bool> fresh;
  for (const auto& spec : config_.pipelines) {
    auto it = stored.find(spec.key);
    if (it == stored.end()) {
      StoredPipeline p;
      p.record.spec = spec;
      p.record.from_config = true;
      stored[spec.key] = p;
      fresh[spec.key] = true;
    } else if (it->second.record.spec != spec || !it->second.record.from_config) {
      spdlog::info("[{}] spec updated from the config file", spec.key.ToString());
      it->second.record.spec = spec;
      it->second.record.from_config = true;
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
  work_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      io_.get_executor());
  if (auto s = LoadPipelines(); !s.ok()) return s;

  const unsigned threads =
      config_.threads > 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });

  worker_service_ = std::make_unique<WorkerServiceImpl>(
      SessionDeps{registry_, metrics_, io_, config_.lease_ttl_ms});
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen, grpc::InsecureServerCredentials(), &grpc_port_);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.RegisterService(worker_service_.get());
  admin_service_ = std::make_unique<AdminServiceImpl>(*this);
  builder.RegisterService(admin_service_.get());
  server_ = builder.BuildAndStart();
  started_ = true;
  if (!server_ || grpc_port_ == 0) {
    Shutdown();
    return Status::Unavailable("cannot listen on " + config_.listen +
                               " (address in use or not valid?)");
  }
  spdlog::info("ckptd serving on port {} with {} io thread(s), data in {}", grpc_port_, threads,
               config_.data_dir);
  stats_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  ScheduleStats();
  return Status::Ok();
}

int64_t Daemon::uptime_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started_at_)
      .count();
}

void Daemon::CreatePipeline(const PipelineSpec& spec,
                            std::function<void(Result<std::shared_ptr<PipelineRunner>>)> done) {
  if (auto s = ValidateSpec(spec); !s.ok()) return done(s);
  if (registry_.Find(spec.key)) {
    return done(Status::AlreadyExists("pipeline " + spec.key.ToString() + " exists"));
  }
  // Ids are never reused, not even after DeletePipeline and a create under the same name.
  auto counter = store_->LoadIdCounter(spec.key);
  if (!counter.ok()) return done(counter.status());
  StoredPipeline stored;
  stored.record.spec = spec;
  stored.id_counter = *counter;
  store_->PutPipeline(stored.record, [this, stored, done = std::move(done)](Status s) {
    if (!s.ok()) return done(Status::Unavailable("storing the pipeline failed: " + s.message()));
    auto runner = MakeRunner(stored, /*restarted=*/false);
    if (!registry_.Add(runner)) {
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
  runner->Delete([this, key = runner->key(), done = std::move(done)]() mutable {
    registry_.Remove(key);
    store_->DeletePipeline(key, std::move(done));
  });
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

void Daemon::Shutdown() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  spdlog::info("shutting down: no new triggers; pending rounds have {} ms to finish",
               config_.shutdown_grace_ms);
  // Savepoint waiters learn first, and plainly: this daemon will not finish their savepoint.
  if (admin_service_) {
    admin_service_->EndSavepointStreams(
        Status::Unavailable("ckptd is shutting down; the savepoint did not complete here"));
  }
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
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  store_->Flush();
  admin_pool_.join();
  work_.reset();
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (auto& r : runners) r->ReleaseAfterStop();
  LogStats("totals");
  spdlog::info("shutdown complete");
}

}  // namespace ckpt
