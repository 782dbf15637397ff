#include "core/explanation.h"

#include <algorithm>

namespace ckpt {

std::string ShortDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms < 60'000) {
    const int64_t tenths = ms / 100;
    return tenths % 10 == 0 || ms >= 10'000
               ? std::to_string(ms / 1000) + "s"
               : std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "s";
  }
  if (ms < 3'600'000) {
    const int64_t s = ms / 1000 % 60;
    return std::to_string(ms / 60'000) + "m" + (s ? std::to_string(s) + "s" : "");
  }
  const int64_t m = ms / 60'000 % 60;
  return std::to_string(ms / 3'600'000) + "h" + (m ? std::to_string(m) + "m" : "");
}

namespace {

std::string Ago(int64_t then_ms, int64_t now_ms) {
  if (then_ms <= 0) return "since before the daemon started";
  return "for " + ShortDuration(now_ms - then_ms);
}

std::string TaskNames(const Explanation& e, size_t at_most) {
  std::string names;
  for (size_t i = 0; i < e.tasks.size() && i < at_most; ++i) {
    names += (i ? ", " : "") + e.tasks[i].task_id;
  }
  if (e.tasks_total > static_cast<int>(std::min(at_most, e.tasks.size()))) {
    names +=
        " and " + std::to_string(e.tasks_total - std::min<int>(at_most, e.tasks.size())) + " more";
  }
  return names;
}

std::string Recent(const Explanation& e) {
  if (e.recent_rounds == 0) return "no completed round yet";
  return "p95 of the last " + std::to_string(e.recent_rounds) + " rounds " +
         ShortDuration(e.recent_p95_ms);
}

}  // namespace

const char* HoldupName(Holdup holdup) {
  switch (holdup) {
    case Holdup::kNone: return "NONE";
    case Holdup::kShuttingDown: return "SHUTTING_DOWN";
    case Holdup::kPaused: return "PAUSED";
    case Holdup::kFailed: return "FAILED";
    case Holdup::kStopped: return "STOPPED";
    case Holdup::kNeverAllTasks: return "NEVER_ALL_TASKS";
    case Holdup::kTasksMissing: return "TASKS_MISSING";
    case Holdup::kRoundSlow: return "ROUND_SLOW";
    case Holdup::kRoundPending: return "ROUND_PENDING";
    case Holdup::kStoreUnwritable: return "STORE_UNWRITABLE";
    case Holdup::kWaitingForIds: return "WAITING_FOR_IDS";
    case Holdup::kWaitingMinPause: return "WAITING_MIN_PAUSE";
    case Holdup::kWaitingForPositions: return "WAITING_FOR_POSITIONS";
    case Holdup::kWaitingForGroup: return "WAITING_FOR_GROUP";
    case Holdup::kCommitting: return "COMMITTING";
    case Holdup::kCommitOverdue: return "COMMIT_OVERDUE";
    case Holdup::kWaitingForAdmission: return "WAITING_FOR_ADMISSION";
  }
  return "NONE";
}

int64_t StuckThresholdMs(int64_t recent_p95_ms, int64_t configured_ms) {
  return configured_ms > 0 ? configured_ms : std::max<int64_t>(3 * recent_p95_ms, 30'000);
}

std::string ExplainSentence(const PipelineKey& key, const Explanation& e, int64_t now_ms) {
  const std::string resume =
      "; ckptctl pipeline resume " + key.job_id + " " + key.pipeline_id + " goes on";
  switch (e.holdup) {
    case Holdup::kShuttingDown: return "the daemon is shutting down: no new checkpoints";
    case Holdup::kPaused:
      return "PAUSED " + Ago(e.state_since_ms, now_ms) + " (" + e.state_reason + ")" + resume;
    case Holdup::kFailed:
      return "FAILED " + Ago(e.state_since_ms, now_ms) + " " + e.state_reason + resume;
    case Holdup::kStopped:
      return "STOPPED " + Ago(e.state_since_ms, now_ms) + " " + e.state_reason + resume;
    case Holdup::kNeverAllTasks:
    case Holdup::kTasksMissing: {
      std::string text =
          e.holdup == Holdup::kNeverAllTasks ? "never had all its tasks: " : "waiting for tasks: ";
      text += std::to_string(e.tasks_total) + (e.tasks_total == 1 ? " task has" : " tasks have") +
              " no worker (" + TaskNames(e, 5) + ")";
      if (!e.tasks.empty()) text += " " + Ago(e.tasks.front().since_ms, now_ms);
      return text + "; no checkpoint until every task is registered";
    }
    case Holdup::kRoundSlow:
    case Holdup::kRoundPending: {
      std::string text = (e.holdup == Holdup::kRoundSlow ? "stuck: " : "") +
                         std::string(CheckpointKindName(e.pending_kind)) + " " +
                         std::to_string(e.pending_checkpoint_id) + " is waiting for ";
      if (e.tasks.empty()) {
        text += "the store to make it durable";
      } else if (e.tasks_total == 1) {
        const TaskHoldup& t = e.tasks.front();
        text += "task " + t.task_id +
                (t.worker_id.empty() ? " (held by no worker)" : " of worker " + t.worker_id);
      } else {
        text += std::to_string(e.tasks_total) + " tasks (" + TaskNames(e, 3) + ")";
      }
      text += " for " + ShortDuration(e.pending_age_ms) + " (timeout " +
              ShortDuration(e.timeout_ms) + ", " + Recent(e) + ")";
      if (!e.tasks.empty() && !e.tasks.front().worker_id.empty()) {
        const TaskHoldup& t = e.tasks.front();
        text += t.last_message_at_ms > 0 ? "; last message from " + t.worker_id + " " +
                                               ShortDuration(now_ms - t.last_message_at_ms) + " ago"
                                         : "; no message from " + t.worker_id + " yet";
      }
      return text;
    }
    case Holdup::kStoreUnwritable:
      return "the store takes no writes: checkpoints wait until it does (ckptctl status)";
    case Holdup::kWaitingForIds: return "the next checkpoint waits for the store to reserve its id";
    case Holdup::kWaitingMinPause:
      return "waiting for min pause: the next checkpoint is due in " +
             ShortDuration(std::max<int64_t>(e.next_trigger_in_ms, 0));
    case Holdup::kWaitingForPositions:
      return "waiting for positions: " + std::to_string(e.tasks_total) +
             (e.tasks_total == 1 ? " task has" : " tasks have") + " not reported position " +
             std::to_string(e.position_needed) + " yet (" + TaskNames(e, 5) +
             "); the next checkpoint waits for every task to reach it";
    case Holdup::kWaitingForGroup: {
      std::string text = "waiting for alignment group " + e.alignment_group;
      if (e.group_holding.empty()) {
        if (e.group_pending_checkpoint_id > 0) {
          return text + ": group round " + std::to_string(e.group_pending_checkpoint_id) +
                 " is with the store";
        }
        if (e.group_waiting_for_positions) {
          return text +
                 ": the next group round waits for the members' tasks to report positions "
                 "one position_interval past the last round's";
        }
        if (e.group_waiting_for_ids) return text + ": the next group round waits for its id";
        if (e.next_trigger_in_ms >= 0) {
          return text + ": the next group round is due in " + ShortDuration(e.next_trigger_in_ms);
        }
        return text;
      }
      const auto& [member, why] = e.group_holding.front();
      text += ": " + member.ToString() + " " + why;
      if (e.group_holding.size() > 1) {
        text += " (and " + std::to_string(e.group_holding.size() - 1) + " more member" +
                (e.group_holding.size() > 2 ? "s" : "") + ")";
      }
      return text;
    }
    case Holdup::kCommitting:
    case Holdup::kCommitOverdue: {
      std::string text = (e.holdup == Holdup::kCommitOverdue ? "commit overdue: checkpoint "
                                                             : "committing: checkpoint ") +
                         std::to_string(e.committing_checkpoint_id) + " is waiting for " +
                         std::to_string(e.tasks_total) + (e.tasks_total == 1 ? " task" : " tasks") +
                         " to commit (" + TaskNames(e, 3) + ") for " +
                         ShortDuration(e.commit_age_ms) + " (commit_timeout " +
                         ShortDuration(e.commit_timeout_ms) + ")";
      if (!e.tasks.empty() && e.tasks.front().worker_id.empty()) {
        text += "; " + e.tasks.front().task_id + " is held by no worker";
      }
      return text + "; no new checkpoint until it is COMMITTED";
    }
    case Holdup::kWaitingForAdmission: {
      std::string text = "queued behind " + std::to_string(e.admission_rounds_in_flight) +
                         " rounds in flight (cap ";
      if (e.admission_cap == "admission.max_inflight_bytes") {
        text += "max_inflight_bytes " + std::to_string(e.admission_cap_value) + ", " +
                std::to_string(e.admission_bytes_in_flight) + " bytes in flight)";
      } else {
        text += std::to_string(e.admission_cap_value) + ")";
      }
      if (e.admission_waiting_ahead > 0) {
        text += "; " + std::to_string(e.admission_waiting_ahead) + " waiting ahead of it";
      }
      return text;
    }
    case Holdup::kNone: break;
  }
  std::string text = "checkpointing";
  if (e.next_trigger_in_ms >= 0) {
    text += ": the next checkpoint is due in " + ShortDuration(e.next_trigger_in_ms) +
            " (interval " + ShortDuration(e.interval_ms);
    if (e.effective_interval_ms > 0 && e.effective_interval_ms != e.interval_ms) {
      // The adaptive interval stretched it: say by how much and why.
      text += ", effective " + ShortDuration(e.effective_interval_ms) + ": " +
              e.effective_interval_reason;
    }
    text += ")";
  }
  if (e.last_completed_checkpoint_id > 0) {
    text += "; the last, " + std::to_string(e.last_completed_checkpoint_id) + ", completed " +
            (e.last_completed_at_ms > 0 ? ShortDuration(now_ms - e.last_completed_at_ms) + " ago"
                                        : "before the daemon started");
  }
  return text;
}

}  // namespace ckpt
