#pragma once
// `-o table`: what an operator reads. Pure functions of the protos and the current time (ms since
// the Unix epoch), so tests pin the output exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/v1/admin.pb.h"

namespace ckpt::ctl {

using Pipelines = google::protobuf::RepeatedPtrField<v1::Pipeline>;
using Checkpoints = google::protobuf::RepeatedPtrField<v1::CheckpointInfo>;

// "a, b, c", or the first `max_items` and "… (N more)". `total`: how many there are in all when
// `items` holds only the first of them (the daemon lists at most 1000 names); -1: items.size().
std::string JoinAbbreviated(const google::protobuf::RepeatedPtrField<std::string>& items,
                            size_t max_items = 10, int64_t total = -1);

// By job id, then pipeline id: tables and JSON in a stable order, whatever the daemon's.
void SortPipelines(Pipelines* pipelines);

// One row per pipeline: JOB PIPELINE STATE TASKS PENDING LAST CHECKPOINT COMPLETED FAILED EXPIRED
// INTERVAL TIMEOUT. "No pipelines." when there are none.
std::string PipelinesTable(const Pipelines& pipelines, int64_t now_ms);

// Everything about one pipeline, a "Key: value" line each.
std::string PipelineDetail(const v1::Pipeline& pipeline, int64_t now_ms);

// The pending round first, with the tasks it still waits for (what an operator asks first about a
// stuck checkpoint), then the finished ones as a table, in the daemon's order (newest first).
std::string CheckpointsView(const Checkpoints& checkpoints, int64_t now_ms);

// One checkpoint with a row per task, the slowest first (the tasks that have not acked lead):
// task, worker, ack after (from the trigger), sync, async, alignment, state size and URI.
std::string CheckpointTasksView(const v1::CheckpointInfo& checkpoint, int64_t now_ms);

// `pipeline why`: the sentence, then the fields (a "Key: value" line each), then the tasks it
// waits for (worker, session, since, last message).
std::string ExplanationView(const v1::PipelineExplanation& explanation, int64_t now_ms);

// A one-line account of a checkpoint just triggered.
std::string TriggeredLine(const std::string& job_id, const std::string& pipeline_id,
                          const v1::CheckpointInfo& checkpoint);

// Daemon health: version and uptime, load, totals; for a daemon of an HA group (leader or
// standby) also its role, the leader's address and the leader epoch. A standby has no load or
// totals of its own: only the first line and the role's.
std::string DaemonSummary(const v1::DaemonStatus& status, const std::string& server);

// What a standby shows instead of the pipelines: "standby; leader is 10.0.0.5:7070".
std::string StandbyNote(const v1::DaemonStatus& status);

// The end of `ckptctl savepoint`: a headline, then a row per pipeline with its savepoint id and
// location (and a REASON column when any failed).
std::string SavepointResult(const v1::SavepointProgress& result);

// `group get`: the group's policy, members and last round.
std::string AlignmentGroupDetail(const v1::AlignmentGroup& group, int64_t now_ms);
// `group list`: a row per group.
std::string AlignmentGroupsView(const v1::ListAlignmentGroupsResponse& groups);

}  // namespace ckpt::ctl
