package io.ckptd.worker;

import java.util.LinkedHashMap;
import java.util.Map;

/** From the generated messages to the SDK's plain values. */
final class Protos {
  private Protos() {}

  static TaskState taskState(io.ckptd.v1.TaskState s) {
    return new TaskState(s.getUri(), s.getSizeBytes(), s.getChecksum());
  }

  static io.ckptd.v1.TaskState taskState(TaskState s) {
    return io.ckptd.v1.TaskState.newBuilder()
        .setUri(s.uri())
        .setSizeBytes(s.sizeBytes())
        .setChecksum(s.checksum())
        .build();
  }

  static RestorePoint restorePoint(io.ckptd.v1.RestorePoint r) {
    Map<String, TaskState> states = new LinkedHashMap<>();
    r.getTaskStatesMap().forEach((task, s) -> states.put(task, taskState(s)));
    return new RestorePoint(
        r.getCheckpointId(),
        CheckpointKind.fromProto(r.getKind()),
        r.getLocation(),
        states,
        r.getSourceJobId(),
        r.getSourcePipelineId(),
        r.getRescaled(),
        r.getOperatorSet(),
        r.getPosition(),
        r.getCommitPending());
  }

  static Welcome welcome(io.ckptd.v1.Welcome w) {
    return new Welcome(
        w.getSessionId(),
        w.getGeneration(),
        PipelineState.fromProto(w.getState()),
        w.getLastCompletedCheckpointId(),
        CheckpointKind.fromProto(w.getLastCompletedKind()),
        w.getHeartbeatIntervalMs(),
        w.getLeaseTtlMs(),
        w.getLeaderEpoch(),
        restorePoint(w.getRestore()),
        w.getRetainedCheckpointIdsList(),
        w.getLastCommittedCheckpointId());
  }

  static Trigger trigger(io.ckptd.v1.Trigger t) {
    return new Trigger(
        t.getCheckpointId(),
        CheckpointKind.fromProto(t.getKind()),
        t.getTimestampMs(),
        t.getGeneration(),
        t.getTarget(),
        t.getLeaderEpoch(),
        t.getPosition());
  }
}
