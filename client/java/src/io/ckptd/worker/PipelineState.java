package io.ckptd.worker;

/** A pipeline's state, by the protocol's names (docs/PROTOCOL.md, "State changes"). */
public enum PipelineState {
  /** Unknown, or (in a state change) the pipeline was deleted. */
  UNSPECIFIED,
  /** Some task is not registered: no triggers until it is. */
  WAITING_FOR_TASKS,
  /** Checkpointing. */
  RUNNING,
  /** An operator paused it. */
  PAUSED,
  /** Too many failed rounds: an operator must resume it. */
  FAILED,
  /** Stopped after a SAVEPOINT_AND_STOP. */
  STOPPED;

  static PipelineState fromProto(io.ckptd.v1.PipelineState state) {
    switch (state) {
      case PIPELINE_STATE_WAITING_FOR_TASKS:
        return WAITING_FOR_TASKS;
      case PIPELINE_STATE_RUNNING:
        return RUNNING;
      case PIPELINE_STATE_PAUSED:
        return PAUSED;
      case PIPELINE_STATE_FAILED:
        return FAILED;
      case PIPELINE_STATE_STOPPED:
        return STOPPED;
      default:
        return UNSPECIFIED;
    }
  }
}
