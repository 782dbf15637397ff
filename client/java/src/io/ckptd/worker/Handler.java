package io.ckptd.worker;

import java.util.List;

/**
 * What the application does with the daemon's messages. Every method has an empty default:
 * implement those you need.
 *
 * <p>Threads: a worker calls its handler from its own stream thread, one call at a time, in the
 * order the daemon sent the messages. A handler must not block for long (the daemon's next
 * messages wait meanwhile; heartbeats go on from their own thread); it may call any method of its
 * {@link PipelineWorker}, such as {@code ack} or {@code goodbye}. An exception a handler throws
 * (an Error too, short of the JVM's own) is logged and does not end the stream.
 */
public interface Handler {
  /** The worker is about to open a stream to {@code target}; {@code takeover}: its hello asks for it. */
  default void onConnecting(String target, boolean takeover) {}

  /** The daemon accepted the stream: load the tasks' state from {@code welcome.restore()}. */
  default void onWelcome(Welcome welcome) {}

  /** Snapshot every task, then call {@code ack} (or {@code decline}) once per task. */
  default void onTrigger(Trigger trigger) {}

  /** The round failed or was dropped: discard what the tasks wrote for it. */
  default void onAbort(long checkpointId, String reason) {}

  /** The round is durable: commit the side effects held back for it. */
  default void onComplete(long checkpointId, CheckpointKind kind) {}

  /** These rounds left the history: delete their state (idempotently; may come twice). */
  default void onRelease(List<Long> checkpointIds) {}

  /** The pipeline was paused, failed, stopped, resumed or (UNSPECIFIED) deleted. */
  default void onStateChange(PipelineState state, String reason) {}

  /** The daemon will not run the savepoint this worker asked for. */
  default void onSavepointRefused(String reason) {}

  /** The stream ended without the worker asking; {@code disconnect} says what happens next. */
  default void onDisconnected(Disconnect disconnect) {}
}
