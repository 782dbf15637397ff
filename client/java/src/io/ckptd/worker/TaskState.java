package io.ckptd.worker;

import java.util.Objects;

/**
 * A task's snapshot as the worker reports it in an ack: opaque to the daemon, stored with the
 * completed round and handed back in {@link RestorePoint#taskStates()}.
 *
 * @param uri where the snapshot is (at most 4096 bytes)
 * @param sizeBytes its size, for operators (0: not reported)
 * @param checksum anything that lets the worker check it on restore (at most 1024 bytes)
 */
public record TaskState(String uri, long sizeBytes, String checksum) {
  public TaskState {
    Objects.requireNonNull(uri, "uri");
    Objects.requireNonNull(checksum, "checksum");
  }

  /** A state with only its uri. */
  public TaskState(String uri) {
    this(uri, 0, "");
  }
}
