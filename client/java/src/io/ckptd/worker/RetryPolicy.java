package io.ckptd.worker;

import io.grpc.Status;

/**
 * What a worker does when its stream ends without it asking: the table of docs/PROTOCOL.md ("How
 * a stream ends, and what to do"), in one place.
 */
public final class RetryPolicy {
  /** The three answers. */
  public enum Action {
    /** Reconnect after an exponential backoff, with takeover. */
    RETRY,
    /** Reconnect at the backoff's maximum: the cause is not expected to clear soon. */
    RETRY_SLOWLY,
    /** Stop for good: the same hello cannot succeed, or another worker owns the tasks now. */
    GIVE_UP
  }

  /** The start of the message of a stream ended by RestorePipeline: come back at once. */
  public static final String RESTORED_PREFIX = "restored to checkpoint";

  /** Trailing metadata of a standby's UNAVAILABLE: the leader's HOST:PORT (empty: none known). */
  public static final String LEADER_TRAILER = "ckpt-leader";

  /** Redirects followed in a row before the worker moves on along its own list. */
  public static final int MAX_REDIRECTS_IN_A_ROW = 3;

  private RetryPolicy() {}

  /** The action for a stream that ended with {@code code} and {@code message}. */
  public static Action classify(Status.Code code, String message) {
    switch (code) {
      case ABORTED:
        // Restored by an operator: back for the new restore point. Otherwise another stream
        // took the tasks over, and taking them back would start a fight.
        return message != null && message.startsWith(RESTORED_PREFIX)
            ? Action.RETRY
            : Action.GIVE_UP;
      case INVALID_ARGUMENT:
      case PERMISSION_DENIED:
      case UNAUTHENTICATED:
      case UNIMPLEMENTED:
        return Action.GIVE_UP;
      case NOT_FOUND:
        return Action.RETRY_SLOWLY; // an operator may create the pipeline later
      case FAILED_PRECONDITION:
        return Action.RETRY_SLOWLY; // its stored record is unreadable: an operator must recreate it
      default:
        // UNAVAILABLE, DEADLINE_EXCEEDED (lease expired), ALREADY_EXISTS (our previous stream
        // not yet seen dead), CANCELLED, RESOURCE_EXHAUSTED, OK without our goodbye, the rest.
        return Action.RETRY;
    }
  }

  /** True when {@code code} and {@code message} say an operator restored the pipeline. */
  static boolean isRestore(Status.Code code, String message) {
    return code == Status.Code.ABORTED && message != null && message.startsWith(RESTORED_PREFIX);
  }
}
