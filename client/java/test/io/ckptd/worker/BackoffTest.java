package io.ckptd.worker;

import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.time.Duration;
import org.junit.Test;

/** Reconnect delays: doubling from initial to maximum, each at random in [d/2, d]. */
public class BackoffTest {
  private static final Duration MS = Duration.ofMillis(1);

  /** Asserts that {@code delay} lies in [base/2, base]. */
  private static void assertJitteredFrom(Duration base, Duration delay) {
    assertTrue(
        delay + " not in [" + base.dividedBy(2) + ", " + base + "]",
        delay.compareTo(base.dividedBy(2)) >= 0 && delay.compareTo(base) <= 0);
  }

  @Test
  public void needsAPositiveInitialNotAboveTheMaximum() {
    assertThrows(IllegalArgumentException.class, () -> new Backoff(Duration.ZERO, MS));
    assertThrows(IllegalArgumentException.class, () -> new Backoff(MS.negated(), MS));
    assertThrows(IllegalArgumentException.class, () -> new Backoff(MS.multipliedBy(2), MS));
    new Backoff(MS, MS); // equal is fine
  }

  @Test
  public void doublesUpToTheMaximum() {
    // Repeated: each delay is random, and a wrong progression shows in one run or another.
    for (int run = 0; run < 50; run++) {
      Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofMillis(800));
      for (long base : new long[] {100, 200, 400, 800, 800, 800}) {
        assertJitteredFrom(Duration.ofMillis(base), backoff.nextDelay(false));
      }
    }
  }

  @Test
  public void resetStartsFromTheInitialDelayAgain() {
    for (int run = 0; run < 50; run++) {
      Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofMillis(800));
      for (int i = 0; i < 4; i++) {
        backoff.nextDelay(false);
      }
      backoff.reset();
      assertJitteredFrom(Duration.ofMillis(100), backoff.nextDelay(false));
    }
  }

  @Test
  public void slowlyWaitsTheMaximumFromTheFirstDelay() {
    for (int run = 0; run < 50; run++) {
      Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofMillis(800));
      assertJitteredFrom(Duration.ofMillis(800), backoff.nextDelay(true));
    }
  }
}
