#include "views/admin_json.h"

#include <map>

#include "views/enum_names.h"

namespace ckpt {
namespace {

template <typename Strings>
Json StringArray(const Strings& strings) {
  Json array = Json::array();
  for (const std::string& s : strings) array.push_back(s);
  return array;
}

Json RestoreJson(const v1::RestorePoint& r) {
  return {{"checkpoint_id", r.checkpoint_id()},
          {"kind", r.checkpoint_id() > 0 ? ShortName(r.kind()) : ""},
          {"location", r.location()},
          {"source_job_id", r.source_job_id()},
          {"source_pipeline_id", r.source_pipeline_id()},
          {"rescaled", r.rescaled()},
          {"operator_set", r.operator_set()},
          {"position", r.position()},
          {"commit_pending", r.commit_pending()}};
}

}  // namespace

Json PipelineJson(const v1::Pipeline& p) {
  const v1::PipelineSpec& spec = p.spec();
  return {
      {"job_id", spec.job_id()},
      {"pipeline_id", spec.pipeline_id()},
      {"state", ShortName(p.state())},
      {"state_reason", p.state_reason()},
      {"generation", p.generation()},
      {"expected_tasks", p.expected_tasks()},
      {"registered_tasks", p.registered_tasks()},
      {"missing_tasks", StringArray(p.missing_tasks())},
      {"missing_tasks_total", p.missing_tasks_total()},
      {"pending_checkpoint_id", p.pending_checkpoint_id()},
      {"last_completed_checkpoint_id", p.last_completed_checkpoint_id()},
      {"last_completed_at_ms", p.last_completed_at_ms()},
      {"completed_count", p.completed_count()},
      {"failed_count", p.failed_count()},
      {"expired_count", p.expired_count()},
      {"consecutive_failures", p.consecutive_failures()},
      {"interval_ms", spec.interval_ms()},
      {"timeout_ms", spec.timeout_ms()},
      {"min_pause_ms", spec.min_pause_ms()},
      {"task_ids", StringArray(spec.task_ids())},
      {"task_ids_omitted", p.task_ids_omitted()},
      {"tolerable_failures", spec.tolerable_failures()},
      {"retained", spec.retained()},
      {"position_interval", spec.position_interval()},
      {"alignment_group", spec.alignment_group()},
      {"commit_timeout_ms", spec.commit_timeout_ms()},
      {"committing_checkpoint_id", p.committing_checkpoint_id()},
      {"last_committed_checkpoint_id", p.last_committed_checkpoint_id()},
      {"from_config", p.from_config()},
      {"restore", RestoreJson(p.restore())},
      {"max_overhead", spec.max_overhead()},
      {"max_interval_ms", spec.max_interval_ms()},
      {"effective_interval_ms", p.effective_interval_ms()},
      {"effective_interval_reason", p.effective_interval_reason()},
  };
}

Json CheckpointJson(const v1::CheckpointInfo& c) {
  // The proto map's order is unspecified: sort for stable output.
  const std::map<std::string, v1::TaskState> sorted(c.state().begin(), c.state().end());
  auto state_json = [](const v1::TaskState& s) {
    return Json{{"uri", s.uri()}, {"size_bytes", s.size_bytes()}, {"checksum", s.checksum()}};
  };
  Json state = Json::object();
  for (const auto& [task_id, task] : sorted) state[task_id] = state_json(task);
  Json tasks = Json::array();  // GetCheckpoint's (`checkpoint get`); empty in lists
  for (const v1::TaskCheckpointInfo& t : c.tasks()) {
    tasks.push_back({
        {"task_id", t.task_id()},
        {"worker_id", t.worker_id()},
        {"acked_at_ms", t.acked_at_ms()},
        {"state", state_json(t.state())},
        {"sync_duration_ms", t.sync_duration_ms()},
        {"async_duration_ms", t.async_duration_ms()},
        {"alignment_duration_ms", t.alignment_duration_ms()},
        {"bytes_processed_during_alignment", t.bytes_processed_during_alignment()},
        {"committed_at_ms", t.committed_at_ms()},
    });
  }
  return {
      {"checkpoint_id", c.checkpoint_id()},
      {"kind", ShortName(c.kind())},
      {"status", ShortName(c.status())},
      {"triggered_at_ms", c.triggered_at_ms()},
      {"finished_at_ms", c.finished_at_ms()},
      {"acked_tasks", c.acked_tasks()},
      {"expected_tasks", c.expected_tasks()},
      {"failure_reason", c.failure_reason()},
      {"location", c.location()},
      {"position", c.position()},
      {"alignment_group", c.alignment_group()},
      {"commit_status", ShortName(c.commit_status())},
      {"committed_at_ms", c.committed_at_ms()},
      {"state", std::move(state)},
      {"pending_tasks", StringArray(c.pending_tasks())},
      {"pending_tasks_total", c.pending_tasks_total()},
      {"tasks", std::move(tasks)},
      {"unrestorable", c.unrestorable()},
  };
}

Json GroupHoldingJson(const google::protobuf::RepeatedPtrField<v1::GroupMemberHoldup>& holding) {
  Json out = Json::array();
  for (const v1::GroupMemberHoldup& h : holding) {
    out.push_back({{"job_id", h.member().job_id()},
                   {"pipeline_id", h.member().pipeline_id()},
                   {"reason", h.reason()}});
  }
  return out;
}

Json ExplanationJson(const v1::PipelineExplanation& e) {
  Json tasks = Json::array();
  for (const v1::TaskHoldup& t : e.tasks()) {
    tasks.push_back({{"task_id", t.task_id()},
                     {"worker_id", t.worker_id()},
                     {"session_id", t.session_id()},
                     {"since_ms", t.since_ms()},
                     {"last_message_at_ms", t.last_message_at_ms()}});
  }
  return {
      {"summary", e.summary()},
      {"holdup", ShortName(e.holdup())},
      {"state", ShortName(e.state())},
      {"state_reason", e.state_reason()},
      {"state_since_ms", e.state_since_ms()},
      {"pending_checkpoint_id", e.pending_checkpoint_id()},
      {"pending_kind", e.pending_checkpoint_id() > 0 ? ShortName(e.pending_kind()) : ""},
      {"pending_age_ms", e.pending_age_ms()},
      {"timeout_ms", e.timeout_ms()},
      {"stuck_threshold_ms", e.stuck_threshold_ms()},
      {"recent_p95_duration_ms", e.recent_p95_duration_ms()},
      {"recent_rounds", e.recent_rounds()},
      {"tasks", std::move(tasks)},
      {"tasks_total", e.tasks_total()},
      {"next_trigger_in_ms", e.next_trigger_in_ms()},
      {"interval_ms", e.interval_ms()},
      {"last_completed_checkpoint_id", e.last_completed_checkpoint_id()},
      {"last_completed_at_ms", e.last_completed_at_ms()},
      {"position_needed", e.position_needed()},
      {"alignment_group", e.alignment_group()},
      {"group_pending_checkpoint_id", e.group_pending_checkpoint_id()},
      {"group_holding", GroupHoldingJson(e.group_holding())},
      {"committing_checkpoint_id", e.committing_checkpoint_id()},
      {"commit_age_ms", e.commit_age_ms()},
      {"commit_timeout_ms", e.commit_timeout_ms()},
      {"admission_rounds_in_flight", e.admission_rounds_in_flight()},
      {"admission_bytes_in_flight", e.admission_bytes_in_flight()},
      {"admission_cap", e.admission_cap()},
      {"admission_cap_value", e.admission_cap_value()},
      {"admission_waiting_ahead", e.admission_waiting_ahead()},
      {"effective_interval_ms", e.effective_interval_ms()},
      {"effective_interval_reason", e.effective_interval_reason()},
  };
}

Json AlignmentGroupJson(const v1::AlignmentGroup& g) {
  Json members = Json::array();
  for (const v1::PipelineRef& m : g.members()) {
    members.push_back({{"job_id", m.job_id()}, {"pipeline_id", m.pipeline_id()}});
  }
  const v1::AlignmentGroupSpec& spec = g.spec();
  return {
      {"name", spec.name()},
      {"interval_ms", spec.interval_ms()},
      {"timeout_ms", spec.timeout_ms()},
      {"min_pause_ms", spec.min_pause_ms()},
      {"position_interval", spec.position_interval()},
      {"members", std::move(members)},
      {"from_config", g.from_config()},
      {"last_round_id", g.last_round_id()},
      {"last_position", g.last_position()},
      {"last_completed_at_ms", g.last_completed_at_ms()},
      {"pending_checkpoint_id", g.pending_checkpoint_id()},
      {"holding", GroupHoldingJson(g.holding())},
      {"next_round_in_ms", g.next_round_in_ms()},
      {"waiting_for_ids", g.waiting_for_ids()},
      {"waiting_for_positions", g.waiting_for_positions()},
  };
}

Json DaemonStatusJson(const v1::DaemonStatus& s) {
  return {
      {"version", s.version()},
      {"uptime_ms", s.uptime_ms()},
      {"pipelines", s.pipelines()},
      {"worker_sessions", s.worker_sessions()},
      {"io_threads", s.io_threads()},
      {"data_dir", s.data_dir()},
      {"checkpoints_completed", s.checkpoints_completed()},
      {"checkpoints_failed", s.checkpoints_failed()},
      {"checkpoints_expired", s.checkpoints_expired()},
      {"pending_checkpoints", s.pending_checkpoints()},
      {"role", RoleName(s.role())},
      {"leader_address", s.leader_address()},
      {"leader_epoch", s.leader_epoch()},
  };
}

Json SavepointJson(const v1::SavepointProgress& progress) {
  Json savepoints = Json::array();
  for (const v1::PipelineSavepoint& s : progress.savepoints()) {
    savepoints.push_back({
        {"pipeline_id", s.pipeline_id()},
        {"savepoint_id", s.savepoint_id()},
        {"status", ShortName(s.status())},
        {"location", s.location()},
        {"failure_reason", s.failure_reason()},
        {"acked_tasks", s.acked_tasks()},
        {"expected_tasks", s.expected_tasks()},
    });
  }
  return {
      {"job_id", progress.job_id()},
      {"status", ShortName(progress.status())},
      {"savepoints", std::move(savepoints)},
      {"elapsed_ms", progress.elapsed_ms()},
  };
}

Json DeletedJson(const std::string& job_id, const std::string& pipeline_id) {
  return {{"job_id", job_id}, {"pipeline_id", pipeline_id}, {"deleted", true}};
}

std::string Dump(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace ckpt
