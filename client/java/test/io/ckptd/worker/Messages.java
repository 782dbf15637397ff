package io.ckptd.worker;

import io.ckptd.v1.Abort;
import io.ckptd.v1.AllCommitted;
import io.ckptd.v1.Complete;
import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.Release;
import io.ckptd.v1.SavepointRefused;
import io.ckptd.v1.StateChange;
import java.util.Arrays;

/**
 * The daemon's messages, built the way a test needs them (docs/PROTOCOL.md has their fields). The
 * generated types are named in full where the SDK has a type of the same simple name.
 */
final class Messages {
  /** A welcome's heartbeat interval when a test does not look at heartbeats: none goes out. */
  static final long QUIET_HEARTBEAT_MS = 60_000;

  private Messages() {}

  static CoordinatorMessage welcome(long epoch) {
    return welcome(epoch, QUIET_HEARTBEAT_MS);
  }

  static CoordinatorMessage welcome(long epoch, long heartbeatMs) {
    return of(
        io.ckptd.v1.Welcome.newBuilder()
            .setLeaderEpoch(epoch)
            .setHeartbeatIntervalMs(heartbeatMs)
            .build());
  }

  static CoordinatorMessage of(io.ckptd.v1.Welcome welcome) {
    return CoordinatorMessage.newBuilder().setWelcome(welcome).build();
  }

  static CoordinatorMessage trigger(long checkpointId, long epoch, long position) {
    return of(
        io.ckptd.v1.Trigger.newBuilder()
            .setCheckpointId(checkpointId)
            .setLeaderEpoch(epoch)
            .setPosition(position)
            .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_CHECKPOINT)
            .build());
  }

  static CoordinatorMessage of(io.ckptd.v1.Trigger trigger) {
    return CoordinatorMessage.newBuilder().setTrigger(trigger).build();
  }

  static CoordinatorMessage abort(long checkpointId, String reason) {
    return CoordinatorMessage.newBuilder()
        .setAbort(Abort.newBuilder().setCheckpointId(checkpointId).setReason(reason))
        .build();
  }

  static CoordinatorMessage complete(long checkpointId, io.ckptd.v1.CheckpointKind kind) {
    return CoordinatorMessage.newBuilder()
        .setComplete(Complete.newBuilder().setCheckpointId(checkpointId).setKind(kind))
        .build();
  }

  static CoordinatorMessage complete(long checkpointId) {
    return complete(checkpointId, io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_CHECKPOINT);
  }

  /** A checkpoint's complete; {@code commit}: the pipeline has a commit phase. */
  static CoordinatorMessage complete(long checkpointId, boolean commit) {
    return CoordinatorMessage.newBuilder()
        .setComplete(
            Complete.newBuilder()
                .setCheckpointId(checkpointId)
                .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_CHECKPOINT)
                .setCommit(commit))
        .build();
  }

  /**
   * A welcome of {@code epoch} whose restore point, {@code checkpointId}, is still COMMITTING;
   * {@code lastCommitted} the one before it.
   */
  static CoordinatorMessage welcomeCommitPending(
      long epoch, long checkpointId, long lastCommitted) {
    return of(
        io.ckptd.v1.Welcome.newBuilder()
            .setLeaderEpoch(epoch)
            .setHeartbeatIntervalMs(QUIET_HEARTBEAT_MS)
            .setLastCompletedCheckpointId(checkpointId)
            .setLastCommittedCheckpointId(lastCommitted)
            .setRestore(
                io.ckptd.v1.RestorePoint.newBuilder()
                    .setCheckpointId(checkpointId)
                    .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_CHECKPOINT)
                    .setCommitPending(true))
            .build());
  }

  static CoordinatorMessage allCommitted(long checkpointId) {
    return CoordinatorMessage.newBuilder()
        .setAllCommitted(AllCommitted.newBuilder().setCheckpointId(checkpointId))
        .build();
  }

  static CoordinatorMessage release(Long... checkpointIds) {
    return CoordinatorMessage.newBuilder()
        .setRelease(Release.newBuilder().addAllCheckpointIds(Arrays.asList(checkpointIds)))
        .build();
  }

  static CoordinatorMessage state(io.ckptd.v1.PipelineState state, String reason) {
    return CoordinatorMessage.newBuilder()
        .setState(StateChange.newBuilder().setState(state).setReason(reason))
        .build();
  }

  static CoordinatorMessage savepointRefused(String reason) {
    return CoordinatorMessage.newBuilder()
        .setSavepointRefused(SavepointRefused.newBuilder().setReason(reason))
        .build();
  }
}
