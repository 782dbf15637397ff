#include "sdk/messages.h"

namespace ckpt::sdk::internal {

v1::WorkerMessage MakeHello(const PipelineWorkerOptions& options, bool takeover) {
  v1::WorkerMessage message;
  v1::Hello* hello = message.mutable_hello();
  hello->set_worker_id(options.worker_id);
  hello->set_job_id(options.job_id);
  hello->set_pipeline_id(options.pipeline_id);
  for (const std::string& task : options.task_ids) hello->add_task_ids(task);
  hello->set_takeover(takeover);
  return message;
}

v1::WorkerMessage MakeAck(int64_t checkpoint_id, std::string task_id, TaskStateInfo state,
                          const AckFigures& figures, int64_t position) {
  v1::WorkerMessage message;
  v1::Ack* ack = message.mutable_ack();
  ack->set_checkpoint_id(checkpoint_id);
  ack->set_task_id(std::move(task_id));
  v1::TaskState* proto_state = ack->mutable_state();
  proto_state->set_uri(std::move(state.uri));
  proto_state->set_size_bytes(state.size_bytes);
  proto_state->set_checksum(std::move(state.checksum));
  ack->set_sync_duration_ms(figures.sync_duration_ms);
  ack->set_async_duration_ms(figures.async_duration_ms);
  ack->set_alignment_duration_ms(figures.alignment_duration_ms);
  ack->set_bytes_processed_during_alignment(figures.bytes_processed_during_alignment);
  ack->set_position(position);
  return message;
}

v1::WorkerMessage MakeDecline(int64_t checkpoint_id, std::string task_id, std::string reason,
                              bool expired, int64_t position) {
  v1::WorkerMessage message;
  v1::Decline* decline = message.mutable_decline();
  decline->set_checkpoint_id(checkpoint_id);
  decline->set_task_id(std::move(task_id));
  decline->set_reason(std::move(reason));
  decline->set_expired(expired);
  decline->set_position(position);
  return message;
}

v1::WorkerMessage MakeCommitted(int64_t checkpoint_id, std::string task_id) {
  v1::WorkerMessage message;
  v1::Committed* committed = message.mutable_committed();
  committed->set_checkpoint_id(checkpoint_id);
  committed->set_task_id(std::move(task_id));
  return message;
}

std::string ReasonForTheWire(const std::string& text, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // The length of the UTF-8 sequence this byte starts (0: not a start byte).
    const size_t length = byte < 0x80           ? 1
                          : (byte >> 5) == 0x6  ? 2
                          : (byte >> 4) == 0xE  ? 3
                          : (byte >> 3) == 0x1E ? 4
                                                : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    const size_t take = valid ? length : 1;
    if (out.size() + take > max_bytes) break;
    if (valid) {
      out.append(text, i, length);
    } else {
      out.push_back('?');
    }
    i += take;
  }
  return out;
}

v1::WorkerMessage MakeRestoreResult(int64_t checkpoint_id, std::string task_id, bool ok,
                                    const std::string& reason) {
  v1::WorkerMessage message;
  v1::RestoreResult* result = message.mutable_restore_result();
  result->set_checkpoint_id(checkpoint_id);
  result->set_task_id(std::move(task_id));
  result->set_ok(ok);
  // The application's exception text: a protobuf string must be valid UTF-8, and the daemon keeps
  // 1 KiB of it anyway (a 7 MB message would not even fit a frame).
  result->set_reason(ReasonForTheWire(reason, kMaxRestoreReasonBytes));
  return message;
}

v1::WorkerMessage MakeSavepointRequest(std::string target, bool stop) {
  v1::WorkerMessage message;
  message.mutable_savepoint_request()->set_target(std::move(target));
  message.mutable_savepoint_request()->set_stop(stop);
  return message;
}

v1::WorkerMessage MakeHeartbeat(const std::map<std::string, int64_t>& positions, bool backlog) {
  v1::WorkerMessage message;
  message.mutable_heartbeat()->set_backlog(backlog);
  auto& out = *message.mutable_heartbeat()->mutable_positions();
  for (const auto& [task, position] : positions) out[task] = position;
  return message;
}

v1::WorkerMessage MakeGoodbye() {
  v1::WorkerMessage message;
  message.mutable_goodbye();
  return message;
}

CheckpointKind FromProto(v1::CheckpointKind kind) {
  switch (kind) {
    case v1::CHECKPOINT_KIND_CHECKPOINT: return CheckpointKind::kCheckpoint;
    case v1::CHECKPOINT_KIND_SAVEPOINT: return CheckpointKind::kSavepoint;
    case v1::CHECKPOINT_KIND_SAVEPOINT_AND_STOP: return CheckpointKind::kSavepointAndStop;
    default: return CheckpointKind::kUnspecified;
  }
}

PipelineState FromProto(v1::PipelineState state) {
  switch (state) {
    case v1::PIPELINE_STATE_WAITING_FOR_TASKS: return PipelineState::kWaitingForTasks;
    case v1::PIPELINE_STATE_RUNNING: return PipelineState::kRunning;
    case v1::PIPELINE_STATE_PAUSED: return PipelineState::kPaused;
    case v1::PIPELINE_STATE_FAILED: return PipelineState::kFailed;
    case v1::PIPELINE_STATE_STOPPED: return PipelineState::kStopped;
    default: return PipelineState::kUnspecified;
  }
}

Welcome FromProto(const v1::Welcome& welcome) {
  Welcome out;
  out.session_id = welcome.session_id();
  out.generation = welcome.generation();
  out.state = FromProto(welcome.state());
  out.last_completed_checkpoint_id = welcome.last_completed_checkpoint_id();
  out.restore_withheld = welcome.restore_withheld();
  out.last_completed_kind = FromProto(welcome.last_completed_kind());
  out.heartbeat_interval_ms = welcome.heartbeat_interval_ms();
  out.lease_ttl_ms = welcome.lease_ttl_ms();
  out.leader_epoch = welcome.leader_epoch();
  const v1::RestorePoint& restore = welcome.restore();
  out.restore.checkpoint_id = restore.checkpoint_id();
  out.restore.kind = FromProto(restore.kind());
  out.restore.location = restore.location();
  out.restore.source_job_id = restore.source_job_id();
  out.restore.source_pipeline_id = restore.source_pipeline_id();
  out.restore.rescaled = restore.rescaled();
  out.restore.position = restore.position();
  out.restore.commit_pending = restore.commit_pending();
  for (const auto& [task, state] : restore.task_states()) {
    out.restore.task_states[task] =
        TaskStateInfo{state.uri(), state.size_bytes(), state.checksum()};
  }
  out.retained_checkpoint_ids.assign(welcome.retained_checkpoint_ids().begin(),
                                     welcome.retained_checkpoint_ids().end());
  out.last_committed_checkpoint_id = welcome.last_committed_checkpoint_id();
  return out;
}

Trigger FromProto(const v1::Trigger& trigger) {
  Trigger out;
  out.checkpoint_id = trigger.checkpoint_id();
  out.kind = FromProto(trigger.kind());
  out.timestamp_ms = trigger.timestamp_ms();
  out.generation = trigger.generation();
  out.target = trigger.target();
  out.leader_epoch = trigger.leader_epoch();
  out.position = trigger.position();
  return out;
}

}  // namespace ckpt::sdk::internal
