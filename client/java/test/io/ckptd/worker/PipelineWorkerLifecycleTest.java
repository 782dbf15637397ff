package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.WorkerMessage.MsgCase;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import org.junit.Test;

/** Starting and ending a PipelineWorker: goodbye, stop, and what happens before start. */
public class PipelineWorkerLifecycleTest extends WorkerHarness {
  private static Thread inBackground(Runnable r) {
    Thread t = new Thread(r, "test background");
    t.setDaemon(true);
    t.start();
    return t;
  }

  private static void assertEnds(Thread t, String what) throws InterruptedException {
    t.join(Waits.TIMEOUT.toMillis());
    assertFalse(what, t.isAlive());
  }

  private static MsgCase lastSent(FakeCall call) {
    List<io.ckptd.v1.WorkerMessage> sent = call.sent();
    return sent.get(sent.size() - 1).getMsgCase();
  }

  @Test
  public void goodbyeThenHalfCloseThenTheDaemonEndsTheStream() throws InterruptedException {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    Thread goodbye = inBackground(() -> worker.goodbye(Waits.TIMEOUT));
    call.awaitHalfClosed();
    assertEquals(MsgCase.GOODBYE, lastSent(call));
    assertNull(call.cancelledWith());
    assertFalse(worker.isStopped()); // goodbye waits for the daemon's answer
    call.finish(Status.Code.OK, null);
    assertEnds(goodbye, "goodbye() returns once the daemon ended the stream");
    assertTrue(worker.isStopped());
    assertEquals(List.of(), handler.of("disconnected"));
    assertEquals(1, transport.callCount());
    assertEquals(0, worker.counters().disconnects());
    assertTrue(transport.allChannelsShutDown());
  }

  @Test
  public void sendsAfterGoodbyeAreDropped() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    inBackground(() -> worker.goodbye(Waits.TIMEOUT));
    call.awaitHalfClosed();
    worker.ack(1, "0", new TaskState("u"));
    assertEquals(1, worker.counters().droppedSends());
    assertEquals(List.of(), call.sent(MsgCase.ACK));
  }

  @Test
  public void aDaemonThatDoesNotAnswerIsCancelledAfterTheTimeout() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    worker.goodbye(Duration.ofMillis(50)); // the fake daemon never ends the stream
    assertNotNull(call.cancelledWith());
    assertTrue(worker.isStopped());
    assertEquals(1, call.sent(MsgCase.GOODBYE).size());
  }

  @Test
  public void beforeTheWelcomeThereIsNobodyToSayGoodbyeTo() {
    PipelineWorker worker = start();
    FakeCall call = transport.nextCall();
    call.awaitSent(MsgCase.HELLO, 1);
    worker.goodbye(Waits.TIMEOUT);
    assertNotNull(call.cancelledWith());
    assertTrue(worker.isStopped());
    assertEquals(List.of(), call.sent(MsgCase.GOODBYE));
    assertEquals(1, transport.callCount());
  }

  @Test
  public void aHandlerMaySayGoodbye() {
    PipelineWorker worker = start();
    // On the stream thread goodbye() returns at once; the heartbeat thread keeps the timeout.
    handler.then("complete", e -> worker.goodbye(Waits.TIMEOUT));
    FakeCall call = welcomeNextCall();
    call.reply(Messages.complete(3));
    call.awaitHalfClosed();
    assertEquals(MsgCase.GOODBYE, lastSent(call));
    call.finish(Status.Code.OK, null);
    assertTrue(worker.awaitStopped(Waits.TIMEOUT));
    assertEquals(1, transport.callCount());
  }

  @Test
  public void stopCancelsTheStreamAndNeverReconnects() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    worker.stop();
    assertEquals("worker stopped", call.cancelledWith());
    assertTrue(worker.isStopped());
    assertFalse(worker.isConnected());
    assertEquals(List.of(), call.sent(MsgCase.GOODBYE));
    assertEquals(List.of(), handler.of("disconnected"));
    assertEquals(1, transport.callCount());
  }

  @Test
  public void stopDuringTheBackoffEndsTheWait() throws InterruptedException {
    Duration long_ = Waits.TIMEOUT.multipliedBy(10);
    PipelineWorker worker = start(options(SERVER).backoffInitial(long_).backoffMax(long_).build());
    transport.nextCall().finish(Status.Code.UNAVAILABLE, "");
    handler.await("disconnected");
    assertEnds(inBackground(worker::stop), "stop() does not wait for the backoff");
    assertTrue(worker.isStopped());
    assertEquals(1, transport.callCount());
  }

  @Test
  public void stoppedBeforeStartTheWorkerNeverConnects() {
    PipelineWorker worker = make(options(SERVER).build());
    assertFalse(worker.isStopped());
    worker.stop();
    assertTrue(worker.isStopped());
    assertTrue(worker.awaitStopped(Duration.ZERO));
    worker.start();
    assertEquals(0, transport.callCount());
  }

  @Test
  public void goodbyeBeforeStartStopsToo() {
    PipelineWorker worker = make(options(SERVER).build());
    worker.goodbye(Waits.TIMEOUT);
    assertTrue(worker.isStopped());
    worker.start();
    assertEquals(0, transport.callCount());
  }

  @Test
  public void aSecondStartDoesNothing() {
    PipelineWorker worker = start();
    transport.nextCall();
    worker.start();
    worker.stop();
    assertEquals(1, transport.callCount());
  }

  @Test
  public void sendsOfAWorkerNeverStartedAreDropped() {
    PipelineWorker worker = make(options(SERVER).build());
    worker.ack(1, "0", new TaskState("u"));
    worker.decline(1, "0", "no");
    worker.requestSavepoint();
    assertEquals(3, worker.counters().droppedSends());
  }
}
