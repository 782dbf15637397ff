package io.ckptd.worker;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.Test;

/** When a worker retries at the standby pace rather than its backoff. */
public class StandbyPollTest {
  private static final long WINDOW = TimeUnit.SECONDS.toNanos(30);
  private static final long T0 = TimeUnit.SECONDS.toNanos(1000);

  private static long at(long seconds) {
    return T0 + TimeUnit.SECONDS.toNanos(seconds);
  }

  @Test
  public void aStandbysAnswerPollsForTheWindowFromTheFirstAnswer() {
    StandbyPoll poll = new StandbyPoll(WINDOW, false);
    assertFalse(poll.active(at(0)));
    poll.streamEnded(false, true, false, at(0));
    assertTrue(poll.active(at(0)));
    poll.streamEnded(false, true, false, at(20)); // later answers do not extend it
    assertTrue(poll.active(at(29)));
    assertFalse(poll.active(at(30)));
  }

  @Test
  public void aLeaderLostInAGroupPollsWithoutAStandbysAnswer() {
    StandbyPoll poll = new StandbyPoll(WINDOW, true);
    poll.streamEnded(false, false, true, at(0));
    assertFalse("never welcomed: nothing was lost", poll.active(at(0)));
    poll.streamEnded(true, false, true, at(10));
    assertTrue(poll.active(at(10)));
    assertFalse(poll.active(at(40)));
  }

  @Test
  public void aLeaderLostByAWorkerOfOneDaemonKeepsTheBackoff() {
    StandbyPoll poll = new StandbyPoll(WINDOW, false);
    poll.streamEnded(true, false, true, at(0));
    assertFalse(poll.active(at(0)));
  }

  @Test
  public void aStreamEndedOtherwiseIsNoSignAndAWelcomeStartsItOver() {
    StandbyPoll poll = new StandbyPoll(WINDOW, true);
    poll.streamEnded(true, false, false, at(0)); // a lease expired, or dropped right away
    assertFalse(poll.active(at(0)));
    poll.streamEnded(false, true, false, at(1));
    assertTrue(poll.active(at(2)));
    poll.streamEnded(true, false, false, at(3)); // welcomed again, then lost otherwise
    assertFalse(poll.active(at(3)));
  }
}
