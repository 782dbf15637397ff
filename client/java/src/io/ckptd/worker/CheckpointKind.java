package io.ckptd.worker;

/** The kind of a round, by the protocol's names (docs/PROTOCOL.md, "Rounds"). */
public enum CheckpointKind {
  /** A kind this SDK does not know (a newer daemon's), or none. */
  UNSPECIFIED,
  /** A periodic (or operator-triggered) checkpoint. */
  CHECKPOINT,
  /** A savepoint: its state goes to the trigger's target. */
  SAVEPOINT,
  /** A savepoint after which the pipeline stops: hold effects back until complete or abort. */
  SAVEPOINT_AND_STOP;

  static CheckpointKind fromProto(io.ckptd.v1.CheckpointKind kind) {
    switch (kind) {
      case CHECKPOINT_KIND_CHECKPOINT:
        return CHECKPOINT;
      case CHECKPOINT_KIND_SAVEPOINT:
        return SAVEPOINT;
      case CHECKPOINT_KIND_SAVEPOINT_AND_STOP:
        return SAVEPOINT_AND_STOP;
      default:
        return UNSPECIFIED;
    }
  }
}
