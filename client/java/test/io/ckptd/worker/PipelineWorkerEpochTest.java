package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.grpc.Status;
import java.util.List;
import org.junit.Test;

/**
 * The epoch filter: what a deposed leader still sends is dropped (docs/PROTOCOL.md, "High
 * availability"); epoch 0, a daemon with the embedded store, never is.
 */
public class PipelineWorkerEpochTest extends WorkerHarness {
  /** Ends {@code call} as a broken connection does and returns the worker's next call. */
  private FakeCall reconnect(FakeCall call) {
    call.finish(Status.Code.UNAVAILABLE, "connection broke");
    return transport.nextCall();
  }

  private List<Long> triggered() {
    return handler.of("trigger").stream().map(e -> ((Trigger) e.arg(0)).checkpointId()).toList();
  }

  @Test
  public void aTriggerOfAnOlderLeadershipIsDropped() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall(Messages.welcome(5));
    call.reply(Messages.trigger(1, 4, 0));
    call.reply(Messages.trigger(2, 5, 0));
    call.reply(Messages.trigger(3, 0, 0));
    call.reply(Messages.trigger(4, 6, 0));
    awaitHandled(call);
    assertEquals(List.of(2L, 3L, 4L), triggered());
    assertEquals(1, worker.counters().staleMessages());
  }

  @Test
  public void aStaleWelcomeIsIgnoredWithEveryEndOfRoundOfItsStream() {
    PipelineWorker worker = start();
    FakeCall call = reconnect(welcomeNextCall(Messages.welcome(5)));
    call.reply(Messages.welcome(4));
    call.reply(Messages.abort(1, "r"));
    call.reply(Messages.complete(1));
    call.reply(Messages.release(1L));
    call.reply(Messages.trigger(2, 4, 0));
    awaitHandled(call);
    assertEquals(1, handler.of("welcome").size());
    assertEquals(List.of(), triggered());
    assertEquals(List.of(), handler.of("complete"));
    assertFalse(worker.isConnected());
    assertEquals(5, worker.counters().staleMessages());
    assertEquals(1, worker.counters().connects());
  }

  @Test
  public void aNewerWelcomeRaisesTheBar() {
    PipelineWorker worker = start();
    FakeCall call = reconnect(welcomeNextCall(Messages.welcome(5)));
    call.reply(Messages.welcome(7));
    handler.await("welcome", 2);
    call.reply(Messages.trigger(1, 6, 0));
    call.reply(Messages.complete(1));
    handler.await("complete");
    assertEquals(List.of(), triggered());
    assertEquals(1, worker.counters().staleMessages());
  }

  @Test
  public void epochZeroIsNeverStale() {
    PipelineWorker worker = start();
    FakeCall call = reconnect(welcomeNextCall(Messages.welcome(5)));
    call.reply(Messages.welcome(0));
    call.reply(Messages.complete(1));
    handler.await("complete");
    assertEquals(2, handler.of("welcome").size());
    assertTrue(worker.isConnected());
    assertEquals(0, worker.counters().staleMessages());
  }
}
