#pragma once
// Proto <-> domain conversions for the operator API.

#include <optional>

#include "ckpt/v1/admin.pb.h"
#include "core/pipeline_coordinator.h"
#include "core/types.h"
#include "runtime/alignment_groups.h"
#include "runtime/savepoint_observer.h"

namespace ckpt {

// A create request: unset fields take `defaults`.
PipelineSpec SpecFromCreate(const v1::PipelineSpec& proto, const PipelineDefaults& defaults);
// An update request: unset fields (and an empty task_ids) keep `current`'s.
PipelineSpec SpecFromUpdate(const v1::PipelineSpec& proto, const PipelineSpec& current);

void ToProto(const PipelineStatus& status, v1::Pipeline* out);
// A quarantined pipeline (runtime/quarantine.h): its key (and group, when known), state
// UNREADABLE, and the reason in state_reason.
void UnreadableToProto(const UnreadableRecord& record, v1::Pipeline* out);
// `field` names it in the error ("from", "restore_from").
Result<CheckpointRef> RefFromProto(const v1::CheckpointRef& proto, const std::string& field);
// `with_states` false: without the task states (`state` left empty).
void ToProto(const CompletedCheckpoint& checkpoint, int expected_tasks, v1::CheckpointInfo* out,
             bool with_states = true);
void ToProto(const RoundSummary& round, v1::CheckpointInfo* out);
void ToProto(const PendingSummary& pending, v1::CheckpointInfo* out);
// GetCheckpoint: a round in memory with its tasks, or a stored checkpoint with its tasks.
void ToProto(const CheckpointDetail& detail, v1::CheckpointInfo* out);
void AddTasks(const CompletedCheckpoint& checkpoint, v1::CheckpointInfo* out);
// Each task's commit time (PipelineCoordinator::TaskCommitTimes) onto the tasks AddTasks added.
void AddTaskCommitTimes(const std::vector<std::pair<std::string, int64_t>>& times,
                        v1::CheckpointInfo* out);
v1::CommitStatus ToProto(CommitStatus status);
void ToProto(const Explanation& e, const std::string& summary, v1::PipelineExplanation* out);
v1::SavepointStatus ToProto(SavepointPhase phase);
// PutAlignmentGroup's fields, unset ones left unset.
AlignmentGroupUpdate GroupUpdateFromProto(const v1::AlignmentGroupSpec& proto);
void ToProto(const AlignmentGroupView& view, v1::AlignmentGroup* out);
void ToProto(const PipelineKey& member, const std::string& reason, v1::GroupMemberHoldup* out);

}  // namespace ckpt
