#pragma once
// The admin protos as JSON (docs/man/ckptctl.1, "OUTPUT"): what `ckptctl -o json` prints and the
// daemon's web view serves under /api/v1, one document format for both. snake_case keys, every
// key present (zeros included), integers as numbers, lists as arrays, enums as short names
// ("RUNNING").

#include <nlohmann/json.hpp>
#include <string>

#include "ckpt/v1/admin.pb.h"

namespace ckpt {

using Json = nlohmann::ordered_json;

// job_id, pipeline_id, the Pipeline's status fields (state .. consecutive_failures), then the
// spec's interval_ms .. alignment_group, from_config and restore.
Json PipelineJson(const v1::Pipeline& pipeline);
// checkpoint_id, kind, status, triggered_at_ms, finished_at_ms, acked_tasks, expected_tasks,
// failure_reason, location, state {task_id: {uri, size_bytes, checksum}} (sorted by task id),
// pending_tasks.
Json CheckpointJson(const v1::CheckpointInfo& checkpoint);
Json ExplanationJson(const v1::PipelineExplanation& explanation);
// Every DaemonStatus field under its proto name; `role` lowercase (single, leader, standby).
Json DaemonStatusJson(const v1::DaemonStatus& status);
// An alignment group: name, interval_ms, timeout_ms, min_pause_ms, position_interval, members
// ([{job_id, pipeline_id}, ...]), from_config, last_round_id, last_position,
// last_completed_at_ms.
Json AlignmentGroupJson(const v1::AlignmentGroup& group);
// {job_id, status, savepoints: [{pipeline_id, savepoint_id, status, location, failure_reason,
// acked_tasks, expected_tasks}], elapsed_ms}.
Json SavepointJson(const v1::SavepointProgress& progress);
// {job_id, pipeline_id, deleted: true}.
Json DeletedJson(const std::string& job_id, const std::string& pipeline_id);

// One document, indented, newline-terminated. Invalid UTF-8 is replaced, never thrown about.
std::string Dump(const Json& json);

}  // namespace ckpt
