package io.ckptd.worker;

/**
 * When a worker retries at the standby pace (at most a second apart) rather than its backoff, as
 * the C++ SDK does (client/sdk/standby_poll.h). A standby's answer says a takeover is under way,
 * due within the election TTL; so does a leader lost by a worker that knows several daemons (a
 * stream welcomed for a while that ended UNAVAILABLE), whose channel to the standby may still fail
 * fast from the standby's own restart and never bring its answer. Only for the window after the
 * first sign since the last welcome: a group that stays without a leader is then retried at the
 * normal backoff.
 *
 * <p>Not thread-safe: the worker's stream thread alone uses it. Times are passed in (nanoseconds
 * of {@link System#nanoTime()}), so that tests need no clock.
 */
final class StandbyPoll {
  private final long windowNanos;
  private final boolean inGroup;
  private boolean answered; // a sign since the last welcome (or the start) ...
  private long sinceNanos; // ... first at this time

  /** {@code inGroup}: the worker was given several daemons, so a lost leader has a successor. */
  StandbyPoll(long windowNanos, boolean inGroup) {
    this.windowNanos = windowNanos;
    this.inGroup = inGroup;
  }

  /**
   * A stream ended at {@code nowNanos}: whether it had been welcomed, whether a daemon answered as
   * a standby (its trailer named a leader, or said there is none yet), and whether it was a leader
   * lost (welcomed and up for a while, then UNAVAILABLE).
   */
  void streamEnded(
      boolean wasWelcomed, boolean standbyAnswered, boolean leaderLost, long nowNanos) {
    if (wasWelcomed) {
      answered = false;
    }
    boolean sign = standbyAnswered || (wasWelcomed && leaderLost && inGroup);
    if (sign && !answered) {
      answered = true;
      sinceNanos = nowNanos;
    }
  }

  /** Whether the next retry goes at the standby pace. */
  boolean active(long nowNanos) {
    return answered && nowNanos - sinceNanos < windowNanos;
  }
}
