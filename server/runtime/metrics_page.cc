#include "runtime/metrics_page.h"

#include <algorithm>

#include "common/lease_clock.h"
#include "core/group_coordinator.h"
#include "metrics/prometheus_text.h"
#include "runtime/process_stats.h"

namespace ckpt {
namespace {

constexpr PipelineState kStates[] = {PipelineState::kWaitingForTasks, PipelineState::kRunning,
                                     PipelineState::kPaused,          PipelineState::kFailed,
                                     PipelineState::kStopped,         PipelineState::kUnreadable};

double Load(const std::atomic<uint64_t>& a) {
  return static_cast<double>(a.load(std::memory_order_relaxed));
}
double Load(const std::atomic<int64_t>& a) {
  return static_cast<double>(a.load(std::memory_order_relaxed));
}

void RenderPerPipeline(const Registry& registry, PrometheusText& out) {
  auto runners = registry.All();
  // Sorted, so that a page reads the same from one scrape to the next.
  std::sort(runners.begin(), runners.end(),
            [](const auto& a, const auto& b) { return a->key() < b->key(); });
  struct Series {
    const char* name;
    const char* help;
    const std::atomic<uint64_t> PipelineMetrics::*member;
  };
  const Series counters[] = {
      {"ckptd_pipeline_checkpoints_completed_total",
       "Checkpoints and savepoints completed (durable), by pipeline.",
       &PipelineMetrics::checkpoints_completed_total},
      {"ckptd_pipeline_checkpoints_failed_total",
       "Checkpoints failed (declined, store failure), by pipeline.",
       &PipelineMetrics::checkpoints_failed_total},
      {"ckptd_pipeline_checkpoints_expired_total",
       "Checkpoints expired (not acknowledged in time), by pipeline.",
       &PipelineMetrics::checkpoints_expired_total},
  };
  for (const Series& series : counters) {
    out.Family(series.name, "counter", series.help);
    for (const auto& runner : runners) {
      const PipelineMetrics& m = runner->pipeline_metrics();
      out.Sample(series.name,
                 {{"job_id", runner->key().job_id}, {"pipeline_id", runner->key().pipeline_id}},
                 Load(m.*series.member));
    }
  }
  out.Family("ckptd_pipeline_state", "gauge",
             "1 for the state the pipeline is in, 0 for the others.");
  for (const auto& runner : runners) {
    const int state = runner->pipeline_metrics().state.load(std::memory_order_relaxed);
    for (PipelineState s : kStates) {
      out.Sample("ckptd_pipeline_state",
                 {{"job_id", runner->key().job_id},
                  {"pipeline_id", runner->key().pipeline_id},
                  {"state", PipelineStateName(s)}},
                 static_cast<int>(s) == state ? 1 : 0);
    }
  }
  out.Family("ckptd_pipeline_pending_checkpoints", "gauge",
             "1 while the pipeline has a checkpoint or savepoint pending.");
  for (const auto& runner : runners) {
    out.Sample("ckptd_pipeline_pending_checkpoints",
               {{"job_id", runner->key().job_id}, {"pipeline_id", runner->key().pipeline_id}},
               runner->pipeline_metrics().pending.load(std::memory_order_relaxed) ? 1 : 0);
  }
  out.Family("ckptd_pipeline_last_completed_timestamp_seconds", "gauge",
             "When the pipeline's last checkpoint completed (Unix time); 0 if never.");
  for (const auto& runner : runners) {
    const int64_t ms =
        runner->pipeline_metrics().last_completed_at_ms.load(std::memory_order_relaxed);
    out.Sample("ckptd_pipeline_last_completed_timestamp_seconds",
               {{"job_id", runner->key().job_id}, {"pipeline_id", runner->key().pipeline_id}},
               static_cast<double>(ms) / 1000.0);
  }
}

// The standard process_* metrics (the names every Prometheus client library uses).
void RenderProcessStats(const ProcessStats& p, PrometheusText& out) {
  if (p.cpu_seconds) {
    out.Counter("process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
                *p.cpu_seconds);
  }
  if (p.resident_bytes) {
    out.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
              static_cast<double>(*p.resident_bytes));
  }
  if (p.virtual_bytes) {
    out.Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
              static_cast<double>(*p.virtual_bytes));
  }
  if (p.open_fds) {
    out.Gauge("process_open_fds", "Open file descriptors.", static_cast<double>(*p.open_fds));
  }
  if (p.max_fds) {
    out.Gauge("process_max_fds", "The limit of open file descriptors (soft RLIMIT_NOFILE).",
              static_cast<double>(*p.max_fds));
  }
  if (p.threads) {
    out.Gauge("process_threads", "OS threads of the process.", static_cast<double>(*p.threads));
  }
}

}  // namespace

std::string RenderMetricsPage(const DaemonMetrics& m, const Registry& registry,
                              const MetricsPageOptions& options) {
  PrometheusText out;
  out.Counter("ckptd_checkpoints_completed_total",
              "Checkpoints and savepoints completed: acknowledged by every task and durable.",
              Load(m.checkpoints_completed_total));
  out.Counter("ckptd_checkpoints_failed_total",
              "Checkpoints failed: declined by a task, or the store could not write them.",
              Load(m.checkpoints_failed_total));
  out.Counter("ckptd_checkpoints_expired_total",
              "Checkpoints expired: not acknowledged by every task within timeout_ms.",
              Load(m.checkpoints_expired_total));
  out.Counter("ckptd_checkpoints_aborted_total",
              "Checkpoints aborted by a lost task, a takeover, a task-set change, shutdown or "
              "deletion (not counted as failures).",
              Load(m.checkpoints_aborted_total));
  out.Counter("ckptd_triggers_total", "Checkpoint and savepoint rounds triggered.",
              Load(m.triggers_total));
  out.Counter("ckptd_checkpoints_stuck_total",
              "Rounds that stayed pending past their stuck threshold (stuck_threshold_ms), once "
              "each; `ckptctl pipeline why` says what holds them.",
              Load(m.checkpoints_stuck_total));
  out.Counter("ckptd_commits_overdue_total",
              "Commit phases still COMMITTING past their commit_timeout_ms, once each (never "
              "aborted); `ckptctl pipeline why` names the tasks that have not committed.",
              Load(m.commits_overdue_total));
  out.Counter("ckptd_restore_failures_total",
              "Restore points a task failed to restore (restore_result not ok), once each: "
              "marked unrestorable, and the pipeline fell back to an older checkpoint or FAILED.",
              Load(m.restore_failures_total));
  out.Counter("ckptd_acks_total", "Acknowledgements received from tasks.", Load(m.acks_total));

  out.Family("ckptd_ignored_messages_total", "counter",
             "Worker messages ignored, by reason: unowned_task (a task this stream did not "
             "register), not_pending (for a round that is not pending), duplicate, "
             "unknown_message, no_channel (on a Session channel not in use).");
  for (IgnoredReason reason : kIgnoredReasons) {
    out.Sample("ckptd_ignored_messages_total", {{"reason", IgnoredReasonLabel(reason)}},
               Load(m.IgnoredTotal(reason)));
  }

  out.Family("ckptd_group_rounds_total", "counter",
             "Alignment group rounds ended, by result: completed (one commit for every member), "
             "failed (a member's task declined, or the store failed the commit), expired (the "
             "group's timeout), aborted (a task lost, a member left or was not ready).");
  static constexpr std::pair<GroupRoundResult, const char*> kGroupResults[] = {
      {GroupRoundResult::kCompleted, "completed"},
      {GroupRoundResult::kFailed, "failed"},
      {GroupRoundResult::kExpired, "expired"},
      {GroupRoundResult::kAborted, "aborted"}};
  for (const auto& [result, label] : kGroupResults) {
    out.Sample("ckptd_group_rounds_total", {{"result", label}},
               Load(m.group_rounds_total[static_cast<size_t>(result)]));
  }

  out.Family("ckptd_auth_denied_total", "counter",
             "Calls refused by the access policy, by reason: no_credentials, unknown_identity, "
             "unknown_token, plaintext_token (UNAUTHENTICATED); role, job, takeover "
             "(PERMISSION_DENIED).");
  for (size_t i = 0; i < kDenyReasonCount; ++i) {
    out.Sample("ckptd_auth_denied_total", {{"reason", DenyReasonLabel(static_cast<DenyReason>(i))}},
               Load(m.auth_denied_total[i]));
  }
  out.Gauge("ckptd_store_unreadable_records",
            "Stored records that could not be read (each quarantines its pipeline or group), "
            "and keys under the store that no ckptd writes; on a standby, those its watch saw.",
            static_cast<double>(options.store_unreadable_records));
  out.Counter("ckptd_tls_reload_failures_total",
              "Refreshes of the TLS files refused because a file did not load (the set in use "
              "stays).",
              Load(m.tls_reload_failures_total));
  out.Counter("ckptd_tls_handshake_failures_total", "TLS handshakes on the gRPC port that failed.",
              static_cast<double>(options.tls_handshake_failures));
  out.Family("ckptd_limit_refusals_total", "counter",
             "Pipelines, streams and worker savepoint requests refused or ended at a configured "
             "limit, by the limit's key.");
  for (size_t i = 0; i < kCountedLimitCount; ++i) {
    out.Sample("ckptd_limit_refusals_total",
               {{"limit", CountedLimitLabel(static_cast<CountedLimit>(i))}},
               Load(m.limit_refusals_total[i]));
  }

  out.Family("ckptd_checkpoint_duration_seconds", "histogram",
             "Time from a checkpoint's trigger to its completion (durable).");
  out.Histogram("ckptd_checkpoint_duration_seconds", {}, m.checkpoint_duration.Take());
  out.Family("ckptd_trigger_delay_seconds", "histogram",
             "Scheduling delay: actual trigger time minus due time.");
  out.Histogram("ckptd_trigger_delay_seconds", {}, m.trigger_delay.Take());
  out.Family("ckptd_trigger_held_seconds", "histogram",
             "Periodic rounds: how long the round before (in flight or committing, then "
             "min_pause) held a round past its interval's due time.");
  out.Histogram("ckptd_trigger_held_seconds", {}, m.trigger_held.Take());
  out.Family("ckptd_store_commit_seconds", "histogram",
             "Time from handing a completed checkpoint to the store to its commit (fsync "
             "included).");
  out.Histogram("ckptd_store_commit_seconds", {}, m.store_commit.Take());
  out.Family("ckptd_commit_duration_seconds", "histogram",
             "Commit phase: time from a checkpoint's `complete` to its durable COMMITTED mark "
             "(every task committed).");
  out.Histogram("ckptd_commit_duration_seconds", {}, m.commit_duration.Take());
  out.Family("ckptd_round_fan_out_seconds", "histogram",
             "Time the daemon takes to hand a round's trigger to every worker stream of its "
             "pipeline.");
  out.Histogram("ckptd_round_fan_out_seconds", {}, m.round_fan_out.Take());
  out.Family("ckptd_round_fan_in_seconds", "histogram",
             "Time from reading a round's last ack to handing its complete to every worker "
             "stream (the durable commit included); alignment group rounds are not counted.");
  out.Histogram("ckptd_round_fan_in_seconds", {}, m.round_fan_in.Take());
  out.Family("ckptd_round_fan_in_own_seconds", "histogram",
             "The fan-in less the store's time with the round (handed over to durable: its "
             "queue, the writer's encoding and transaction, the fsync): the pipeline's loop "
             "and its streams.");
  out.Histogram("ckptd_round_fan_in_own_seconds", {}, m.round_fan_in_own.Take());

  out.Gauge("ckptd_pending_checkpoints",
            "Checkpoints and savepoints pending now (triggered, not "
            "finished).",
            Load(m.pending_checkpoints));
  // Admission (docs/PROTOCOL.md, "Admission"). Without a cap rounds are not admitted one by
  // one: the rounds in flight are then the pending ones, and their bytes are not predicted.
  const RoundAdmission* admission = options.admission;
  const bool admitting = admission && admission->enabled();
  out.Gauge(
      "ckptd_rounds_in_flight",
      "Rounds in flight (triggered, not ended), as admission counts them: an alignment "
      "group's round counts as its members.",
      admitting ? static_cast<double>(admission->rounds_in_flight()) : Load(m.pending_checkpoints));
  out.Gauge("ckptd_inflight_state_bytes",
            "Predicted bytes of the rounds in flight (each pipeline's last completed size); 0 "
            "while admission has no cap.",
            admitting ? static_cast<double>(admission->bytes_in_flight()) : 0.0);
  out.Gauge("ckptd_rounds_waiting", "Rounds ready to trigger, waiting for admission.",
            admission ? static_cast<double>(admission->rounds_waiting()) : 0.0);
  out.Family("ckptd_admission_wait_seconds", "histogram",
             "How long a round ready to trigger waited for admission (while a cap is set).");
  out.Histogram("ckptd_admission_wait_seconds", {}, m.admission_wait.Take());
  out.Counter("ckptd_rounds_deferred_total",
              "Rounds that had to wait for admission (a cap was full when they became ready).",
              admission ? static_cast<double>(admission->deferred_total()) : 0.0);
  out.Family("ckptd_pipelines", "gauge", "Pipelines by state.");
  for (PipelineState s : kStates) {
    out.Sample("ckptd_pipelines", {{"state", PipelineStateName(s)}},
               Load(m.pipelines_by_state[static_cast<size_t>(s)]));
  }
  out.Gauge("ckptd_worker_sessions",
            "Open worker streams: Connect streams and the channels of Session calls.",
            Load(m.worker_sessions));
  out.Gauge("ckptd_worker_session_calls", "Open WorkerService.Session calls.",
            Load(m.session_calls));
  out.Counter("ckptd_session_frames_read_total", "Frames read from WorkerService.Session calls.",
              Load(m.session_frames_read_total));
  out.Counter("ckptd_session_frames_written_total",
              "Frames written to WorkerService.Session calls.",
              Load(m.session_frames_written_total));
  out.Counter("ckptd_session_envelopes_written_total",
              "Envelopes in the frames written to Session calls (over the frames: the batching).",
              Load(m.session_envelopes_written_total));
  out.Gauge("ckptd_savepoint_calls",
            "TriggerSavepoint calls open now (operators waiting for a savepoint).",
            Load(m.savepoint_calls));
  out.Gauge("ckptd_store_writable",
            "1 while the store takes writes; 0 while they fail (disk full, read-only): triggers "
            "are held and the daemon reports not ready.",
            Load(m.store_writable));

  out.Family("ckptd_role", "gauge",
             "1 for the role this daemon plays: single (embedded store), leader or standby "
             "(store.backend etcd).");
  static constexpr const char* kRoles[] = {"single", "leader", "standby"};
  for (int r = 0; r < 3; ++r) {
    out.Sample("ckptd_role", {{"role", kRoles[r]}}, m.role.load() == r ? 1 : 0);
  }
  out.Gauge("ckptd_leader_epoch",
            "The epoch of the leadership this daemon serves under or sees (0: embedded store).",
            Load(m.leader_epoch));
  if (m.role.load() == 1) {
    const int64_t left_ns =
        m.lease_deadline_ns.load() - LeaseClock::now().time_since_epoch().count();
    out.Gauge("ckptd_etcd_lease_remaining_seconds",
              "Time left before the leader's local lease deadline; below 0 the leader sends "
              "workers nothing and writes nothing until etcd confirms its lease.",
              static_cast<double>(left_ns) / 1e9);
  }
  if (options.etcd) {
    out.Counter("ckptd_etcd_transactions_total",
                "Transactions this daemon committed to etcd as leader: one a batch of writes, "
                "more when a batch passes etcd's limits.",
                static_cast<double>(options.etcd_transactions));
    out.Counter("ckptd_etcd_transactions_resent_total",
                "Transactions sent again because etcd lost the first copy's answer (a member "
                "died with it); the write cursor made sure each landed once.",
                static_cast<double>(options.etcd_transactions_resent));
  }
  out.Counter("ckptd_worker_messages_withheld_total",
              "Messages not sent to workers because the leader was past its local lease "
              "deadline.",
              Load(m.messages_withheld_total));

  out.Family("ckptd_build_info", "gauge", "Always 1; the labels name the build.");
  out.Sample("ckptd_build_info", {{"version", options.version}}, 1);
  out.Gauge("process_start_time_seconds", "When the process started (Unix time).",
            options.start_time_seconds);
  RenderProcessStats(ReadProcessStats(), out);

  if (options.per_pipeline) RenderPerPipeline(registry, out);
  return out.Take();
}

}  // namespace ckpt
