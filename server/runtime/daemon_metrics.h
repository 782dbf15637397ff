#pragma once
// DaemonMetrics: the daemon-wide counters, gauges and histograms that /metrics exports and the
// benchmarks read. Units are in the names.
// Threading: safe for concurrent use without external synchronization (atomics), except
// trigger_delay_sample, which is set before any runner starts and constant after.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "auth/access_policy.h"
#include "core/actions.h"
#include "core/limits.h"
#include "core/types.h"

#include "metrics/histogram.h"

namespace ckpt {

struct DaemonMetrics {
  std::atomic<uint64_t> checkpoints_completed_total{0};
  std::atomic<uint64_t> checkpoints_failed_total{0};
  std::atomic<uint64_t> checkpoints_expired_total{0};
  std::atomic<uint64_t> checkpoints_aborted_total{0};  // by task loss, takeover or shutdown
  std::atomic<uint64_t> acks_total{0};
  std::atomic<uint64_t> triggers_total{0};
  std::atomic<uint64_t> checkpoints_stuck_total{0};  // rounds past their stuck threshold
  std::atomic<uint64_t> commits_overdue_total{0};    // commit phases past commit_timeout_ms
  std::atomic<uint64_t> restore_failures_total{0};   // restore_result failures of restore points
  // Stuck notices logged in the current second, and held back (StuckNoticeBudget).
  std::atomic<int64_t> stuck_log_second{0};
  std::atomic<int64_t> stuck_logged_this_second{0};
  std::atomic<uint64_t> stuck_logs_held_back{0};
  // ckptd_ignored_messages_total{reason}
  std::atomic<uint64_t> ignored_unowned_task_total{0};
  std::atomic<uint64_t> ignored_not_pending_total{0};
  std::atomic<uint64_t> ignored_duplicate_total{0};
  std::atomic<uint64_t> ignored_unknown_message_total{0};
  std::atomic<uint64_t> ignored_no_channel_total{0};
  std::atomic<int64_t> pending_checkpoints{0};  // gauge
  std::atomic<int64_t> worker_sessions{0};  // gauge: open streams (Connect streams and channels)
  std::atomic<uint64_t> worker_sessions_ended_total{0};
  // WorkerService.Session: calls open (gauge), frames read, frames written and the envelopes in
  // them.
  std::atomic<int64_t> session_calls{0};
  std::atomic<uint64_t> session_calls_ended_total{0};
  std::atomic<uint64_t> session_frames_read_total{0};
  std::atomic<uint64_t> session_frames_written_total{0};
  std::atomic<uint64_t> session_envelopes_written_total{0};
  std::atomic<int64_t> savepoint_calls{0};  // gauge: open TriggerSavepoint calls
  std::atomic<uint64_t> savepoint_calls_ended_total{0};
  std::atomic<uint64_t> admin_calls_ended_total{0};  // every AdminService call gone
  std::atomic<int64_t> store_writable{1};            // gauge: 1 while the store takes writes
  // High availability (store.backend etcd). ckptd_role{role}: 0 single, 1 leader, 2 standby.
  std::atomic<int> role{0};
  std::atomic<int64_t> leader_epoch{0};  // ckptd_leader_epoch
  // The local lease deadline (LeaseClock, ns): ckptd_etcd_lease_remaining_seconds.
  std::atomic<int64_t> lease_deadline_ns{0};
  // ckptd_worker_messages_withheld_total: not sent because the leader was past its lease deadline.
  std::atomic<uint64_t> messages_withheld_total{0};
  // ckptd_auth_denied_total{reason}: calls refused by the access policy, by DenyReason.
  std::array<std::atomic<uint64_t>, kDenyReasonCount> auth_denied_total{};
  // ckptd_tls_reload_failures_total: refreshes of the TLS files refused (a file that does not
  // load; the set in use stays). Handshake failures: MetricsPageOptions.
  std::atomic<uint64_t> tls_reload_failures_total{0};
  // ckptd_limit_refusals_total{limit}: streams and requests refused or ended at a limit.
  std::array<std::atomic<uint64_t>, kCountedLimitCount> limit_refusals_total{};
  void CountLimit(CountedLimit limit) { ++limit_refusals_total[static_cast<size_t>(limit)]; }
  // ckptd_pipelines{state}: each runner moves its one count between states on its strand, so a
  // scrape reads five atomics instead of visiting every pipeline.
  std::array<std::atomic<int64_t>, kPipelineStateCount> pipelines_by_state{};

  // ckptd_group_rounds_total{result}: alignment group rounds by GroupRoundResult.
  std::array<std::atomic<uint64_t>, 4> group_rounds_total{};

  LatencyHistogram trigger_delay;  // ckptd_trigger_delay_seconds: fire time minus due time
  // ckptd_trigger_held_seconds: how long a periodic round's predecessor (in flight, committing,
  // then min_pause) held it past the interval's due time; 0 for most rounds. The due time of
  // trigger_delay starts where this ends, so the two never count the same wait.
  LatencyHistogram trigger_held;
  LatencyHistogram checkpoint_duration;  // ckptd_checkpoint_duration_seconds: trigger to complete
  LatencyHistogram store_commit;         // ckptd_store_commit_seconds: queued to durable
  LatencyHistogram commit_duration;      // ckptd_commit_duration_seconds: complete to COMMITTED
  // The daemon's own share of a round, for wide pipelines. ckptd_round_fan_out_seconds: the
  // loop handing a trigger to every stream of its pipeline. ckptd_round_fan_in_seconds: the last
  // ack read from its stream to the `complete` handed to every stream (durable commit included).
  LatencyHistogram round_fan_out;
  // ckptd_admission_wait_seconds: how long a round ready to trigger waited in the admission line
  // (docs/PROTOCOL.md, "Admission"), ask to admitted; only rounds that asked (a cap is set).
  LatencyHistogram admission_wait;
  LatencyHistogram round_fan_in;
  // ckptd_round_fan_in_own_seconds: round_fan_in less the store's time with the round (handed
  // over to durable, as store_commit: its queue, the writer's encoding and transaction, the
  // fsync): what the pipeline's loop and its streams took.
  LatencyHistogram round_fan_in_own;

  // Empty (off) by default. The benchmarks set it to receive every periodic trigger's delay and
  // hold exactly (trigger_delay, trigger_held): the histograms' buckets are x2 apart, too coarse to
  // compare with the anchors. It runs on the pipeline's strand, from every io thread at once, so
  // it must be lock-free and not block.
  std::function<void(int64_t delay_micros, int64_t held_micros)> trigger_delay_sample;

  void CountIgnored(IgnoredReason reason) { ++IgnoredTotal(reason); }
  std::atomic<uint64_t>& IgnoredTotal(IgnoredReason reason) {
    switch (reason) {
      case IgnoredReason::kUnownedTask: return ignored_unowned_task_total;
      case IgnoredReason::kNotPending: return ignored_not_pending_total;
      case IgnoredReason::kDuplicate: return ignored_duplicate_total;
      case IgnoredReason::kUnknownMessage: return ignored_unknown_message_total;
      case IgnoredReason::kNoChannel: return ignored_no_channel_total;
    }
    return ignored_unknown_message_total;
  }
  const std::atomic<uint64_t>& IgnoredTotal(IgnoredReason reason) const {
    return const_cast<DaemonMetrics*>(this)->IgnoredTotal(reason);
  }
};

}  // namespace ckpt
