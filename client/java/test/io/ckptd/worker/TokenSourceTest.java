package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** The bearer token of a token file: read again when the file changed, the last good one kept. */
public class TokenSourceTest {
  private Path dir;
  private Path file;

  @Before
  public void makeDirectory() throws IOException {
    dir = Files.createTempDirectory("token-test");
    file = dir.resolve("token");
  }

  @After
  public void removeDirectory() throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  /** Writes a new version beside the file and renames it over, as a rotation does. */
  private void rotate(String content) throws IOException {
    Path next = dir.resolve("next");
    Files.writeString(next, content);
    Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** Rewrites the file in place, with the modification time {@code at}. */
  private void rewriteInPlace(String content, Instant at) throws IOException {
    Files.writeString(file, content);
    Files.setLastModifiedTime(file, FileTime.from(at));
  }

  @Test
  public void noFileNoToken() {
    TokenSource none = new TokenSource(null);
    assertFalse(none.present());
    assertNull(none.current());
  }

  @Test
  public void theFilesTokenWithoutItsLineEnd() throws IOException {
    rotate("s3cret\r\n");
    TokenSource source = new TokenSource(file);
    assertTrue(source.present());
    assertEquals("s3cret", source.current());
  }

  @Test
  public void refusesAFileWithoutAValidToken() throws IOException {
    for (String content : new String[] {"", "\n", "two words", "caf\u00e9", "tab\tinside"}) {
      rotate(content);
      assertThrows(content, IllegalArgumentException.class, () -> new TokenSource(file));
    }
    Files.delete(file);
    assertThrows(IllegalArgumentException.class, () -> new TokenSource(file));
  }

  @Test
  public void aRotatedTokenIsPickedUp() throws IOException {
    rotate("first");
    TokenSource source = new TokenSource(file);
    rotate("second");
    assertEquals("second", source.current());
  }

  @Test
  public void keepsTheLastGoodTokenWhileTheFileIsBad() throws IOException {
    rotate("good");
    TokenSource source = new TokenSource(file);
    rotate("not valid");
    assertEquals("good", source.current());
    Files.delete(file);
    assertEquals("good", source.current());
    rotate("better");
    assertEquals("better", source.current());
  }

  @Test
  public void aRecentFileIsReadAgainEvenWithAnUnchangedStamp() throws IOException {
    // Two writes within one modification-time tick, of the same size: only the content differs.
    Instant now = Instant.now();
    rewriteInPlace("aaaa", now);
    TokenSource source = new TokenSource(file);
    rewriteInPlace("bbbb", now);
    assertEquals("bbbb", source.current());
  }

  @Test
  public void aSettledFileIsNotReadAgainWhileItsStampIsUnchanged() throws IOException {
    Instant anHourAgo = Instant.now().minusSeconds(3600);
    rewriteInPlace("aaaa", anHourAgo);
    TokenSource source = new TokenSource(file);
    rewriteInPlace("bbbb", anHourAgo); // what no rotation does: the stamp says unchanged
    assertEquals("aaaa", source.current());
    rewriteInPlace("bbbb", anHourAgo.plusSeconds(1));
    assertEquals("bbbb", source.current());
  }
}
