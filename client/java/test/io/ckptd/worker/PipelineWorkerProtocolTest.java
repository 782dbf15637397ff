package io.ckptd.worker;

import static io.ckptd.worker.RecordingHandler.event;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.Ack;
import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.Decline;
import io.ckptd.v1.Hello;
import io.ckptd.v1.SavepointRequest;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerMessage.MsgCase;
import io.grpc.Metadata;
import java.util.List;
import org.junit.Test;

/**
 * A PipelineWorker's side of one stream: the hello, the welcome, a round's messages, and the acks,
 * declines and savepoint requests it sends back (docs/PROTOCOL.md).
 */
public class PipelineWorkerProtocolTest extends WorkerHarness {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  @Test
  public void theFirstHelloRegistersTheTasksWithoutTakeover() {
    start();
    FakeCall call = transport.nextCall();
    assertEquals(SERVER, call.target);
    WorkerMessage hello = call.awaitSent(MsgCase.HELLO, 1).get(0);
    assertEquals(hello, call.sent().get(0)); // before anything else
    assertEquals(
        Hello.newBuilder().setWorkerId("w1").setJobId("job").setPipelineId("p")
            .addAllTaskIds(TASKS).setTakeover(false).build(),
        hello.getHello());
    assertNull(call.headers().get(AUTHORIZATION)); // no token file
    assertEquals(event("connecting", SERVER, false), handler.events().get(0));
  }

  @Test
  public void theWelcomeIsHandedOverAsPlainValues() {
    PipelineWorker worker = start();
    FakeCall call = transport.nextCall();
    assertFalse(worker.isConnected());
    call.reply(
        Messages.of(
            io.ckptd.v1.Welcome.newBuilder()
                .setSessionId("s-1")
                .setGeneration(7)
                .setState(io.ckptd.v1.PipelineState.PIPELINE_STATE_PAUSED)
                .setLeaderEpoch(3)
                .setHeartbeatIntervalMs(60_000)
                .addRetainedCheckpointIds(39)
                .build()));
    Welcome welcome = (Welcome) handler.await("welcome").arg(0);
    assertEquals("s-1", welcome.sessionId());
    assertEquals(7, welcome.generation());
    assertEquals(PipelineState.PAUSED, welcome.state());
    assertEquals(3, welcome.leaderEpoch());
    assertEquals(List.of(39L), welcome.retainedCheckpointIds());
    assertEquals(0, welcome.restore().checkpointId()); // a fresh pipeline
    assertTrue(worker.isConnected());
    assertEquals(new Counters(1, 1, 0, 0, 0, 0, 0), worker.counters());
  }

  @Test
  public void aTriggerReachesOnTrigger() {
    start();
    FakeCall call = welcomeNextCall();
    call.reply(
        Messages.of(
            io.ckptd.v1.Trigger.newBuilder()
                .setCheckpointId(5)
                .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_SAVEPOINT)
                .setTimestampMs(123)
                .setGeneration(2)
                .setTarget("s3://sp")
                .setPosition(300)
                .build()));
    assertEquals(
        new Trigger(5, CheckpointKind.SAVEPOINT, 123, 2, "s3://sp", 0, 300),
        handler.await("trigger").arg(0));
  }

  @Test
  public void anAckGoesOutAtTheTriggersPosition() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.trigger(5, 0, 300));
    handler.await("trigger");
    worker.ack(5, "0", new TaskState("s3://b/5/0", 10, "crc"), new AckFigures(1, 2, 3, 4));
    Ack ack = call.awaitSent(MsgCase.ACK, 1).get(0).getAck();
    assertEquals(
        Ack.newBuilder()
            .setCheckpointId(5)
            .setTaskId("0")
            .setState(
                io.ckptd.v1.TaskState.newBuilder().setUri("s3://b/5/0").setSizeBytes(10)
                    .setChecksum("crc"))
            .setSyncDurationMs(1)
            .setAsyncDurationMs(2)
            .setAlignmentDurationMs(3)
            .setBytesProcessedDuringAlignment(4)
            .setPosition(300)
            .build(),
        ack);
  }

  @Test
  public void anAckMayNameItsOwnPosition() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.trigger(5, 0, 300));
    handler.await("trigger");
    worker.ack(5, "1", new TaskState("u"), AckFigures.NONE, 310);
    assertEquals(310, call.awaitSent(MsgCase.ACK, 1).get(0).getAck().getPosition());
  }

  @Test
  public void onlyTheLastSixteenTriggersPositionsAreRemembered() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    for (long id = 1; id <= 17; id++) {
      call.reply(Messages.trigger(id, 0, 100 * id));
    }
    handler.await("trigger", 17);
    worker.ack(1, "0", new TaskState("u")); // forgotten: position 0
    worker.ack(2, "0", new TaskState("u")); // the oldest remembered
    worker.ack(99, "0", new TaskState("u")); // never triggered: position 0
    List<Long> positions =
        call.awaitSent(MsgCase.ACK, 3).stream().map(m -> m.getAck().getPosition()).toList();
    assertEquals(List.of(0L, 200L, 0L), positions);
  }

  @Test
  public void aDeclineAndASavepointRequestGoOut() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    worker.decline(5, "1", "disk full", true, 301);
    worker.requestSavepoint("s3://sp", true);
    worker.requestSavepoint();
    assertEquals(
        Decline.newBuilder().setCheckpointId(5).setTaskId("1").setReason("disk full")
            .setExpired(true).setPosition(301).build(),
        call.awaitSent(MsgCase.DECLINE, 1).get(0).getDecline());
    List<WorkerMessage> requests = call.awaitSent(MsgCase.SAVEPOINT_REQUEST, 2);
    assertEquals(
        SavepointRequest.newBuilder().setTarget("s3://sp").setStop(true).build(),
        requests.get(0).getSavepointRequest());
    assertEquals(SavepointRequest.getDefaultInstance(), requests.get(1).getSavepointRequest());
    assertEquals(0, worker.counters().droppedSends());
  }

  @Test
  public void whatTheDaemonWouldRefuseIsRefusedAtTheCall() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    assertThrows(IllegalArgumentException.class, () -> worker.ack(1, "7", new TaskState("u")));
    assertThrows(
        IllegalArgumentException.class, () -> worker.ack(1, "0", new TaskState("u".repeat(4097))));
    assertThrows(IllegalArgumentException.class, () -> worker.decline(1, "7", "no"));
    assertThrows(IllegalArgumentException.class, () -> worker.requestSavepoint("..", false));
    assertThrows(IllegalArgumentException.class, () -> worker.setPosition("7", 1));
    assertThrows(IllegalArgumentException.class, () -> worker.setPosition("0", -1));
    assertThrows(
        IllegalArgumentException.class,
        () -> worker.setPosition("0", PipelineWorker.MAX_POSITION + 1));
    worker.setPosition("0", PipelineWorker.MAX_POSITION);
    awaitHandled(call);
    assertEquals(List.of(MsgCase.HELLO), call.sent().stream().map(m -> m.getMsgCase()).toList());
    assertTrue(worker.isConnected());
  }

  @Test
  public void theEndsOfRoundsAndStateChangesReachTheirHandlers() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.abort(5, "timed out"));
    call.reply(Messages.complete(6, io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_SAVEPOINT_AND_STOP));
    call.reply(Messages.release(1L, 2L));
    call.reply(Messages.state(io.ckptd.v1.PipelineState.PIPELINE_STATE_FAILED, "too many"));
    call.reply(Messages.savepointRefused("a savepoint is running"));
    handler.await("savepoint_refused");
    List<RecordingHandler.Event> events = eventsButBarriers();
    assertEquals(
        List.of(
            event("abort", 5L, "timed out"),
            event("complete", 6L, CheckpointKind.SAVEPOINT_AND_STOP),
            event("release", List.of(1L, 2L)),
            event("state", PipelineState.FAILED, "too many"),
            event("savepoint_refused", "a savepoint is running")),
        events.subList(1, events.size()));
    assertEquals(0, worker.counters().staleMessages());
  }

  @Test
  public void aMessageThisSdkDoesNotKnowIsIgnored() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(CoordinatorMessage.getDefaultInstance()); // no msg set: a newer daemon's
    awaitHandled(call);
    assertEquals(1, eventsButBarriers().size()); // the welcome
    assertTrue(worker.isConnected());
  }

  @Test
  public void beforeTheWelcomeSendsAreDroppedAndCounted() {
    PipelineWorker worker = start();
    FakeCall call = transport.nextCall();
    worker.ack(5, "0", new TaskState("u"));
    worker.decline(5, "0", "no");
    worker.requestSavepoint();
    assertEquals(3, worker.counters().droppedSends());
    call.reply(Messages.welcome(0));
    awaitHandled(call);
    assertEquals(List.of(MsgCase.HELLO), call.sent().stream().map(m -> m.getMsgCase()).toList());
  }

  @Test
  public void beforeTheWelcomeTheEndsOfRoundsAreDroppedAsStale() {
    PipelineWorker worker = start();
    FakeCall call = transport.nextCall();
    call.reply(Messages.abort(5, "r"));
    call.reply(Messages.complete(5));
    call.reply(Messages.release(5L));
    awaitHandled(call);
    assertEquals(List.of(), eventsButBarriers());
    assertEquals(3, worker.counters().staleMessages());
  }

  @Test
  public void aHandlerThatThrowsDoesNotEndTheStream() {
    start();
    handler.then("trigger", e -> {
      throw new AssertionError("the application's bug");
    });
    FakeCall call = welcomeNextCall();
    call.reply(Messages.trigger(5, 0, 0));
    call.reply(Messages.abort(5, "r"));
    handler.await("abort");
    assertEquals(1, transport.callCount());
  }

  @Test
  public void aHandlerThatLeavesTheThreadInterruptedDoesNotStopTheWorker() {
    PipelineWorker worker = start();
    handler.then("trigger", e -> Thread.currentThread().interrupt());
    FakeCall call = welcomeNextCall();
    call.reply(Messages.trigger(5, 0, 0));
    call.reply(Messages.abort(5, "r"));
    handler.await("abort");
    assertFalse(worker.isStopped());
    assertTrue(worker.isConnected());
  }

  @Test
  public void aTransportThatFailsOutsideGrpcIsRetriedAsUnknown() {
    PipelineWorker worker = make(options(SERVER).build());
    transport.failNextConnect(new IllegalStateException("no route"));
    worker.start();
    Disconnect disconnect = (Disconnect) handler.await("disconnected").arg(0);
    assertEquals(io.grpc.Status.Code.UNKNOWN, disconnect.code());
    assertTrue(disconnect.message(), disconnect.message().contains("no route"));
    assertFalse(disconnect.wasConnected());
    assertTrue(disconnect.willRetry());
    assertTrue(transport.nextCall().awaitSent(MsgCase.HELLO, 1).get(0).getHello().getTakeover());
  }
}
