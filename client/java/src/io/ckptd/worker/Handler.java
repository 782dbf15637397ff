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
 * (an Error too, short of the JVM's own) is logged and does not end the stream; one thrown by the
 * handlers of a commit also keeps the worker from sending {@code committed} for it (see {@link
 * #onCommit}).
 */
public interface Handler {
  /** The worker is about to open a stream to {@code target}; {@code takeover}: its hello asks for it. */
  default void onConnecting(String target, boolean takeover) {}

  /**
   * The daemon accepted the stream: load the tasks' state from {@code welcome.restore()}. This is
   * the restore handler (docs/PROTOCOL.md, "Verified restore"): with a restore point, the worker
   * sends its outcome to the daemon; an exception means the restore failed, and the daemon marks
   * that checkpoint unrestorable and ends the stream, whose next welcome names an older one. Not
   * called when the pipeline is FAILED without a restore point it may offer ({@link
   * #onStateChange} says FAILED instead, and the application should wait).
   */
  default void onWelcome(Welcome welcome) {}

  /** Snapshot every task, then call {@code ack} (or {@code decline}) once per task. */
  default void onTrigger(Trigger trigger) {}

  /** The round failed or was dropped: discard what the tasks wrote for it. */
  default void onAbort(long checkpointId, String reason) {}

  /**
   * The round is durable: commit the side effects held back for it. May name a round this stream
   * never saw a trigger for (a takeover, a reconnect): it then means "this is now the newest
   * durable round". With a commit phase, {@link #onCommit} follows for the same id.
   */
  default void onComplete(long checkpointId, CheckpointKind kind) {}

  /**
   * The pipeline has a commit phase (docs/PROTOCOL.md, "Commit phase"): commit what {@code
   * checkpointId} held back (a prepared transaction, files to publish). Called right after {@link
   * #onComplete} for a complete that asks for a commit, and right after {@link #onWelcome} for a
   * restore point with {@link RestorePoint#commitPending()} (then again, as the commit may have
   * happened before a crash or reconnect: committing must be idempotent). No new round of the
   * pipeline starts until every task committed.
   *
   * <p>With {@link WorkerOptions#autoCommit()} (the default) the worker sends {@code committed}
   * for every task of its own once this returns, unless this handler or the {@code onComplete} or
   * {@code onWelcome} before it threw: then nothing is sent for that commit, and the checkpoint
   * stays COMMITTING (the daemon warns once it is overdue) until the application calls {@link
   * PipelineWorker#committed} per task, or a later welcome asks again. Without autoCommit, call
   * {@code committed} once each task's commit is done, from any thread (an asynchronous commit).
   */
  default void onCommit(long checkpointId) {}

  /**
   * Every task of the pipeline committed {@code checkpointId}, and its COMMITTED mark is durable:
   * what it held back may be forgotten.
   */
  default void onAllCommitted(long checkpointId) {}

  /** These rounds left the history: delete their state (idempotently; may come twice). */
  default void onRelease(List<Long> checkpointIds) {}

  /** The pipeline was paused, failed, stopped, resumed or (UNSPECIFIED) deleted. */
  default void onStateChange(PipelineState state, String reason) {}

  /** The daemon will not run the savepoint this worker asked for. */
  default void onSavepointRefused(String reason) {}

  /** The stream ended without the worker asking; {@code disconnect} says what happens next. */
  default void onDisconnected(Disconnect disconnect) {}
}
