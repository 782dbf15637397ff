package io.ckptd.worker;

import static io.ckptd.worker.RecordingHandler.event;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.Committed;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerMessage.MsgCase;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.Test;

/**
 * The commit phase (docs/PROTOCOL.md, "Commit phase"): onCommit after onComplete or after the
 * welcome of a commit-pending restore point, the committed notices autoCommit sends (or the
 * application, with committed()), none after a throwing handler, and all_committed.
 */
public class PipelineWorkerCommitTest extends WorkerHarness {
  private static Committed committed(long checkpointId, String taskId) {
    return Committed.newBuilder().setCheckpointId(checkpointId).setTaskId(taskId).build();
  }

  /** The committed notices sent on {@code call} so far, in order. */
  private static List<Committed> committedOn(FakeCall call) {
    return call.sent(MsgCase.COMMITTED).stream().map(WorkerMessage::getCommitted).toList();
  }

  /** The checkpoint ids onCommit was called with, in order. */
  private List<Long> commits() {
    return handler.of("commit").stream().map(e -> (Long) e.arg(0)).toList();
  }

  /**
   * Records, each time one of {@code events} is handled, how many committed notices {@code
   * call} had carried by then (read from the worker's stream thread, inside the handler).
   */
  private List<Integer> committedCountsDuring(FakeCall[] call, String... events) {
    List<Integer> counts = Collections.synchronizedList(new ArrayList<>());
    for (String name : events) {
      handler.then(name, e -> counts.add(call[0].sent(MsgCase.COMMITTED).size()));
    }
    return counts;
  }

  @Test
  public void aCompleteWithCommitSendsCommittedPerTaskAfterOnCompleteAndOnCommit() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    List<Integer> counts = committedCountsDuring(new FakeCall[] {call}, "complete", "commit");
    call.reply(Messages.complete(5, true));
    call.awaitSent(MsgCase.COMMITTED, 2);
    awaitHandled(call);
    List<RecordingHandler.Event> events = eventsButBarriers();
    assertEquals(
        List.of(event("complete", 5L, CheckpointKind.CHECKPOINT), event("commit", 5L)),
        events.subList(1, events.size()));
    assertEquals(List.of(0, 0), counts); // nothing went out before both handlers returned
    assertEquals(List.of(committed(5, "0"), committed(5, "1")), committedOn(call));
    assertEquals(0, worker.counters().droppedSends());
  }

  @Test
  public void aCompleteWithoutCommitSendsNothing() {
    start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.complete(5, false));
    call.reply(Messages.complete(6));
    awaitHandled(call);
    assertEquals(2, handler.of("complete").size());
    assertEquals(List.of(), commits());
    assertEquals(List.of(), committedOn(call));
  }

  @Test
  public void aWelcomeWithACommitPendingRestorePointCommitsItAfterOnWelcome() {
    start();
    FakeCall[] call = new FakeCall[1];
    List<Integer> counts = committedCountsDuring(call, "welcome", "commit");
    call[0] = transport.nextCall();
    call[0].reply(Messages.welcomeCommitPending(0, 7, 6));
    call[0].awaitSent(MsgCase.COMMITTED, 2);
    awaitHandled(call[0]);
    List<RecordingHandler.Event> events = eventsButBarriers();
    assertEquals(2, events.size());
    assertEquals("welcome", events.get(0).name());
    assertEquals(event("commit", 7L), events.get(1));
    Welcome welcome = (Welcome) events.get(0).arg(0);
    assertEquals(6, welcome.lastCommittedCheckpointId());
    assertEquals(7, welcome.restore().checkpointId());
    assertTrue(welcome.restore().commitPending());
    assertEquals(List.of(0, 0), counts);
    assertEquals(List.of(committed(7, "0"), committed(7, "1")), committedOn(call[0]));
  }

  @Test
  public void withoutAutoCommitNothingIsSentUntilTheApplicationCallsCommitted() {
    PipelineWorker worker = start(options(SERVER).autoCommit(false).build());
    FakeCall call = welcomeNextCall(Messages.welcomeCommitPending(0, 4, 3));
    call.reply(Messages.complete(5, true));
    awaitHandled(call);
    assertEquals(List.of(4L, 5L), commits()); // the handlers run all the same
    assertEquals(List.of(), committedOn(call));
    worker.committed(5, "1"); // task 1's asynchronous commit is done
    call.awaitSent(MsgCase.COMMITTED, 1);
    awaitHandled(call);
    assertEquals(List.of(committed(5, "1")), committedOn(call));
    worker.committed(5, "0");
    call.awaitSent(MsgCase.COMMITTED, 2);
    assertEquals(List.of(committed(5, "1"), committed(5, "0")), committedOn(call));
    assertEquals(0, worker.counters().droppedSends());
  }

  @Test
  public void aThrowingOnCommitSendsNoCommittedForThatCommit() {
    PipelineWorker worker = start();
    handler.then("commit", e -> {
      if (e.arg(0).equals(5L)) {
        throw new IllegalStateException("the sink refused the commit");
      }
    });
    FakeCall call = welcomeNextCall();
    call.reply(Messages.complete(5, true));
    call.reply(Messages.complete(6, true));
    call.awaitSent(MsgCase.COMMITTED, 2);
    awaitHandled(call);
    assertEquals(List.of(5L, 6L), commits());
    assertEquals(List.of(committed(6, "0"), committed(6, "1")), committedOn(call));
    assertTrue(worker.isConnected()); // the stream goes on
    assertEquals(1, transport.callCount());
    worker.committed(5, "0"); // the application committed after all, and says so itself
    call.awaitSent(MsgCase.COMMITTED, 3);
    assertEquals(committed(5, "0"), committedOn(call).get(2));
  }

  @Test
  public void aThrowingOnCompleteOrOnWelcomeSendsNoCommittedEither() {
    start();
    handler.then("welcome", e -> {
      throw new IllegalStateException("restore failed");
    });
    handler.then("complete", e -> {
      if (e.arg(0).equals(5L)) {
        throw new IllegalStateException("complete failed");
      }
    });
    FakeCall call = welcomeNextCall(Messages.welcomeCommitPending(0, 4, 3));
    call.reply(Messages.complete(5, true));
    call.reply(Messages.complete(6, true));
    call.awaitSent(MsgCase.COMMITTED, 2);
    awaitHandled(call);
    // onCommit is still called after a throwing onComplete; not after a throwing onWelcome (a
    // failed restore: what it would commit did not load).
    assertEquals(List.of(5L, 6L), commits());
    assertEquals(List.of(committed(6, "0"), committed(6, "1")), committedOn(call));
  }

  @Test
  public void allCommittedReachesOnAllCommitted() {
    PipelineWorker worker = start();
    FakeCall call = welcomeNextCall();
    call.reply(Messages.allCommitted(5));
    assertEquals(event("all_committed", 5L), handler.await("all_committed"));
    awaitHandled(call);
    assertEquals(List.of(MsgCase.HELLO), call.sent().stream().map(m -> m.getMsgCase()).toList());
    assertEquals(0, worker.counters().staleMessages());
  }

  @Test
  public void aDeposedLeadersCommitPhaseIsDropped() {
    PipelineWorker worker = start();
    FakeCall first = welcomeNextCall(Messages.welcome(5));
    first.finish(Status.Code.UNAVAILABLE, "connection broke");
    FakeCall call = transport.nextCall();
    call.reply(Messages.welcomeCommitPending(4, 7, 6)); // stale: no commit of its restore point
    call.reply(Messages.complete(7, true));
    call.reply(Messages.allCommitted(7));
    awaitHandled(call);
    assertEquals(1, handler.of("welcome").size()); // the first stream's
    assertEquals(List.of(), handler.of("complete"));
    assertEquals(List.of(), commits());
    assertEquals(List.of(), handler.of("all_committed"));
    assertEquals(List.of(), committedOn(call));
    assertEquals(3, worker.counters().staleMessages());
  }

  @Test
  public void beforeTheWelcomeAllCommittedIsStaleAndCommittedIsDropped() {
    PipelineWorker worker = start();
    FakeCall call = transport.nextCall();
    call.reply(Messages.complete(5, true));
    call.reply(Messages.allCommitted(5));
    worker.committed(5, "0");
    assertThrows(IllegalArgumentException.class, () -> worker.committed(5, "7"));
    awaitHandled(call);
    assertEquals(List.of(), eventsButBarriers());
    assertEquals(2, worker.counters().staleMessages());
    assertEquals(1, worker.counters().droppedSends());
    call.reply(Messages.welcome(0));
    awaitHandled(call);
    assertEquals(List.of(MsgCase.HELLO), call.sent().stream().map(m -> m.getMsgCase()).toList());
  }
}
