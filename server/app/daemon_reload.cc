// Daemon::Reload (SIGHUP) and CancelReload: what a freshly read config changes while the daemon
// runs (config/reload_rules.h says which keys apply and which need a restart): the access policy
// (and the streams it now refuses), log.level, metrics.per_pipeline, the web view, the pipeline
// defaults, and the declared alignment groups and pipelines (kept for the takeover on a standby).
//
// Threading: Reload on the controlling thread or main's ReloadThread, never beside another
// Reload; it blocks for at most kReloadWait, or until CancelReload (any thread).
#include <spdlog/spdlog.h>

#include "app/daemon.h"
#include "app/daemon_internal.h"
#include "config/reload_rules.h"
#include "rpc/gatekeeper.h"

namespace ckpt {

using daemon_internal::kReloadWait;

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
  if (!(next.admission == host_->admission().caps())) {
    spdlog::info("reload: admission max_concurrent_rounds {} max_inflight_bytes {} (0: no cap)",
                 next.admission.max_concurrent_rounds, next.admission.max_inflight_bytes);
    host_->admission().SetCaps(next.admission);
  }

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

void Daemon::CancelReload() {
  reload_cancelled_ = true;
  if (host_) host_->CancelApplyDeclared();
}

}  // namespace ckpt
