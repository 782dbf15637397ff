package io.ckptd.worker;

import java.util.List;

/**
 * The daemon accepted the stream. Load the tasks' state from {@code restore} before any trigger.
 *
 * @param sessionId this session's id, as the daemon's logs name it
 * @param generation the pipeline's generation after this registration
 * @param state the pipeline's state at registration
 * @param lastCompletedCheckpointId the newest durable round (0: none). Also a completion notice:
 *     after a daemon crash it may name a round no complete came for
 * @param lastCompletedKind its kind
 * @param heartbeatIntervalMs how often this SDK heartbeats on this stream
 * @param leaseTtlMs how long a silent stream keeps its tasks
 * @param leaderEpoch the leadership that sent it (0: embedded store)
 * @param restore where the tasks restore from
 * @param retainedCheckpointIds every id the daemon still references, oldest first
 * @param lastCommittedCheckpointId the newest checkpoint whose commit phase is durably COMMITTED
 *     (0: none, or a pipeline without a commit phase); {@code restore().commitPending()} says
 *     whether the restore point still waits for this stream's commit
 */
public record Welcome(
    String sessionId,
    long generation,
    PipelineState state,
    long lastCompletedCheckpointId,
    CheckpointKind lastCompletedKind,
    long heartbeatIntervalMs,
    long leaseTtlMs,
    long leaderEpoch,
    RestorePoint restore,
    List<Long> retainedCheckpointIds,
    long lastCommittedCheckpointId) {
  public Welcome {
    retainedCheckpointIds = List.copyOf(retainedCheckpointIds);
  }
}
