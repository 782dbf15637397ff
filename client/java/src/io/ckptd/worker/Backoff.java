package io.ckptd.worker;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Reconnect delays: doubling from {@code initial} up to {@code maximum}, each taken at random in
 * [d/2, d] so that workers that lost the daemon together do not come back together.
 *
 * <p>Not thread-safe: the worker's stream thread alone uses it.
 */
final class Backoff {
  private final long initialNanos;
  private final long maximumNanos;
  private long currentNanos;

  Backoff(Duration initial, Duration maximum) {
    if (initial.isNegative() || initial.isZero() || maximum.compareTo(initial) < 0) {
      throw new IllegalArgumentException("backoff: need 0 < initial <= maximum");
    }
    this.initialNanos = initial.toNanos();
    this.maximumNanos = maximum.toNanos();
    this.currentNanos = initialNanos;
  }

  /** A session stayed up: the next delay starts from the beginning. */
  void reset() {
    currentNanos = initialNanos;
  }

  /** The next delay; {@code slowly}: at the maximum, without moving the progression back. */
  Duration nextDelay(boolean slowly) {
    long base = slowly ? maximumNanos : currentNanos;
    currentNanos = Math.min(currentNanos * 2, maximumNanos);
    return Duration.ofNanos(ThreadLocalRandom.current().nextLong(base / 2, base + 1));
  }
}
