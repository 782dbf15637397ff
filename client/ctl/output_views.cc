#include "ctl/output_views.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "ctl/durations.h"
#include "ctl/output_table.h"
#include "views/enum_names.h"
#include "views/task_order.h"

namespace ckpt::ctl {
namespace {

std::string Key(const v1::Pipeline& p) { return p.spec().job_id() + "/" + p.spec().pipeline_id(); }

std::string IdOrDash(int64_t id) { return id > 0 ? std::to_string(id) : "-"; }

std::string Fraction(int64_t done, int64_t of) {
  return std::to_string(done) + "/" + std::to_string(of);
}

std::string LastCompleted(const v1::Pipeline& p, int64_t now_ms) {
  if (p.last_completed_checkpoint_id() <= 0) return "never";
  return std::to_string(p.last_completed_checkpoint_id()) + ", " +
         FormatAgo(p.last_completed_at_ms(), now_ms);
}

// Failed rounds say why; savepoints say where.
std::string Detail(const v1::CheckpointInfo& c) {
  if (!c.failure_reason().empty()) return c.failure_reason();
  return c.location();
}

std::string Took(const v1::CheckpointInfo& c) {
  if (c.finished_at_ms() <= 0 || c.triggered_at_ms() <= 0) return "-";
  return FormatDuration(c.finished_at_ms() - c.triggered_at_ms());
}

std::string PendingLines(const v1::CheckpointInfo& c, int64_t now_ms) {
  std::string text = "Pending: " + ShortName(c.kind()) + " " + std::to_string(c.checkpoint_id()) +
                     ", triggered " + FormatAgo(c.triggered_at_ms(), now_ms) + ", " +
                     Fraction(c.acked_tasks(), c.expected_tasks()) + " tasks acked\n";
  if (c.pending_tasks_size() > 0) {
    const int waiting = std::max(c.pending_tasks_total(), c.pending_tasks_size());
    text += "  waiting for " + std::to_string(waiting) + (waiting == 1 ? " task: " : " tasks: ") +
            JoinAbbreviated(c.pending_tasks(), 20, waiting) + "\n";
  }
  return text;
}

// "none", or "etl/p0@42 (SAVEPOINT, set by an operator, rescaled)".
// "COMMITTED", "COMMITTING", "-" (no commit phase).
std::string CommitCell(const v1::CheckpointInfo& c) {
  if (c.commit_status() == v1::COMMIT_STATUS_NONE) return "-";
  return ShortName(c.commit_status());
}

std::string RestoreLine(const v1::RestorePoint& r) {
  if (r.checkpoint_id() == 0) return "none (a fresh pipeline)";
  std::string text = r.source_job_id() + "/" + r.source_pipeline_id() + "@" +
                     std::to_string(r.checkpoint_id()) + " (" + ShortName(r.kind());
  if (r.operator_set()) text += ", set by an operator";
  if (r.rescaled()) text += ", rescaled";
  if (r.position() > 0) text += ", at position " + std::to_string(r.position());
  return text + ")";
}

}  // namespace

std::string JoinAbbreviated(const google::protobuf::RepeatedPtrField<std::string>& items,
                            size_t max_items, int64_t total) {
  std::string text;
  const size_t shown = std::min(static_cast<size_t>(items.size()), max_items);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) text += ", ";
    text += items[static_cast<int>(i)];
  }
  const int64_t all = std::max<int64_t>(total, items.size());
  if (all > static_cast<int64_t>(shown)) {
    text += ", … (" + std::to_string(all - static_cast<int64_t>(shown)) + " more)";
  }
  return text;
}

void SortPipelines(Pipelines* pipelines) {
  std::sort(pipelines->begin(), pipelines->end(), [](const v1::Pipeline& a, const v1::Pipeline& b) {
    if (a.spec().job_id() != b.spec().job_id()) return a.spec().job_id() < b.spec().job_id();
    return a.spec().pipeline_id() < b.spec().pipeline_id();
  });
}

std::string PipelinesTable(const Pipelines& pipelines, int64_t now_ms) {
  if (pipelines.empty()) return "No pipelines.\n";
  Table table({"JOB", "PIPELINE", "STATE", "TASKS", "PENDING", "LAST CHECKPOINT", "COMPLETED",
               "FAILED", "EXPIRED", "INTERVAL", "TIMEOUT"});
  for (const v1::Pipeline& p : pipelines) {
    table.AddRow({p.spec().job_id(), p.spec().pipeline_id(), ShortName(p.state()),
                  Fraction(p.registered_tasks(), p.expected_tasks()),
                  IdOrDash(p.pending_checkpoint_id()), LastCompleted(p, now_ms),
                  std::to_string(p.completed_count()), std::to_string(p.failed_count()),
                  std::to_string(p.expired_count()), FormatDuration(p.spec().interval_ms()),
                  FormatDuration(p.spec().timeout_ms())});
  }
  return table.Render();
}

std::string PipelineDetail(const v1::Pipeline& p, int64_t now_ms) {
  const v1::PipelineSpec& spec = p.spec();
  Table table;
  table.AddRow({"Pipeline:", Key(p)});
  table.AddRow({"State:", ShortName(p.state()) +
                              (p.state_reason().empty() ? "" : " (" + p.state_reason() + ")")});
  if (p.state() == v1::PIPELINE_STATE_UNREADABLE) {
    // Nothing else of it could be read: say what to do instead of a table of zeros.
    table.AddRow({"", "ckptctl pipeline delete " + spec.job_id() + " " + spec.pipeline_id() +
                          " removes it; created again, it starts its ids above every id given"});
    return table.Render();
  }
  table.AddRow({"Generation:", std::to_string(p.generation())});
  table.AddRow({"Tasks:", Fraction(p.registered_tasks(), p.expected_tasks()) + " registered (" +
                              JoinAbbreviated(spec.task_ids()) + ")"});
  table.AddRow(
      {"Missing tasks:", p.missing_tasks().empty()
                             ? "none"
                             : JoinAbbreviated(p.missing_tasks(), 10, p.missing_tasks_total())});
  table.AddRow({"Pending checkpoint:", p.pending_checkpoint_id() > 0
                                           ? std::to_string(p.pending_checkpoint_id())
                                           : "none"});
  table.AddRow({"Last completed:", LastCompleted(p, now_ms)});
  if (spec.commit_timeout_ms() > 0 || p.committing_checkpoint_id() > 0 ||
      p.last_committed_checkpoint_id() > 0) {
    table.AddRow(
        {"Commit phase:",
         (spec.commit_timeout_ms() > 0 ? "timeout " + FormatDuration(spec.commit_timeout_ms())
                                       : std::string("off")) +
             ", committing " + IdOrDash(p.committing_checkpoint_id()) + ", last committed " +
             IdOrDash(p.last_committed_checkpoint_id())});
  }
  table.AddRow({"Restore point:", RestoreLine(p.restore())});
  table.AddRow({"Checkpoints:", "completed " + std::to_string(p.completed_count()) + ", failed " +
                                    std::to_string(p.failed_count()) + ", expired " +
                                    std::to_string(p.expired_count()) + ", consecutive failures " +
                                    std::to_string(p.consecutive_failures())});
  table.AddRow({"Interval:", FormatDuration(spec.interval_ms())});
  if (spec.max_overhead() > 0 || spec.max_interval_ms() > 0 ||
      p.effective_interval_ms() != spec.interval_ms()) {
    char overhead[32];
    std::snprintf(overhead, sizeof overhead, "%g", spec.max_overhead());
    table.AddRow({"Effective interval:",
                  FormatDuration(p.effective_interval_ms()) + " (" + p.effective_interval_reason() +
                      "; max_overhead " + overhead + ", max_interval " +
                      (spec.max_interval_ms() > 0 ? FormatDuration(spec.max_interval_ms())
                                                  : std::string("none")) +
                      ")"});
  }
  table.AddRow({"Timeout:", FormatDuration(spec.timeout_ms())});
  table.AddRow({"Min pause:", FormatDuration(spec.min_pause_ms())});
  table.AddRow({"Tolerable failures:", std::to_string(spec.tolerable_failures())});
  table.AddRow({"Retained:", std::to_string(spec.retained())});
  table.AddRow({"Position interval:", spec.position_interval() > 0
                                          ? std::to_string(spec.position_interval())
                                          : "none (time alone)"});
  if (!spec.alignment_group().empty()) {
    // Who holds the group's round is the group's to say (GetAlignmentGroup).
    table.AddRow({"Alignment group:", spec.alignment_group() +
                                          " (its policy applies; who holds its round: ckptctl "
                                          "group get " +
                                          spec.alignment_group() + ")"});
  }
  table.AddRow({"From config:", p.from_config() ? "yes" : "no"});
  return table.Render();
}

std::string CheckpointsView(const Checkpoints& checkpoints, int64_t now_ms) {
  std::string text;
  // The COMMIT column only where a commit phase is (docs/PROTOCOL.md, "Commit phase").
  const bool commits = std::any_of(
      checkpoints.begin(), checkpoints.end(),
      [](const v1::CheckpointInfo& c) { return c.commit_status() != v1::COMMIT_STATUS_NONE; });
  std::vector<std::string> header = {"ID",   "KIND",  "STATUS",           "TRIGGERED",
                                     "TOOK", "ACKED", "LOCATION / REASON"};
  if (commits) header.insert(header.begin() + 3, "COMMIT");
  Table finished(header);
  for (const v1::CheckpointInfo& c : checkpoints) {
    if (c.status() == v1::CHECKPOINT_STATUS_PENDING) {
      text += PendingLines(c, now_ms);
      continue;
    }
    // A checkpoint a task failed to restore is never a restore point again: say so where its
    // status is read.
    std::vector<std::string> row = {
        std::to_string(c.checkpoint_id()),
        ShortName(c.kind()),
        ShortName(c.status()) + (c.unrestorable() ? " UNRESTORABLE" : ""),
        FormatAgo(c.triggered_at_ms(), now_ms),
        Took(c),
        Fraction(c.acked_tasks(), c.expected_tasks()),
        Detail(c)};
    if (commits) row.insert(row.begin() + 3, CommitCell(c));
    finished.AddRow(row);
  }
  if (text.empty()) text = "No checkpoint pending.\n";
  text += "\n";
  text += finished.empty() ? "No finished checkpoints.\n" : finished.Render();
  return text;
}

namespace {

// "512 B", "3.2 KiB", "1.5 GiB"; "-" for nothing reported.
std::string FigureOrDash(int64_t ms) { return ms > 0 ? FormatDuration(ms) : "-"; }

}  // namespace

std::string CheckpointTasksView(const v1::CheckpointInfo& c, int64_t now_ms) {
  const bool pending = c.status() == v1::CHECKPOINT_STATUS_PENDING;
  std::string text = ShortName(c.kind()) + " " + std::to_string(c.checkpoint_id()) + ": " +
                     ShortName(c.status()) + ", triggered " +
                     FormatAgo(c.triggered_at_ms(), now_ms) + (pending ? "" : ", took " + Took(c)) +
                     ", " + Fraction(c.acked_tasks(), c.expected_tasks()) + " tasks acked\n";
  if (!Detail(c).empty()) text += "  " + Detail(c) + "\n";
  if (c.commit_status() != v1::COMMIT_STATUS_NONE) {
    text += "  commit: " + ShortName(c.commit_status());
    if (c.committed_at_ms() > 0 && c.finished_at_ms() > 0) {
      text += " " + FormatDuration(std::max<int64_t>(c.committed_at_ms() - c.finished_at_ms(), 0)) +
              " after complete";
    }
    text += "\n";
  }
  if (c.tasks_size() == 0) {
    return text + "No task figures (an older failed round, or stored before they were kept).\n";
  }
  const std::vector<const v1::TaskCheckpointInfo*> rows = TasksSlowestFirst(c);
  const bool commits = c.commit_status() != v1::COMMIT_STATUS_NONE;
  std::vector<std::string> header = {"TASK",  "WORKER",    "ACK AFTER", "SYNC",
                                     "ASYNC", "ALIGNMENT", "SIZE",      "STATE URI"};
  if (commits) header.insert(header.begin() + 3, "COMMITTED AFTER");
  Table table(header);
  for (const auto* t : rows) {
    std::string after;
    if (t->acked_at_ms() > 0) {
      after = FormatDuration(std::max<int64_t>(t->acked_at_ms() - c.triggered_at_ms(), 0));
    } else if (pending) {
      after = "waiting " + FormatDuration(std::max<int64_t>(now_ms - c.triggered_at_ms(), 0));
    } else {
      after = "not acked";
    }
    std::vector<std::string> row = {t->task_id(),
                                    t->worker_id().empty() ? "-" : t->worker_id(),
                                    after,
                                    FigureOrDash(t->sync_duration_ms()),
                                    FigureOrDash(t->async_duration_ms()),
                                    FigureOrDash(t->alignment_duration_ms()),
                                    FormatBytes(t->state().size_bytes()),
                                    t->state().uri().empty() ? "-" : t->state().uri()};
    if (commits) {
      // From the complete; "-": not (yet) committed, or not known (a restart forgets per-task
      // marks: only the checkpoint's COMMITTED mark is durable).
      row.insert(row.begin() + 3, t->committed_at_ms() > 0 && c.finished_at_ms() > 0
                                      ? FormatDuration(std::max<int64_t>(
                                            t->committed_at_ms() - c.finished_at_ms(), 0))
                                      : "-");
    }
    table.AddRow(row);
  }
  return text + table.Render();
}

std::string ExplanationView(const v1::PipelineExplanation& e, int64_t now_ms) {
  std::string text = e.summary() + "\n\n";
  Table fields;
  fields.AddRow({"Holdup:", ShortName(e.holdup())});
  fields.AddRow({"State:", ShortName(e.state()) +
                               (e.state_reason().empty() ? "" : " (" + e.state_reason() + ")")});
  if (e.state_since_ms() > 0) fields.AddRow({"Since:", FormatAgo(e.state_since_ms(), now_ms)});
  if (e.pending_checkpoint_id() > 0) {
    fields.AddRow({"Pending:", ShortName(e.pending_kind()) + " " +
                                   std::to_string(e.pending_checkpoint_id()) + " for " +
                                   FormatDuration(e.pending_age_ms()) + " (timeout " +
                                   FormatDuration(e.timeout_ms()) + ", stuck after " +
                                   FormatDuration(e.stuck_threshold_ms()) + ")"});
  }
  if (e.committing_checkpoint_id() > 0) {
    fields.AddRow({"Committing:",
                   std::to_string(e.committing_checkpoint_id()) + " for " +
                       FormatDuration(e.commit_age_ms()) + " (commit timeout " +
                       FormatDuration(e.commit_timeout_ms()) +
                       (e.holdup() == v1::PIPELINE_HOLDUP_COMMIT_OVERDUE ? ", overdue)" : ")")});
  }
  if (e.holdup() == v1::PIPELINE_HOLDUP_WAITING_FOR_ADMISSION) {
    fields.AddRow(
        {"Admission:", std::to_string(e.admission_rounds_in_flight()) + " rounds in flight, " +
                           std::to_string(e.admission_bytes_in_flight()) + " bytes predicted; " +
                           e.admission_cap() + " " + std::to_string(e.admission_cap_value()) +
                           "; " + std::to_string(e.admission_waiting_ahead()) + " waiting ahead"});
  }
  if (e.effective_interval_ms() > 0) {
    fields.AddRow({"Effective interval:", FormatDuration(e.effective_interval_ms()) + " (" +
                                              e.effective_interval_reason() + ")"});
  }
  fields.AddRow({"Recent rounds:", e.recent_rounds() == 0
                                       ? "none completed yet"
                                       : std::to_string(e.recent_rounds()) + ", p95 " +
                                             FormatDuration(e.recent_p95_duration_ms())});
  if (e.next_trigger_in_ms() >= 0 && e.pending_checkpoint_id() == 0) {
    fields.AddRow({"Next trigger:", "in " + FormatDuration(e.next_trigger_in_ms()) + " (interval " +
                                        FormatDuration(e.interval_ms()) + ")"});
  }
  fields.AddRow({"Last completed:", IdOrDash(e.last_completed_checkpoint_id()) +
                                        (e.last_completed_at_ms() > 0
                                             ? ", " + FormatAgo(e.last_completed_at_ms(), now_ms)
                                             : "")});
  if (!e.alignment_group().empty()) {
    fields.AddRow(
        {"Alignment group:",
         e.alignment_group() +
             (e.group_pending_checkpoint_id() > 0
                  ? ", round " + std::to_string(e.group_pending_checkpoint_id()) + " pending"
                  : "")});
    for (const v1::GroupMemberHoldup& h : e.group_holding()) {
      fields.AddRow(
          {"  held by:", h.member().job_id() + "/" + h.member().pipeline_id() + ": " + h.reason()});
    }
  }
  text += fields.Render();
  if (e.tasks_size() == 0) return text;
  text += "\nWaiting for " + std::to_string(e.tasks_total()) +
          (e.tasks_total() == 1 ? " task" : " tasks") +
          (e.tasks_total() > e.tasks_size()
               ? " (the first " + std::to_string(e.tasks_size()) + " listed)"
               : "") +
          ":\n";
  Table tasks({"TASK", "WORKER", "SESSION", "SINCE", "LAST MESSAGE"});
  for (const v1::TaskHoldup& t : e.tasks()) {
    const bool held = !t.worker_id().empty();
    tasks.AddRow({t.task_id(), held ? t.worker_id() : "(no worker)",
                  held ? std::to_string(t.session_id()) : "-",
                  t.since_ms() > 0 ? FormatAgo(t.since_ms(), now_ms) : "before the start",
                  t.last_message_at_ms() > 0 ? FormatAgo(t.last_message_at_ms(), now_ms) : "-"});
  }
  return text + tasks.Render();
}

std::string TriggeredLine(const std::string& job_id, const std::string& pipeline_id,
                          const v1::CheckpointInfo& c) {
  return "Triggered " + ShortName(c.kind()) + " " + std::to_string(c.checkpoint_id()) + " of " +
         job_id + "/" + pipeline_id + ": " + ShortName(c.status()) + ", " +
         Fraction(c.acked_tasks(), c.expected_tasks()) + " tasks acked\n";
}

std::string DaemonSummary(const v1::DaemonStatus& s, const std::string& server) {
  const bool standby = s.role() == v1::DAEMON_ROLE_STANDBY;
  const bool in_group = standby || s.role() == v1::DAEMON_ROLE_LEADER;
  std::string text = "ckptd " + s.version() + " at " + server + ": " +
                     (standby    ? "standby, not serving"
                      : in_group ? "leader, serving"
                                 : "serving") +
                     ", up " + FormatElapsed(s.uptime_ms()) + "\n";
  if (!standby) {
    text += "  pipelines " + std::to_string(s.pipelines()) + ", worker sessions " +
            std::to_string(s.worker_sessions()) + ", pending checkpoints " +
            std::to_string(s.pending_checkpoints()) + ", io threads " +
            std::to_string(s.io_threads()) + "\n" + "  checkpoints completed " +
            std::to_string(s.checkpoints_completed()) + ", failed " +
            std::to_string(s.checkpoints_failed()) + ", expired " +
            std::to_string(s.checkpoints_expired()) + "; data_dir " + s.data_dir() + "\n";
  }
  if (in_group) {
    text += "  role " + RoleName(s.role()) + ", leader address " +
            (s.leader_address().empty() ? "unknown" : s.leader_address()) + ", leader epoch " +
            std::to_string(s.leader_epoch()) + "\n";
  }
  return text;
}

std::string StandbyNote(const v1::DaemonStatus& s) {
  if (s.leader_address().empty()) return "standby; no leader is known yet\n";
  return "standby; leader is " + s.leader_address() + "\n";
}

std::string SavepointResult(const v1::SavepointProgress& result) {
  bool any_reason = false;
  for (const v1::PipelineSavepoint& s : result.savepoints()) {
    any_reason = any_reason || !s.failure_reason().empty();
  }
  std::vector<std::string> headers = {"PIPELINE", "SAVEPOINT", "STATUS", "ACKED", "LOCATION"};
  if (any_reason) headers.push_back("REASON");
  Table table(std::move(headers));
  for (const v1::PipelineSavepoint& s : result.savepoints()) {
    std::vector<std::string> row = {s.pipeline_id(), IdOrDash(s.savepoint_id()),
                                    ShortName(s.status()),
                                    Fraction(s.acked_tasks(), s.expected_tasks()), s.location()};
    if (any_reason) row.push_back(s.failure_reason());
    table.AddRow(std::move(row));
  }
  return "Savepoint of job " + result.job_id() + ": " + ShortName(result.status()) + " in " +
         FormatElapsed(result.elapsed_ms()) + "\n" + table.Render();
}

namespace {

std::string Members(const v1::AlignmentGroup& g) {
  if (g.members().empty()) return "none";
  std::string text;
  for (const v1::PipelineRef& m : g.members()) {
    text += (text.empty() ? "" : ", ") + m.job_id() + "/" + m.pipeline_id();
  }
  return text;
}

std::string PositionInterval(int64_t position_interval) {
  return position_interval > 0 ? std::to_string(position_interval) : "none (time alone)";
}

}  // namespace

std::string AlignmentGroupDetail(const v1::AlignmentGroup& g, int64_t now_ms) {
  const v1::AlignmentGroupSpec& spec = g.spec();
  Table table;
  table.AddRow({"Group:", spec.name()});
  table.AddRow({"Members:", Members(g)});
  table.AddRow({"Last round:", g.last_round_id() > 0
                                   ? std::to_string(g.last_round_id()) + ", " +
                                         FormatAgo(g.last_completed_at_ms(), now_ms)
                                   : "none yet"});
  if (g.last_position() > 0) {
    table.AddRow({"Last aligned position:", std::to_string(g.last_position())});
  }
  if (g.pending_checkpoint_id() > 0) {
    table.AddRow({"Pending round:", std::to_string(g.pending_checkpoint_id())});
  } else if (g.next_round_in_ms() >= 0) {
    table.AddRow({"Next round:", "in " + FormatDuration(g.next_round_in_ms())});
  } else if (g.waiting_for_positions()) {
    table.AddRow({"Next round:", "waits for positions (position interval)"});
  } else if (g.waiting_for_ids()) {
    table.AddRow({"Next round:", "waits for its id reservation"});
  }
  for (const v1::GroupMemberHoldup& h : g.holding()) {
    table.AddRow(
        {"Held by:", h.member().job_id() + "/" + h.member().pipeline_id() + ": " + h.reason()});
  }
  table.AddRow({"Interval:", FormatDuration(spec.interval_ms())});
  table.AddRow({"Timeout:", FormatDuration(spec.timeout_ms())});
  table.AddRow({"Min pause:", FormatDuration(spec.min_pause_ms())});
  table.AddRow({"Position interval:", PositionInterval(spec.position_interval())});
  table.AddRow({"From config:", g.from_config() ? "yes" : "no"});
  return table.Render();
}

std::string AlignmentGroupsView(const v1::ListAlignmentGroupsResponse& groups) {
  if (groups.groups().empty()) return "No alignment groups.\n";
  Table table({"GROUP", "MEMBERS", "INTERVAL", "TIMEOUT", "POSITION INTERVAL", "LAST ROUND"});
  for (const v1::AlignmentGroup& g : groups.groups()) {
    const v1::AlignmentGroupSpec& spec = g.spec();
    table.AddRow({spec.name(), std::to_string(g.members_size()), FormatDuration(spec.interval_ms()),
                  FormatDuration(spec.timeout_ms()),
                  spec.position_interval() > 0 ? std::to_string(spec.position_interval()) : "-",
                  g.last_round_id() > 0 ? std::to_string(g.last_round_id()) : "-"});
  }
  return table.Render();
}

}  // namespace ckpt::ctl
