// What Daemon serves and what it says about itself there: StartServing builds the gRPC server
// (the worker and admin services, their interceptors, grpc.health.v1 and reflection, on a port
// the daemon accepts itself) and the HTTP endpoints (/metrics, /healthz, /readyz, the web view);
// the answers those give: the gRPC health service, NotAlive, NotReady and the /metrics page.
//
// Threading: StartServing on the controlling thread, within Start. NotAlive, NotReady, ready,
// MetricsText and UpdateHealthService are called from any thread (the HTTP server's loop,
// StoreHealth's news, the takeover thread); UpdateHealthService serializes under health_mu_,
// and a reused /metrics page is kept under page_cache_mu_.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "app/admin_backend_impl.h"
#include "app/daemon.h"
#include "ckpt_version.h"
#include "common/host_port.h"
#include "config/security_sections.h"
#include "etcd/etcd_store.h"
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

// With per-pipeline series on, a rendered /metrics page serves the scrapes of this long.
constexpr auto kMetricsPageReuse = std::chrono::seconds(1);

const double kProcessStart =
    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

}  // namespace

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
  stream_queues_->Start(
      *worker_service_,
      [service = worker_service_.get()](std::unique_ptr<grpc::ServerContext> context,
                                        std::unique_ptr<StreamQueues::Stream> stream,
                                        std::shared_ptr<void> ticket) {
        service->Accept(std::move(context), std::move(stream), std::move(ticket));
      },
      [service = worker_service_.get()](std::unique_ptr<grpc::ServerContext> context,
                                        std::unique_ptr<StreamQueues::SessionStream> stream,
                                        std::shared_ptr<void> ticket) {
        service->AcceptSession(std::move(context), std::move(stream), std::move(ticket));
      });
  grpc_listener_->Start();
  if (tls_reloader_) tls_reloader_->Start();
  loop_monitor_ = std::make_unique<LoopMonitor>(shards_.AllLoops(), kLoopProbeInterval);
  heap_trimmer_ = std::make_unique<HeapTrimmer>(shards_.control(), [this] {
    return metrics_.worker_sessions_ended_total.load() + metrics_.session_calls_ended_total.load() +
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
  options.admission = &host_->admission();
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

}  // namespace ckpt
