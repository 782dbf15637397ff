package io.ckptd.worker;

/**
 * What a task may tell operators about its part of a round (ckptctl checkpoint get, the web
 * view). 0: not reported.
 *
 * @param syncDurationMs the synchronous part (the barrier's snapshot)
 * @param asyncDurationMs the asynchronous part (the upload)
 * @param alignmentDurationMs the barrier alignment
 * @param bytesProcessedDuringAlignment what the task read while it aligned
 */
public record AckFigures(
    long syncDurationMs,
    long asyncDurationMs,
    long alignmentDurationMs,
    long bytesProcessedDuringAlignment) {
  /** Nothing reported. */
  public static final AckFigures NONE = new AckFigures(0, 0, 0, 0);
}
