package io.ckptd.worker;

/**
 * Snapshot every task of this stream, then ack (or decline) once per task.
 *
 * @param checkpointId the round's id
 * @param kind checkpoint or savepoint
 * @param timestampMs when the daemon triggered it (ms since the epoch)
 * @param generation the pipeline's generation (log it; a jump says participants changed)
 * @param target where a savepoint's state goes; empty for checkpoints
 * @param leaderEpoch the leadership that sent it (0: embedded store)
 * @param position with a position_interval: snapshot each task when it reaches exactly this
 *     position, then ack; a task already past it declines with its position. 0: snapshot now
 */
public record Trigger(
    long checkpointId,
    CheckpointKind kind,
    long timestampMs,
    long generation,
    String target,
    long leaderEpoch,
    long position) {}
