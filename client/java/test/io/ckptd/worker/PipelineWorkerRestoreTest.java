package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.RestoreResult;
import io.ckptd.v1.WorkerMessage.MsgCase;
import org.junit.Test;

/**
 * Verified restore (docs/PROTOCOL.md, "Verified restore"): the worker reports its restore
 * handler's outcome as restore_result, a throw being a failed restore with its message as the
 * reason; a welcome with restore_withheld does not call onWelcome but onStateChange FAILED.
 */
public class PipelineWorkerRestoreTest extends WorkerHarness {
  private static CoordinatorMessage welcomeRestoring(long checkpointId) {
    return Messages.of(
        io.ckptd.v1.Welcome.newBuilder()
            .setHeartbeatIntervalMs(Messages.QUIET_HEARTBEAT_MS)
            .setLastCompletedCheckpointId(checkpointId)
            .setRestore(io.ckptd.v1.RestorePoint.newBuilder().setCheckpointId(checkpointId))
            .build());
  }

  private static RestoreResult firstResult(FakeCall call) {
    return call.awaitSent(MsgCase.RESTORE_RESULT, 1).get(0).getRestoreResult();
  }

  @Test
  public void aRestoreHandlerThatReturnsIsReportedOk() {
    start();
    FakeCall call = welcomeNextCall(welcomeRestoring(41));
    RestoreResult result = firstResult(call);
    assertEquals(41, result.getCheckpointId());
    assertEquals("0", result.getTaskId());
    assertTrue(result.getOk());
  }

  @Test
  public void aThrowingRestoreHandlerIsAFailedRestoreWithItsMessage() {
    start();
    handler.then(
        "welcome",
        e -> {
          throw new IllegalStateException("chk-41/0 is truncated");
        });
    FakeCall call = welcomeNextCall(welcomeRestoring(41));
    RestoreResult result = firstResult(call);
    assertEquals(41, result.getCheckpointId());
    assertFalse(result.getOk());
    assertEquals("chk-41/0 is truncated", result.getReason());
  }

  @Test
  public void aFailedRestoreOfACommittingRestorePointCommitsNothing() {
    start();
    handler.then(
        "welcome",
        e -> {
          throw new IllegalStateException("chk-4 is truncated");
        });
    FakeCall call = welcomeNextCall(Messages.welcomeCommitPending(0, 4, 3));
    assertFalse(firstResult(call).getOk());
    awaitHandled(call);
    assertEquals(0, handler.of("commit").size());
    assertEquals(0, call.sent(MsgCase.COMMITTED).size());
  }

  @Test
  public void aFreshPipelineSendsNoResult() {
    start();
    FakeCall call = welcomeNextCall();
    awaitHandled(call);
    assertEquals(0, call.sent(MsgCase.RESTORE_RESULT).size());
  }

  @Test
  public void aWithheldRestoreHoldsTheApplicationBack() {
    start();
    FakeCall call = transport.nextCall();
    call.reply(
        Messages.of(
            io.ckptd.v1.Welcome.newBuilder()
                .setHeartbeatIntervalMs(Messages.QUIET_HEARTBEAT_MS)
                .setState(io.ckptd.v1.PipelineState.PIPELINE_STATE_FAILED)
                .setRestoreWithheld(true)
                .build()));
    RecordingHandler.Event state = handler.await("state");
    assertEquals(PipelineState.FAILED, state.arg(0));
    assertTrue(((String) state.arg(1)).contains("held back"));
    assertEquals(0, handler.of("welcome").size());
    assertEquals(0, call.sent(MsgCase.RESTORE_RESULT).size());
  }
}
