#include "rpc/savepoint_stream.h"

#include "api/admin_convert.h"
#include "rpc/status_mapping.h"

namespace ckpt {

std::shared_ptr<SavepointStream> SavepointStream::Create(
    const std::string& job_id, const std::vector<std::string>& pipeline_ids,
    std::function<void(SavepointStream*)> on_done) {
  std::shared_ptr<SavepointStream> stream(
      new SavepointStream(job_id, pipeline_ids, std::move(on_done)));
  stream->self_ = stream;
  MutexLock lock(stream->mu_);
  stream->MaybeWriteLocked();  // the first message: every pipeline queued
  return stream;
}

SavepointStream::SavepointStream(const std::string& job_id,
                                 const std::vector<std::string>& pipeline_ids,
                                 std::function<void(SavepointStream*)> on_done)
    : job_id_(job_id), on_done_(std::move(on_done)) {
  for (const auto& id : pipeline_ids) {
    SavepointUpdate queued;
    queued.key = {job_id, id};
    by_pipeline_[id] = queued;
  }
}

void SavepointStream::OnSavepointUpdate(const SavepointUpdate& update) {
  MutexLock lock(mu_);
  if (finished_) return;
  auto it = by_pipeline_.find(update.key.pipeline_id);
  if (it == by_pipeline_.end() || it->second.final()) return;
  if (by_pipeline_.size() == 1 && update.refusal == StatusCode::kResourceExhausted) {
    // A savepoint of one pipeline refused at a limit is the call's refusal (its status names
    // the limit); one pipeline of a job-wide call refused so is that pipeline's FAILED line.
    FinishOnceLocked(ToGrpcStatus(Status::ResourceExhausted(update.failure_reason)));
    return;
  }
  it->second = update;
  dirty_ = true;
  MaybeWriteLocked();
}

bool SavepointStream::AllFinalLocked() const {
  for (const auto& [id, u] : by_pipeline_) {
    if (!u.final()) return false;
  }
  return true;
}

void SavepointStream::BuildLocked(v1::SavepointProgress* out) const {
  out->Clear();
  out->set_job_id(job_id_);
  bool any_failed = false;
  for (const auto& [id, u] : by_pipeline_) {
    auto* p = out->add_savepoints();
    p->set_pipeline_id(id);
    p->set_savepoint_id(u.savepoint_id);
    p->set_status(ToProto(u.phase));
    p->set_acked_tasks(u.acked_tasks);
    p->set_expected_tasks(u.expected_tasks);
    p->set_location(u.location);
    p->set_failure_reason(u.failure_reason);
    any_failed = any_failed || u.phase == SavepointPhase::kFailed;
  }
  const bool final = AllFinalLocked();
  out->set_final(final);
  out->set_status(!final       ? v1::SAVEPOINT_STATUS_IN_PROGRESS
                  : any_failed ? v1::SAVEPOINT_STATUS_FAILED
                               : v1::SAVEPOINT_STATUS_COMPLETED);
  out->set_elapsed_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started_)
                          .count());
}

void SavepointStream::MaybeWriteLocked() {
  if (writing_ || finished_ || done_) return;
  if (dirty_ && !final_written_) {
    BuildLocked(&in_flight_);
    final_written_ = in_flight_.final();
    dirty_ = false;
    writing_ = true;
    StartWrite(&in_flight_);
    return;
  }
  if (final_written_) FinishOnceLocked(grpc::Status::OK);
}

void SavepointStream::FinishOnceLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  Finish(status);
}

void SavepointStream::OnWriteDone(bool ok) {
  MutexLock lock(mu_);
  writing_ = false;
  if (!ok) {
    // The caller went away; the savepoints themselves go on.
    FinishOnceLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "progress write failed"));
    return;
  }
  MaybeWriteLocked();
}

void SavepointStream::End(const Status& status) {
  MutexLock lock(mu_);
  if (final_written_ || done_) return;
  FinishOnceLocked(ToGrpcStatus(status));
}

void SavepointStream::OnCancel() {
  MutexLock lock(mu_);
  FinishOnceLocked(grpc::Status::CANCELLED);
}

void SavepointStream::OnDone() {
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  if (on_done_) on_done_(this);
  auto last_reference_held_by_us = std::move(self_);
}

}  // namespace ckpt
