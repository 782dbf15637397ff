package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerMessage.MsgCase;
import io.grpc.Status;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * Heartbeats and the positions they carry (docs/PROTOCOL.md, "Positions"): a heartbeat carries
 * the positions set since the last one, every tenth carries them all, and after a welcome a task
 * reports again, once even lower, before anything is sent for it.
 */
public class PipelineWorkerHeartbeatTest extends WorkerHarness {
  private static final long FAST_HEARTBEAT_MS = 5;

  private static Map<String, Long> positions(WorkerMessage heartbeat) {
    return heartbeat.getHeartbeat().getPositionsMap();
  }

  private FakeCall welcomeWithFastHeartbeats() {
    return welcomeNextCall(Messages.welcome(0, FAST_HEARTBEAT_MS));
  }

  private static void awaitHeartbeatWith(FakeCall call, Map<String, Long> expected) {
    call.awaitSentWhere(MsgCase.HEARTBEAT, m -> positions(m).equals(expected),
        "a heartbeat with " + expected);
  }

  /**
   * Heartbeats on {@code call} from number {@code since} through the first that carries {@code
   * markerTask}, whose position the test set last: every position set before it had its heartbeat.
   */
  private static List<WorkerMessage> heartbeatsThroughMarker(
      FakeCall call, int since, String markerTask) {
    call.awaitSentWhere(MsgCase.HEARTBEAT, m -> positions(m).containsKey(markerTask),
        "a heartbeat with task " + markerTask);
    List<WorkerMessage> heartbeats = call.sent(MsgCase.HEARTBEAT);
    heartbeats = heartbeats.subList(since, heartbeats.size());
    int end = 0;
    while (!positions(heartbeats.get(end)).containsKey(markerTask)) {
      end++;
    }
    return heartbeats.subList(0, end + 1);
  }

  private static List<WorkerMessage> nextHeartbeats(FakeCall call, int count) {
    int sent = call.sent(MsgCase.HEARTBEAT).size();
    List<WorkerMessage> heartbeats = call.awaitSent(MsgCase.HEARTBEAT, sent + count);
    return heartbeats.subList(sent, sent + count);
  }

  @Test
  public void aHeartbeatCarriesWhatChanged() {
    PipelineWorker worker = start();
    FakeCall call = welcomeWithFastHeartbeats();
    worker.setPosition("0", 10);
    awaitHeartbeatWith(call, Map.of("0", 10L));
    worker.setPosition("1", 7);
    WorkerMessage carrying = call.awaitSentWhere(MsgCase.HEARTBEAT,
        m -> positions(m).containsKey("1"), "a heartbeat with task 1");
    // Only what changed; unless it is a tenth heartbeat, which carries every position.
    assertTrue(positions(carrying).toString(),
        positions(carrying).equals(Map.of("1", 7L))
            || positions(carrying).equals(Map.of("0", 10L, "1", 7L)));
  }

  @Test
  public void aLowerPositionIsIgnored() {
    PipelineWorker worker = start();
    FakeCall call = welcomeWithFastHeartbeats();
    worker.setPosition("0", 10);
    awaitHeartbeatWith(call, Map.of("0", 10L));
    int since = call.sent(MsgCase.HEARTBEAT).size();
    worker.setPosition("0", 5);
    worker.setPosition("1", 1);
    for (WorkerMessage heartbeat : heartbeatsThroughMarker(call, since, "1")) {
      assertNotEquals(Long.valueOf(5), positions(heartbeat).get("0")); // a full one carries 10
    }
    worker.setPosition("0", 20);
    // (Task 1's too, if that heartbeat is a tenth one.)
    call.awaitSentWhere(MsgCase.HEARTBEAT, m -> Long.valueOf(20).equals(positions(m).get("0")),
        "a heartbeat with task 0 at 20");
  }

  @Test
  public void everyTenthHeartbeatCarriesEveryPosition() {
    PipelineWorker worker = start();
    FakeCall call = welcomeWithFastHeartbeats();
    worker.setPosition("0", 10);
    awaitHeartbeatWith(call, Map.of("0", 10L));
    List<Map<String, Long>> later =
        nextHeartbeats(call, 10).stream().map(PipelineWorkerHeartbeatTest::positions).toList();
    assertEquals(later.toString(), 1, Collections.frequency(later, Map.of("0", 10L)));
    assertEquals(later.toString(), 9, Collections.frequency(later, Map.of()));
  }

  @Test
  public void aPositionFromBeforeTheWelcomeWaitsForTheNextOne() {
    PipelineWorker worker = make(options(SERVER).build());
    worker.setPosition("0", 50);
    worker.start();
    FakeCall call = welcomeWithFastHeartbeats();
    // Eleven heartbeats hold a full one: even that one says nothing of task 0 yet.
    for (WorkerMessage heartbeat : nextHeartbeats(call, 11)) {
      assertEquals(Map.of(), positions(heartbeat));
    }
    worker.setPosition("0", 50); // the same as before: sent all the same
    awaitHeartbeatWith(call, Map.of("0", 50L));
  }

  @Test
  public void afterAReconnectTheFirstPositionMayGoBackOnce() {
    PipelineWorker worker = start();
    FakeCall call = welcomeWithFastHeartbeats();
    worker.setPosition("0", 50);
    awaitHeartbeatWith(call, Map.of("0", 50L));
    call.finish(Status.Code.UNAVAILABLE, "");
    call = welcomeWithFastHeartbeats();
    worker.setPosition("0", 30); // restored to an older checkpoint
    awaitHeartbeatWith(call, Map.of("0", 30L));
    int since = call.sent(MsgCase.HEARTBEAT).size();
    worker.setPosition("0", 20);
    worker.setPosition("1", 1);
    for (WorkerMessage heartbeat : heartbeatsThroughMarker(call, since, "1")) {
      assertNotEquals(Long.valueOf(20), positions(heartbeat).get("0"));
    }
  }

  /**
   * setBacklog (docs/PROTOCOL.md, "Adaptive interval"): said at once and in every heartbeat, and
   * again on the next stream after a reconnect (the daemon forgets a stream's backlog).
   */
  @Test
  public void theBacklogGoesOutAtOnceRidesOnHeartbeatsAndIsSaidAgain() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall(Messages.welcome(0, 60_000));
    worker.setBacklog(true);
    call.awaitSentWhere(MsgCase.HEARTBEAT, m -> m.getHeartbeat().getBacklog(),
        "a heartbeat saying backlog");
    worker.setBacklog(true); // no change: nothing more
    worker.setBacklog(false);
    call.awaitSentWhere(MsgCase.HEARTBEAT, m -> !m.getHeartbeat().getBacklog(),
        "a heartbeat saying caught up");
    assertEquals(2, call.sent(MsgCase.HEARTBEAT).size());

    worker.setBacklog(true);
    call.awaitSent(MsgCase.HEARTBEAT, 3);
    call.finish(Status.Code.UNAVAILABLE, "daemon restarting");
    FakeCall again = welcomeNextCall(Messages.welcome(0, 60_000));
    again.awaitSentWhere(MsgCase.HEARTBEAT, m -> m.getHeartbeat().getBacklog(),
        "the backlog said again on the new stream");
  }

  @Test
  public void periodicHeartbeatsCarryTheBacklog() {
    PipelineWorker worker = start();
    FakeCall call = welcomeWithFastHeartbeats();
    worker.setBacklog(true);
    int sent = call.sent(MsgCase.HEARTBEAT).size();
    for (WorkerMessage heartbeat : nextHeartbeats(call, 3)) {
      assertTrue(heartbeat.getHeartbeat().getBacklog());
    }
    assertTrue(call.sent(MsgCase.HEARTBEAT).size() >= sent + 3);
  }
}
