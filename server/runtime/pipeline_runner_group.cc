// PipelineRunner as a member of an alignment group (docs/ALIGNMENT.md; GroupRunner runs the
// group): joining, the group's rounds started, made durable or ended on the member's strand, a
// round asked of the group, the member's readiness and positions reported to it, and a delete
// that waited for the member's group round. The coordinator's side is
// core/pipeline_coordinator_group.cc.
//
// Threading: JoinGroup, StartGroupRound, GroupRoundDurable, GroupCommitted and EndGroupRound are
// called from any thread (the group's strand) and post to strand_; the rest runs on strand_. A
// group's answer comes back to strand_ through PostOperator.
#include "common/strand_assert.h"
#include "runtime/group_runner.h"
#include "runtime/pipeline_runner.h"
#include "runtime/pipeline_runner_internal.h"

namespace ckpt {

void PipelineRunner::JoinGroup(std::shared_ptr<GroupRunner> group, AlignmentGroupSpec spec) {
  Post([group = std::move(group), spec = std::move(spec)](PipelineRunner& r) mutable {
    r.group_ = std::make_unique<GroupLink>();
    r.group_->runner = group;
    Actions actions = r.coordinator_.SetGroup(std::move(spec));
    // Its ids so far: the group's go above them.
    group->AddMember(r.key(), r.weak_from_this(), r.coordinator_.IdFloor());
    r.LogLine(LogLevel::kInfo, "member of alignment group " + group->name());
    r.Run(std::move(actions));  // and its first report
  });
}

void PipelineRunner::StartGroupRound(int64_t checkpoint_id, CheckpointKind kind, int64_t position) {
  Post([=](PipelineRunner& r) {
    if (!r.group_) return;  // left the group meanwhile
    r.Run(r.coordinator_.StartGroupRound(checkpoint_id, kind, position));
  });
}

void PipelineRunner::GroupRoundDurable(int64_t checkpoint_id) {
  // As a commit's completion: never dropped (a deleted member only reports the outcome).
  PostStoreCompletion([checkpoint_id](PipelineRunner& r) {
    r.Run(r.coordinator_.OnCommitted(checkpoint_id));
    r.RunDeferredDelete();
  });
}

void PipelineRunner::GroupInterval(int64_t ms, std::string reason) {
  Post([ms, reason = std::move(reason)](PipelineRunner& r) mutable {
    if (r.group_) r.coordinator_.SetGroupInterval(ms, std::move(reason));
  });
}

void PipelineRunner::GroupCommitted(int64_t checkpoint_id) {
  // Never dropped: the mark it lets go is what ends the COMMITTING state.
  PostStoreCompletion([checkpoint_id](PipelineRunner& r) {
    r.Run(r.coordinator_.OnGroupCommitted(checkpoint_id));
  });
}

void PipelineRunner::RunDeferredDelete() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!group_ || !group_->deferred_delete || coordinator_.HasPendingRound()) return;
  auto deferred = std::move(group_->deferred_delete);
  group_->deferred_delete = nullptr;
  deferred(*this);
}

void PipelineRunner::EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome,
                                   std::string reason) {
  PostStoreCompletion([=, reason = std::move(reason)](PipelineRunner& r) {
    r.Run(r.coordinator_.EndGroupRound(checkpoint_id, outcome, reason));
    r.RunDeferredDelete();
  });
}

void PipelineRunner::RequestGroupRound(CheckpointKind kind, Millis timeout,
                                       std::function<void(PipelineRunner&, const Status&)> answer,
                                       std::function<Status(const PipelineKey&)> check) {
  CKPT_ASSERT_ON_STRAND(strand_);
  // Weakly: a waiter the group holds must not keep this runner (which holds the group) alive.
  group_->runner->RequestRound(
      kind, timeout,
      [weak = weak_from_this(), answer = std::move(answer)](Status s, int64_t) {
        if (auto self = weak.lock()) {
          self->PostOperator([s = std::move(s), answer](PipelineRunner& r) { answer(r, s); });
        }
      },
      std::move(check));
}

void PipelineRunner::ReportToGroup() {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (deleted_) return;
  GroupLink& g = *group_;
  auto [ready, holdup] = coordinator_.GroupReadiness();
  const int64_t bytes = coordinator_.PredictedRoundBytes();
  const bool backlog = coordinator_.HasBacklog();
  if (!g.reported || ready != g.ready || holdup != g.holdup || bytes != g.predicted_bytes ||
      backlog != g.backlog) {
    g.ready = ready;
    g.holdup = holdup;
    g.predicted_bytes = bytes;
    g.backlog = backlog;
    g.runner->MemberState(key(), ready, std::move(holdup), bytes, backlog);
  }
  // The positions are a scan of the tasks: only when the gate changed.
  const uint64_t version = coordinator_.PositionsVersion();
  if (!g.reported || version != g.positions_version) {
    g.positions_version = version;
    MemberPositions positions = coordinator_.GroupPositions();
    if (!g.reported || !(positions == g.positions)) {
      g.positions = positions;
      g.runner->MemberPositions(key(), positions);
    }
  }
  g.reported = true;
}

}  // namespace ckpt
