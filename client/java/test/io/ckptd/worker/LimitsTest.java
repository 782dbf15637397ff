package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import org.junit.Test;

/** What the daemon would refuse, caught before the send (docs/PROTOCOL.md, "Limits"). */
public class LimitsTest {
  @Test
  public void anIdIsNotEmptyNorDotsNorControlCharacters() {
    for (String id : new String[] {"", ".", "..", "a\u0000", "a\nb", "a\u007f", "a\u0085"}) {
      assertThrows(id, IllegalArgumentException.class, () -> Limits.checkId(id, "job"));
    }
    for (String id : new String[] {"a", "a.b", "...", "caf\u00e9", "job 1"}) {
      Limits.checkId(id, "job");
    }
  }

  @Test
  public void aStateUriAndChecksumHaveUtf8Bounds() {
    Limits.checkState(new TaskState("u".repeat(4096), 0, "c".repeat(1024)));
    assertThrows(
        IllegalArgumentException.class,
        () -> Limits.checkState(new TaskState("u".repeat(4097))));
    // Counted in UTF-8 bytes, not characters: 2049 two-byte characters are 4098 bytes.
    assertThrows(
        IllegalArgumentException.class,
        () -> Limits.checkState(new TaskState("\u00e9".repeat(2049))));
    assertThrows(
        IllegalArgumentException.class,
        () -> Limits.checkState(new TaskState("u", 0, "c".repeat(1025))));
  }

  @Test
  public void aSavepointTargetIsEmptyOrAUsablePath() {
    Limits.checkTarget("");
    Limits.checkTarget("s3://bucket/savepoints/1");
    for (String target : new String[] {".", "..", "s3://a\tb", "x".repeat(4097)}) {
      assertThrows(
          target.length() > 20 ? "4097 bytes" : target,
          IllegalArgumentException.class,
          () -> Limits.checkTarget(target));
    }
  }

  @Test
  public void aLongReasonIsCutAndNeverSplitsASurrogatePair() {
    assertEquals("short", Limits.cut("short", 1024));
    assertEquals(1024, Limits.cut("x".repeat(5000), 1024).length());
    String pair = "\uD83D\uDE00"; // one character outside the BMP: two chars
    assertEquals("x".repeat(1023), Limits.cut("x".repeat(1023) + pair, 1024));
  }
}
