#include "app/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "app/admin_backend_impl.h"
#include "app/store_factory.h"
#include "ckpt_version.h"
#include "common/exit_codes.h"
#include "common/host_port.h"
#include "config/reload_rules.h"
#include "config/security_sections.h"
#include "config/store_section.h"
#include "core/printable.h"
#include "etcd/etcd_election.h"
#include "etcd/etcd_store.h"
#include "ha/exit_policy.h"
#include "ha/takeover.h"
#include "http/metrics_server.h"
#include "rpc/admin_service.h"
#include "rpc/audit_interceptor.h"
#include "rpc/gatekeeper.h"
#include "rpc/grpc_listener.h"
#include "rpc/grpc_log_bridge.h"
#include "rpc/tls_credentials.h"
#include "rpc/worker_service.h"
#include "runtime/heap_trimmer.h"
#include "runtime/loop_monitor.h"
#include "runtime/metrics_page.h"
#include "web/web_view.h"

namespace ckpt {

namespace {

// The gRPC services whose health grpc.health.v1 reports by name ("" is the whole server).
constexpr const char* kHealthServices[] = {"ckpt.v1.WorkerService", "ckpt.v1.AdminService"};

// /healthz: every event loop is probed this often, and one whose probe has not run for
// kLoopStallAfter is wedged (a liveness probe should restart the daemon).
constexpr auto kLoopProbeInterval = std::chrono::milliseconds(1000);
constexpr auto kLoopStallAfter = std::chrono::seconds(10);

// Completion queues for the worker streams, a thread each (rpc/stream_queues.h): every completion
// scans the tags outstanding on its queue (Debian's gRPC), about one per stream, so more queues
// mean shorter scans under more locks. The threads mostly sleep; four keep a scan at 20,000
// streams to a quarter of one queue's.
constexpr size_t kWorkerStreamQueues = 4;

// A connection with calls but no traffic for this long is pinged; one whose ping is not answered
// within the timeout is closed (its streams end, their tasks are released).
constexpr std::chrono::milliseconds kKeepaliveTime = std::chrono::seconds(30);
constexpr std::chrono::milliseconds kKeepaliveTimeout = std::chrono::seconds(10);

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

Status Daemon::StartServing() {
  // The copies of the TLS files gRPC reads live in data_dir (rpc/tls_credentials.h).
  auto credentials = MakeListenCredentials(config_.tls, config_.data_dir + "/tls",
                                           metrics_.tls_reload_failures_total);
  if (!credentials.ok()) return credentials.status();
  tls_reloader_ = std::move(credentials->reloader);
  if (config_.insecure) {
    const std::string exposure = ExposureProblem(config_.listen, config_.tls, config_.auth, false);
    if (!exposure.empty()) {
      spdlog::warn(
          "insecure: true: serving {} without {}; anyone who reaches the port may act "
          "as any worker and operator",
          config_.listen,
          !config_.tls.enabled && !config_.auth.enabled ? "TLS and auth"
          : !config_.tls.enabled                        ? "TLS"
                                                        : "auth");
    }
  }
  if (auto http = ParseHostPort(config_.metrics_listen); http.ok() && !IsLoopbackHost(http->host)) {
    spdlog::warn(
        "metrics_listen {} is reachable from other machines; /metrics, /healthz, /readyz{} have "
        "no authentication (docs/SECURITY.md)",
        config_.metrics_listen, WebViewOn(config_) ? " and the web view" : "");
  }
  gatekeeper_ = std::make_unique<Gatekeeper>(config_.auth, metrics_, leadership_);
  if (config_.auth.enabled) {
    spdlog::info("auth: {} principal(s); tls: {}", config_.auth.principals.size(),
                 config_.tls.enabled
                     ? std::string("client_auth ") + ClientAuthName(config_.tls.client_auth)
                     : std::string("off"));
  }
  worker_service_ = std::make_unique<WorkerServiceImpl>(SessionDeps{
      host_->registry(), metrics_, shards_, config_.lease_ttl_ms, config_.hello_timeout_ms,
      *gatekeeper_, config_.limits, leadership_, &host_->quarantine()});
  admin_backend_ = std::make_unique<DaemonAdminBackend>(*host_, *store_, metrics_, [this] {
    return AdminBackend::Facts{uptime_ms(), host_->registry().size(), shards_.size(),
                               config_.data_dir, leadership_.view()};
  });
  admin_call_limit_ = std::make_unique<AdminCallLimit>(metrics_.admin_calls_ended_total);
  admin_service_ = std::make_unique<AdminServiceImpl>(*admin_backend_, *gatekeeper_, config_.limits,
                                                      *admin_call_limit_);
  web_view_ = std::make_unique<WebView>(*admin_backend_, shards_.control());
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
          credentials->credentials),
      config_.limits.max_connections, config_.limits.max_connections_per_peer,
      [this](bool per_peer) {
        metrics_.CountLimit(per_peer ? CountedLimit::kMaxConnectionsPerPeer
                                     : CountedLimit::kMaxConnections);
      });
  if (Status s = grpc_listener_->Listen(config_.listen); !s.ok()) return s;
  grpc_port_ = grpc_listener_->port();
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.limits.max_message_bytes));
  // Connections that carry nothing are closed, handshakes that do not finish are given up, and
  // connections with calls are pinged while quiet (a peer gone without a FIN is found out).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config_.limits.connection_idle_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config_.limits.handshake_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(kKeepaliveTime.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(kKeepaliveTimeout.count()));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(admin_call_limit_->MakeFactory());
  interceptors.push_back(std::make_unique<AuditInterceptorFactory>(*gatekeeper_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(worker_service_.get());
  builder.RegisterService(admin_service_.get());
  stream_queues_ = std::make_unique<StreamQueues>(builder, kWorkerStreamQueues);
  server_ = builder.BuildAndStart();
  if (!server_) return Status::Unavailable("the gRPC server did not start (see gRPC's log above)");
  stream_queues_->Start(*worker_service_, [service = worker_service_.get()](
                                              std::unique_ptr<grpc::ServerContext> context,
                                              std::unique_ptr<StreamQueues::Stream> stream,
                                              std::shared_ptr<void> ticket) {
    service->Accept(std::move(context), std::move(stream), std::move(ticket));
  });
  grpc_listener_->Start();
  if (tls_reloader_) tls_reloader_->Start();
  loop_monitor_ = std::make_unique<LoopMonitor>(shards_.AllLoops(), kLoopProbeInterval);
  heap_trimmer_ = std::make_unique<HeapTrimmer>(shards_.control(), [this] {
    return metrics_.worker_sessions_ended_total.load() +
           metrics_.savepoint_calls_ended_total.load() + metrics_.admin_calls_ended_total.load();
  });
  // Until every port accepts (and on a standby, until it leads): NOT_SERVING, by name too. The
  // default service starts SERVING and would say so too early; a name never set is NOT_FOUND.
  if (auto* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(false);
    for (const char* service : kHealthServices) health->SetServingStatus(service, false);
  }
  if (!config_.metrics_listen.empty()) {
    HttpEndpoints endpoints;
    endpoints.metrics = [this] { return MetricsText(); };
    endpoints.not_alive = [this] { return NotAlive(); };
    endpoints.not_ready = [this] { return NotReady(); };
    endpoints.pages = [this](std::string_view method, std::string_view target,
                             std::function<void(HttpReply)> answer) {
      if (!web_view_on_.load()) {
        HttpReply off;
        off.status = 404;
        off.body =
            "the web view is off (metrics.web_view: false, or unset with auth on or "
            "metrics_listen off loopback); /metrics, /healthz and /readyz are served\n";
        return answer(std::move(off));
      }
      web_view_->Serve(method, target, std::move(answer));
    };
    metrics_server_ = std::make_unique<MetricsServer>(shards_.control(), std::move(endpoints));
    if (Status s = metrics_server_->Listen(config_.metrics_listen); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Daemon::StartCampaign() {
  auto client = EtcdClient::Create(config_.etcd);
  if (!client.ok()) return client.status();
  std::shared_ptr<EtcdClient> etcd = std::move(*client);
  if (!etcd->WaitConnected(std::chrono::milliseconds(config_.etcd.dial_timeout_ms))) {
    // Not fatal: the campaign retries until etcd answers, as a standby that says why.
    spdlog::warn("etcd {} not reachable within dial_timeout_ms {}; standing by and retrying",
                 etcd->endpoints_text(), config_.etcd.dial_timeout_ms);
  }
  leadership_.StandBy();
  metrics_.role = 2;
  ElectionCallbacks callbacks;
  callbacks.on_leader_seen = [this](const std::string& address, int64_t epoch) {
    if (leadership_.role() != Leadership::Role::kStandby) return;
    metrics_.leader_epoch = epoch;
    if (!leadership_.SetLeaderSeen(address, epoch)) {
      // The election rule passes such keys over, so this is a belt to its braces: no client is
      // sent there, and the trailer is left out (ha/leadership.h).
      spdlog::warn(
          "etcd: the leader (epoch {}) advertises {}, which is no address a client can be "
          "sent to; clients are told no leader until it changes",
          epoch, Printable(address));
    } else if (address.empty()) {
      spdlog::info("etcd: no leader now; campaigning");
    } else {
      spdlog::info("etcd: {} leads (epoch {}); standing by", address, epoch);
    }
  };
  callbacks.on_deadline = [this](LeaseClock::time_point until) {
    metrics_.lease_deadline_ns = until.time_since_epoch().count();  // the deadline is the lease's
  };
  callbacks.on_elected = [this](const std::string& key, int64_t epoch) {
    // Off the election's thread, which must keep the lease alive while the load runs.
    MutexLock lock(takeover_mu_);
    if (shutting_down_) return;
    takeover_thread_ = std::thread([this, key, epoch] { TakeOver(key, epoch); });
  };
  // Never back to standby in-process: stop at once; systemd starts a standby.
  callbacks.on_lost = [](const std::string& why) { ExitFor(EtcdOutcome::kFencedOut, why); };
  election_ = std::make_unique<EtcdElection>(etcd, config_.advertise, std::move(callbacks),
                                             &leadership_.lease());
  GroupCommitOptions store_options;
  store_options.writer_nice = config_.store_writer_nice;
  auto store = EtcdStore::Create(
      etcd, [this] { return leadership_.lease().Confirmed(); }, std::move(store_options));
  // Until it leads: a copy of the prefix kept warm by a watch, for a quick takeover.
  store->backend().StartWarming();
  etcd_store_ = store.get();
  store_ = std::move(store);
  return Status::Ok();
}

void Daemon::TakeOver(const std::string& leader_key, int64_t epoch) {
  const auto began = std::chrono::steady_clock::now();
  MutexLock declared_lock(declared_mu_);  // a reload meanwhile waits, then applies to these
  TakeoverSteps steps;
  // Every write from here on carries the fence; the load reads at a revision after the leader
  // key's creation (a linearizable range), so it sees every write of earlier leaders.
  steps.fence = [&] { etcd_store_->backend().SetFence(leader_key, epoch); };
  // A setting above what the members take would have etcd refuse every full batch; found here
  // it is a configuration error, said before serving.
  steps.check = [&] { return etcd_store_->backend().CheckTxnLimit(); };
  steps.load = [&] {
    declared_mu_.AssertHeld();  // taken above, for the whole sequence
    return host_->Load(declared_, declared_restore_from_, declared_groups_, kReloadWait);
  };
  // Loaded runners bumped their generations and reserve fresh id blocks before their first
  // trigger (restart semantics): from now on this daemon serves.
  steps.serve = [&] {
    leadership_.BecomeLeader(config_.advertise, epoch);
    metrics_.role = 1;
    metrics_.leader_epoch = epoch;
    ready_ = true;
    UpdateHealthService();
  };
  RunTakeover(steps);
  spdlog::info("leading as epoch {}: {} pipeline(s) loaded in {} ms; serving on port {}", epoch,
               host_->registry().size(),
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - began)
                   .count(),
               grpc_port_);
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
  if (leadership_.role() == Leadership::Role::kStandby) {
    const auto view = leadership_.view();
    return "standby: " + (view.leader_address.empty() ? std::string("no leader known yet")
                                                      : view.leader_address + " leads");
  }
  if (!ready_.load()) return "starting or shutting down";
  if (!leadership_.MaySendToWorkers()) {
    return "leader, but etcd has not confirmed the lease in time (past its local deadline)";
  }
  if (host_ && !host_->store_writable()) {
    const std::string why = host_->why_store_not_writable();
    return "the store fails writes" + (why.empty() ? std::string() : " (" + why + ")");
  }
  return NotAlive();
}

bool Daemon::ready() const { return NotReady().empty(); }

void Daemon::UpdateHealthService() {
  MutexLock lock(health_mu_);
  if (!ready_.load()) return;  // not serving yet, or shutting down: health stays as it is
  // The store's state now, not the one a caller was told about: calls may cross.
  const bool serving = host_->store_writable();
  if (auto* health = server_ ? server_->GetHealthCheckService() : nullptr) {
    health->SetServingStatus(serving);
    for (const char* service : kHealthServices) health->SetServingStatus(service, serving);
  }
}

std::string Daemon::MetricsText() const {
  MetricsPageOptions options;
  // gRPC reports failed handshakes only in its log (rpc/grpc_log_bridge.h): this process's.
  options.tls_handshake_failures = TlsHandshakeFailures();
  options.store_unreadable_records = host_->quarantine().records();
  if (etcd_store_ && leadership_.role() == Leadership::Role::kStandby) {
    options.store_unreadable_records = etcd_store_->backend().unreadable_seen_by_standby();
  }
  options.version = kCkptVersion;
  options.per_pipeline = per_pipeline_metrics_.load();
  options.start_time_seconds = kProcessStart;
  if (etcd_store_) {
    options.etcd = true;
    options.etcd_transactions = etcd_store_->backend().txns_committed();
    options.etcd_transactions_resent = etcd_store_->backend().txns_resent();
  }
  if (!options.per_pipeline) return RenderMetricsPage(metrics_, host_->registry(), options);
  // With a series set per pipeline a page is megabytes at 100,000 pipelines: scrapes within
  // kMetricsPageReuse of one another share one rendering, so that several scrapers cost what one
  // does. (The page is rendered on the control loop, never on a pipeline's.)
  MutexLock lock(page_cache_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (page_cache_.empty() || now - page_cache_at_ >= kMetricsPageReuse) {
    page_cache_ = RenderMetricsPage(metrics_, host_->registry(), options);
    page_cache_at_ = now;
  }
  return page_cache_;
}

ReloadResult Daemon::Reload(const DaemonConfig& next) {
  // One table says what a reload applies (config/reload_rules.h); what it does not apply stays
  // as it runs, and so does everything that depends on it.
  std::vector<std::string> needs_restart;
  for (const RestartOnlyChange& change : RestartOnlyChanges(in_force_, next)) {
    if (change.running.empty() && change.wanted.empty()) {
      spdlog::warn("reload: {} changed; needs a restart, keeping the running one", change.key);
    } else {
      spdlog::warn("reload: {} changed ({} -> {}); needs a restart, keeping {}", change.key,
                   change.running, change.wanted, change.running);
    }
    needs_restart.push_back(change.key);
  }
  const DaemonConfig in_force = InForceAfterReload(in_force_, next);
  in_force_ = in_force;
  if (!(gatekeeper_->policy()->spec() == in_force.auth)) {
    gatekeeper_->SetPolicy(in_force.auth);
    spdlog::info(
        "reload: auth policy replaced: {} principal(s); new calls and hellos are judged by it, "
        "and streams of principals it refuses are ended",
        in_force.auth.principals.size());
    // Streams already registered answer to the new policy too: a removed or narrowed principal
    // (a leaked certificate, a moved team) loses its streams now, not at its next reconnect.
    // Each pipeline checks its own sessions on its strand.
    auto policy = gatekeeper_->policy();
    for (const auto& runner : host_->registry().All()) {
      runner->EndSessionsRefused(
          [policy](const std::string& principal, const std::string& job) -> std::optional<Status> {
            if (auto refusal = policy->CheckRegistered(principal, job)) return refusal->status;
            return std::nullopt;
          });
    }
  }

  if (next.log_level != log_level_) {
    spdlog::info("reload: log.level {} -> {}", log_level_, next.log_level);
    spdlog::set_level(spdlog::level::from_str(next.log_level));
    log_level_ = next.log_level;
  }
  if (next.metrics_per_pipeline != per_pipeline_metrics_.load()) {
    spdlog::info("reload: metrics.per_pipeline -> {}", next.metrics_per_pipeline);
    per_pipeline_metrics_ = next.metrics_per_pipeline;
  }
  // Of the configuration in force: its default follows the auth and metrics_listen that run.
  if (WebViewOn(in_force) != web_view_on_.load()) {
    spdlog::info("reload: the web view is now {}", WebViewOn(in_force) ? "on" : "off");
    web_view_on_ = WebViewOn(in_force);
  }
  const PipelineDefaults defaults = host_->defaults();
  if (!(next.defaults.interval_ms == defaults.interval_ms &&
        next.defaults.timeout_ms == defaults.timeout_ms &&
        next.defaults.min_pause_ms == defaults.min_pause_ms &&
        next.defaults.tolerable_failures == defaults.tolerable_failures &&
        next.defaults.retained == defaults.retained)) {
    spdlog::info(
        "reload: pipeline defaults changed; they apply to pipelines created from now on "
        "and to declared ones");
  }
  host_->SetDefaults(next.defaults);

  MutexLock declared_lock(declared_mu_);
  declared_ = next.pipelines;
  declared_restore_from_ = next.pipeline_restore_from;
  declared_groups_ = next.alignment_groups;
  if (!leadership_.serving()) {
    // A standby has no pipelines to change: the list is kept and loaded at takeover.
    ReloadResult kept;
    kept.needs_restart = std::move(needs_restart);
    spdlog::info(
        "reload done on a standby: {} declared pipeline(s) kept for the takeover; {} "
        "key(s) need a restart",
        declared_.size(), kept.needs_restart.size());
    return kept;
  }
  if (int failed = host_->groups().ApplyDeclared(next.alignment_groups, kReloadWait); failed > 0) {
    spdlog::error("reload: {} alignment group(s) of the config file not applied", failed);
  }
  ReloadResult result =
      host_->ApplyDeclared(next.pipelines, kReloadWait, next.pipeline_restore_from);
  result.needs_restart = std::move(needs_restart);
  spdlog::info(
      "reload done: {} pipeline(s) created, {} updated, {} unchanged, {} left alone (created "
      "through the API), {} no longer declared, {} failed; {} key(s) need a restart",
      result.created, result.updated, result.unchanged, result.left_alone, result.undeclared,
      result.failed, result.needs_restart.size());
  return result;
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

void Daemon::CancelReload() {
  reload_cancelled_ = true;
  if (host_) host_->CancelApplyDeclared();
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

}  // namespace ckpt
