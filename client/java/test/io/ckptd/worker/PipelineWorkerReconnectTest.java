package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.WorkerMessage.MsgCase;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.Status.Code;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.Assume;
import org.junit.Test;

/**
 * What a worker does when its stream ends: retry with takeover and backoff, move along the server
 * list, follow a standby's leader, or stop for good (docs/PROTOCOL.md, "How a stream ends").
 */
public class PipelineWorkerReconnectTest extends WorkerHarness {
  private static final String A = "127.0.0.1:7001";
  private static final String B = "127.0.0.1:7002";
  private static final String HA_GROUP = A + "," + B;
  private static final Metadata.Key<String> LEADER =
      Metadata.Key.of(RetryPolicy.LEADER_TRAILER, Metadata.ASCII_STRING_MARSHALLER);

  /** The trailing metadata of a standby that names the leader. */
  private static Metadata leader(String address) {
    Metadata trailers = new Metadata();
    trailers.put(LEADER, address);
    return trailers;
  }

  private static void finishAsStandby(FakeCall call, String leaderAddress) {
    call.finish(Status.UNAVAILABLE.withDescription("a standby"), leader(leaderAddress));
  }

  private Disconnect disconnect(int index) {
    return (Disconnect) handler.await("disconnected", index + 1).get(index).arg(0);
  }

  private static boolean takeover(FakeCall call) {
    return call.awaitSent(MsgCase.HELLO, 1).get(0).getHello().getTakeover();
  }

  private static void assertWithin(Duration low, Duration high, Duration actual) {
    assertTrue(
        actual + " not in [" + low + ", " + high + "]",
        actual.compareTo(low) >= 0 && actual.compareTo(high) <= 0);
  }

  // ---- retry ------------------------------------------------------------------------------------

  @Test
  public void aReconnectAsksForTakeover() {
    PipelineWorker worker = start();
    welcomeNextCall().finish(Code.UNAVAILABLE, "ckptd is shutting down");
    Disconnect d = disconnect(0);
    assertEquals(Code.UNAVAILABLE, d.code());
    assertEquals("ckptd is shutting down", d.message());
    assertTrue(d.wasConnected());
    assertTrue(d.willRetry());
    assertNull(d.leader());
    FakeCall call = welcomeNextCall();
    assertEquals(SERVER, call.target);
    assertTrue(takeover(call));
    assertEquals(
        RecordingHandler.event("connecting", SERVER, true), handler.of("connecting").get(1));
    assertEquals(new Counters(2, 2, 1, 1, 0, 0, 0), worker.counters());
  }

  @Test
  public void takeoverOnReconnectCanBeTurnedOff() {
    start(options(SERVER).takeoverOnReconnect(false).build());
    transport.nextCall().finish(Code.ALREADY_EXISTS, "task 0 is held");
    assertFalse(takeover(transport.nextCall()));
  }

  @Test
  public void ackPositionsOfAnEndedStreamAreNotCarriedOver() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.trigger(5, 0, 300));
    handler.await("trigger");
    call.finish(Code.UNAVAILABLE, "");
    call = welcomeNextCall();
    worker.ack(5, "0", new TaskState("u"));
    assertEquals(0, call.awaitSent(MsgCase.ACK, 1).get(0).getAck().getPosition());
  }

  @Test
  public void aRestoreComesBackAtOnce() {
    start();
    welcomeNextCall().finish(Code.ABORTED, "restored to checkpoint job/p@7");
    Disconnect d = disconnect(0);
    assertTrue(d.willRetry());
    assertEquals(Duration.ZERO, d.retryIn());
    assertTrue(takeover(transport.nextCall()));
  }

  @Test
  public void statusesThatCannotSucceedStopTheWorkerAndItsChannels() {
    Object[][] cases = {
      {Code.INVALID_ARGUMENT, "bad hello"},
      {Code.PERMISSION_DENIED, "not yours"},
      {Code.UNAUTHENTICATED, "who are you"},
      {Code.UNIMPLEMENTED, "not a ckptd"},
      {Code.ABORTED, "tasks taken over by worker w2"},
    };
    for (Object[] c : cases) {
      PipelineWorker worker = start();
      welcomeNextCall().finish((Code) c[0], (String) c[1]);
      assertTrue(c[0] + " stops the worker", worker.awaitStopped(Waits.TIMEOUT));
      Disconnect expected =
          new Disconnect((Code) c[0], (String) c[1], true, false, Duration.ZERO, null);
      assertEquals(
          List.of(RecordingHandler.event("disconnected", expected)), handler.of("disconnected"));
      assertEquals(1, transport.callCount());
      assertFalse(worker.isConnected());
      assertTrue("a worker that gave up holds no connection", transport.allChannelsShutDown());
    }
  }

  // ---- backoff ----------------------------------------------------------------------------------

  private static final Duration MS = Duration.ofMillis(1);

  @Test
  public void delaysDoubleUpToTheMaximum() {
    start(options(SERVER).backoffInitial(MS).backoffMax(MS.multipliedBy(4)).build());
    for (int i = 0; i < 4; i++) {
      transport.nextCall().finish(Code.UNAVAILABLE, "");
    }
    long[] bases = {1, 2, 4, 4};
    for (int i = 0; i < bases.length; i++) {
      Duration base = MS.multipliedBy(bases[i]);
      assertWithin(base.dividedBy(2), base, disconnect(i).retryIn());
    }
  }

  @Test
  public void aMissingPipelineWaitsTheMaximum() {
    start(options(SERVER).backoffInitial(MS).backoffMax(MS.multipliedBy(8)).build());
    transport.nextCall().finish(Code.NOT_FOUND, "no pipeline job/p");
    assertWithin(MS.multipliedBy(4), MS.multipliedBy(8), disconnect(0).retryIn());
  }

  /** Three failures take the backoff from 1 ms to its top, 8 ms. */
  private void failThreeTimes() {
    for (int i = 0; i < 3; i++) {
      transport.nextCall().finish(Code.UNAVAILABLE, "");
    }
    handler.await("disconnected", 3);
  }

  @Test
  public void aSessionThatStayedUpASecondStartsTheBackoffOver() throws InterruptedException {
    start(options(SERVER).backoffInitial(MS).backoffMax(MS.multipliedBy(8)).build());
    failThreeTimes();
    FakeCall call = welcomeNextCall();
    long stableAt = System.nanoTime() + Duration.ofMillis(1050).toNanos();
    // The SDK's own threshold is a second of its clock: wait until it passed, then end it.
    for (long left; (left = stableAt - System.nanoTime()) > 0; ) {
      Thread.sleep(Duration.ofNanos(left).toMillis() + 1);
    }
    call.finish(Code.UNAVAILABLE, "");
    assertWithin(MS.dividedBy(2), MS, disconnect(3).retryIn());
  }

  @Test
  public void aShortSessionDoesNot() {
    start(options(SERVER).backoffInitial(MS).backoffMax(MS.multipliedBy(8)).build());
    failThreeTimes();
    long began = System.nanoTime();
    welcomeNextCall().finish(Code.UNAVAILABLE, "");
    Duration delay = disconnect(3).retryIn();
    Assume.assumeTrue(
        "the machine took a second for a short session", System.nanoTime() - began < 900_000_000L);
    assertWithin(MS.multipliedBy(4), MS.multipliedBy(8), delay);
  }

  @Test
  public void aStandbysAnswerCapsTheDelaysAtASecond() {
    // Without it the fourth delay is 1.2-2.4 s (from 0.3 s, doubling). After a standby that knows
    // no leader yet (an empty trailer), the standby pace: at most 1 s (StandbyPoll).
    Duration initial = Duration.ofMillis(300);
    start(options(HA_GROUP).backoffInitial(initial).backoffMax(Duration.ofSeconds(8)).build());
    finishAsStandby(transport.nextCall(), "");
    for (int i = 0; i < 3; i++) {
      transport.nextCall().finish(Code.UNAVAILABLE, "connection refused");
    }
    assertWithin(Duration.ofMillis(500), Duration.ofSeconds(1), disconnect(3).retryIn());
  }

  // ---- the server list and the leader -----------------------------------------------------------

  @Test
  public void unavailableMovesAlongTheList() {
    start(options(HA_GROUP).build());
    List<String> targets = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      FakeCall call = transport.nextCall();
      targets.add(call.target);
      call.finish(Code.UNAVAILABLE, "connection refused");
    }
    assertEquals(List.of(A, B, A), targets);
  }

  @Test
  public void otherStatusesStayWithTheSameDaemon() {
    start(options(HA_GROUP).build());
    welcomeNextCall().finish(Code.DEADLINE_EXCEEDED, "lease expired");
    assertEquals(A, transport.nextCall().target);
  }

  @Test
  public void aStandbysLeaderIsFollowedAtOnce() {
    PipelineWorker worker = start(options(HA_GROUP).build());
    finishAsStandby(transport.nextCall(), B);
    FakeCall call = transport.nextCall();
    assertEquals(B, call.target);
    assertEquals(
        new Disconnect(Code.UNAVAILABLE, "a standby", false, true, Duration.ZERO, B),
        disconnect(0));
    assertEquals(1, worker.counters().leaderRedirects());
    // The leader was a detour: the list goes on where it was, after the first daemon.
    call.finish(Code.UNAVAILABLE, "connection refused");
    assertEquals(B, transport.nextCall().target);
  }

  @Test
  public void aLeaderOutsideTheListIsFollowedToo() {
    start(options(HA_GROUP).build());
    finishAsStandby(transport.nextCall(), "127.0.0.1:7003");
    assertEquals("127.0.0.1:7003", transport.nextCall().target);
  }

  @Test
  public void atMostThreeRedirectsInARow() {
    PipelineWorker worker = start(options(HA_GROUP).build());
    List<String> leaders =
        List.of("127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103", "127.0.0.1:7104");
    List<String> targets = new ArrayList<>();
    for (String address : leaders) {
      FakeCall call = transport.nextCall();
      targets.add(call.target);
      finishAsStandby(call, address);
    }
    // The fourth leader named is not followed: back to the list, at its next daemon.
    assertEquals(List.of(A, leaders.get(0), leaders.get(1), leaders.get(2)), targets);
    assertEquals(B, transport.nextCall().target);
    assertEquals(3, worker.counters().leaderRedirects());
    assertNull(disconnect(3).leader());
  }

  @Test
  public void aWelcomeResetsTheCountOfRedirects() {
    PipelineWorker worker = start(options(HA_GROUP).build());
    for (String address : List.of("127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103")) {
      finishAsStandby(transport.nextCall(), address);
    }
    finishAsStandby(welcomeNextCall(), "127.0.0.1:7104");
    assertEquals("127.0.0.1:7104", transport.nextCall().target);
    assertEquals(4, worker.counters().leaderRedirects());
  }

  @Test
  public void whatIsNotARedirectIsNotFollowed() {
    Object[][] cases = {
      {"the daemon itself", Code.UNAVAILABLE, A, B},
      {"no leader known", Code.UNAVAILABLE, "", B},
      {"not UNAVAILABLE", Code.DEADLINE_EXCEEDED, B, A},
    };
    for (Object[] c : cases) {
      PipelineWorker worker = start(options(HA_GROUP).build());
      transport.nextCall().finish(Status.fromCode((Code) c[1]), leader((String) c[2]));
      assertEquals((String) c[0], c[3], transport.nextCall().target);
      assertEquals((String) c[0], 0, worker.counters().leaderRedirects());
      assertNull((String) c[0], disconnect(0).leader());
    }
  }
}
