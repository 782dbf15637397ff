package io.ckptd.worker;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Waiting for the worker's threads: on a monitor, with a deadline, never a bare sleep. */
final class Waits {
  /** Generous, since a loaded machine may be slow; a passing test never waits that long. */
  static final Duration TIMEOUT = Duration.ofSeconds(10);

  private Waits() {}

  /**
   * Waits until {@code condition} holds; the caller holds {@code monitor}, which is notified
   * whenever what the condition reads changes. AssertionError naming {@code what} at the deadline.
   */
  static void until(Object monitor, BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (!condition.getAsBoolean()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(
            "timed out after " + TIMEOUT.toSeconds() + " s waiting for " + what);
      }
      try {
        TimeUnit.NANOSECONDS.timedWait(monitor, left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for " + what, e);
      }
    }
  }
}
