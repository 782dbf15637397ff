package io.ckptd.worker;

import java.util.Map;

/**
 * Where this stream's tasks restore from (docs/PROTOCOL.md, "Restore and release").
 *
 * @param checkpointId 0: a fresh pipeline, start empty
 * @param kind a checkpoint or a savepoint
 * @param location savepoints: where their state went
 * @param taskStates task id to its state: this stream's tasks, or every state of the source when
 *     {@code rescaled}
 * @param sourceJobId the job of the pipeline whose checkpoint it is
 * @param sourcePipelineId that pipeline
 * @param rescaled the source's task set differs: redistribute {@code taskStates} over the tasks
 * @param operatorSet chosen by an operator rather than the newest completed round
 * @param position where the checkpoint was taken (0: none): resume reading there
 * @param commitPending the checkpoint is still COMMITTING (a pipeline with a commit phase,
 *     docs/PROTOCOL.md "Commit phase"): commit what it held back, again if it was done before a
 *     crash or reconnect (committing must be idempotent). {@link Handler#onCommit} is called for it
 *     right after {@link Handler#onWelcome}
 */
public record RestorePoint(
    long checkpointId,
    CheckpointKind kind,
    String location,
    Map<String, TaskState> taskStates,
    String sourceJobId,
    String sourcePipelineId,
    boolean rescaled,
    boolean operatorSet,
    long position,
    boolean commitPending) {
  public RestorePoint {
    taskStates = Map.copyOf(taskStates);
  }
}
