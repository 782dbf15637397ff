package io.ckptd.worker;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;

/**
 * The bearer token of a token file (docs/SECURITY.md), read again on each connect when the file
 * changed, so that a rotated token (replaced by a rename) is picked up without a restart. A file
 * that became unreadable or invalid keeps the last good token.
 *
 * <p>Thread-safe (synchronized): the stream thread reads it; the constructor checks it once.
 */
final class TokenSource {
  private static final long MAX_FILE_BYTES = 1024 * 1024;
  /**
   * A file modified this recently can change again within the same modification-time tick (a
   * second on some file systems) and keep its size: its stamp proves nothing yet, so it is read
   * again at each connect until it is older.
   */
  private static final long SETTLED_MILLIS = 2000;
  private static final System.Logger LOG = System.getLogger("io.ckptd.worker");

  private final Path path;
  private String token;
  private Object stamp;
  private String lastWarning; // said once, until the file holds a valid token again

  /** {@code path} null: no token. Throws IllegalArgumentException when the file holds none. */
  TokenSource(Path path) {
    this.path = path;
    if (path != null) {
      String first = read();
      if (first == null) {
        throw new IllegalArgumentException("token file " + path + " holds no valid token");
      }
      token = first;
    }
  }

  boolean present() {
    return path != null;
  }

  /** The token to send now, or null without a token file. */
  synchronized String current() {
    if (path == null) {
      return null;
    }
    String fresh = read();
    if (fresh != null) {
      token = fresh;
    }
    return token;
  }

  /** The file's token if it changed since the last read and is valid; null otherwise. */
  private String read() {
    try {
      BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
      Object now = java.util.List.of(a.lastModifiedTime(), a.size(), String.valueOf(a.fileKey()));
      if (Objects.equals(now, stamp)) {
        return null;
      }
      boolean settled =
          System.currentTimeMillis() - a.lastModifiedTime().toMillis() > SETTLED_MILLIS;
      stamp = settled ? now : null;
      if (!a.isRegularFile() || a.size() > MAX_FILE_BYTES) {
        warn("is not a regular file of at most 1 MiB");
        return null;
      }
      String t = new String(Files.readAllBytes(path), StandardCharsets.UTF_8).strip();
      if (t.isEmpty() || !t.chars().allMatch(c -> c >= 33 && c < 127)) {
        warn("holds no valid token");
        return null;
      }
      lastWarning = null;
      return t;
    } catch (IOException e) {
      warn("cannot be read: " + e.getMessage());
      return null;
    }
  }

  /** Once per problem, not once per connect: a missing file has no stamp to tell it changed. */
  private void warn(String why) {
    if (token != null && !why.equals(lastWarning)) {
      lastWarning = why;
      LOG.log(Level.WARNING, "token file {0} {1}; sending the last good one", path, why);
    }
  }
}
