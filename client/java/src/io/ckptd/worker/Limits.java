package io.ckptd.worker;

import java.nio.charset.StandardCharsets;

/**
 * The daemon's rules for what a worker sends (docs/PROTOCOL.md, "Limits"), checked before the
 * send (ids: when the options are built). Past one of them the daemon ends the stream
 * INVALID_ARGUMENT, which stops the worker for good; an exception at the call instead names the
 * culprit, and the worker goes on.
 */
final class Limits {
  /** {@code ack.state.uri} and {@code savepoint_request.target}, in UTF-8 bytes. */
  static final int MAX_URI_BYTES = 4096;
  /** {@code ack.state.checksum}, in UTF-8 bytes. */
  static final int MAX_CHECKSUM_BYTES = 1024;

  /** What the daemon keeps of {@code restore_result.reason}, in characters. */
  static final int MAX_RESTORE_REASON_CHARS = 1024;

  private Limits() {}

  /** {@code text}, or its first {@code max} characters (never half of a surrogate pair). */
  static String cut(String text, int max) {
    if (text.length() <= max) {
      return text;
    }
    int end = max;
    if (Character.isHighSurrogate(text.charAt(end - 1))) {
      end--;
    }
    return text.substring(0, end);
  }

  /**
   * IllegalArgumentException naming {@code what} when the daemon refuses {@code id} in a hello
   * whatever its limits: empty, a control character (C0, DEL or C1), or "." or "..". (Its length
   * bound, {@code limits.max_id_length}, is the daemon's to set, and its own to check.)
   */
  static void checkId(String id, String what) {
    if (id.isEmpty()) {
      throw new IllegalArgumentException(what + " is empty");
    }
    if (hasControl(id)) {
      throw new IllegalArgumentException(what + " has a control character");
    }
    if (id.equals(".") || id.equals("..")) {
      throw new IllegalArgumentException(what + " may not be . or ..");
    }
  }

  /** IllegalArgumentException when the daemon would refuse {@code state} in an ack. */
  static void checkState(TaskState state) {
    if (utf8Length(state.uri()) > MAX_URI_BYTES) {
      throw new IllegalArgumentException("a state uri is at most " + MAX_URI_BYTES + " bytes");
    }
    if (utf8Length(state.checksum()) > MAX_CHECKSUM_BYTES) {
      throw new IllegalArgumentException(
          "a state checksum is at most " + MAX_CHECKSUM_BYTES + " bytes");
    }
  }

  /**
   * IllegalArgumentException when the daemon would end the stream over {@code target}: longer
   * than 4096 bytes, a control character (C0, DEL or C1), or "." or "..". Empty is the default.
   */
  static void checkTarget(String target) {
    if (target.isEmpty()) {
      return;
    }
    if (utf8Length(target) > MAX_URI_BYTES) {
      throw new IllegalArgumentException("a savepoint target is at most " + MAX_URI_BYTES + " bytes");
    }
    if (hasControl(target)) {
      throw new IllegalArgumentException("a savepoint target may not have a control character");
    }
    if (target.equals(".") || target.equals("..")) {
      throw new IllegalArgumentException("a savepoint target may not be . or ..");
    }
  }

  private static boolean hasControl(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
        return true;
      }
    }
    return false;
  }

  private static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }
}
