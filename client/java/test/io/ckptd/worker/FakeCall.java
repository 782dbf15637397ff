package io.ckptd.worker;

import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.WorkerMessage;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * One Connect call as a daemon would see it: what the worker sent, and a hand to answer. The
 * worker's side calls the ClientCall methods; the test calls {@link #reply} and {@link #finish}.
 * As gRPC, a cancel ends the call CANCELLED, and nothing reaches the worker after the end.
 */
final class FakeCall extends ClientCall<WorkerMessage, CoordinatorMessage> {
  final String target;
  private Listener<CoordinatorMessage> listener;
  private Metadata headers;
  private final List<WorkerMessage> sent = new ArrayList<>();
  private int halfCloses;
  private String cancelledWith; // null: not cancelled
  private boolean ended;

  FakeCall(String target) {
    this.target = target;
  }

  // ---- what the worker's side calls ------------------------------------------------------------

  @Override
  public synchronized void start(Listener<CoordinatorMessage> listener, Metadata headers) {
    this.listener = listener;
    this.headers = headers;
    notifyAll();
  }

  @Override
  public void request(int numMessages) {} // every reply is delivered at once

  @Override
  public void cancel(String message, Throwable cause) {
    synchronized (this) {
      if (cancelledWith == null) {
        cancelledWith = message == null ? "" : message;
      }
      notifyAll();
    }
    finish(Status.CANCELLED.withDescription(message).withCause(cause), new Metadata());
  }

  @Override
  public synchronized void halfClose() {
    halfCloses++;
    notifyAll();
  }

  @Override
  public synchronized void sendMessage(WorkerMessage message) {
    sent.add(message);
    notifyAll();
  }

  // ---- what the test calls, as the daemon ------------------------------------------------------

  /**
   * The call's listener, once gRPC started the call: the transport hands the call out when the
   * stub asks for it, a moment before the start.
   */
  private synchronized Listener<CoordinatorMessage> started() {
    Waits.until(this, () -> listener != null, "the start of the call to " + target);
    return listener;
  }

  /** Delivers {@code message} to the worker, unless the call ended. */
  void reply(CoordinatorMessage message) {
    Listener<CoordinatorMessage> l = started();
    synchronized (this) {
      if (ended) {
        return;
      }
    }
    l.onMessage(message);
  }

  /** Ends the call; only the first end counts. */
  void finish(Status status, Metadata trailers) {
    Listener<CoordinatorMessage> l = started();
    synchronized (this) {
      if (ended) {
        return;
      }
      ended = true;
    }
    l.onClose(status, trailers);
  }

  void finish(Status.Code code, String description) {
    finish(Status.fromCode(code).withDescription(description), new Metadata());
  }

  /** The headers the worker started the call with (its bearer token among them). */
  synchronized Metadata headers() {
    started();
    return headers;
  }

  /** Every message the worker sent so far, in order. */
  synchronized List<WorkerMessage> sent() {
    return List.copyOf(sent);
  }

  /** The worker's messages of one kind so far. */
  synchronized List<WorkerMessage> sent(WorkerMessage.MsgCase kind) {
    return sent.stream().filter(m -> m.getMsgCase() == kind).toList();
  }

  /** The worker's messages of {@code kind}, once there are at least {@code count}. */
  synchronized List<WorkerMessage> awaitSent(WorkerMessage.MsgCase kind, int count) {
    Waits.until(this, () -> sent(kind).size() >= count, count + " " + kind + " on " + target);
    return sent(kind);
  }

  /** The first message of {@code kind} that {@code matches}, once one was sent. */
  synchronized WorkerMessage awaitSentWhere(
      WorkerMessage.MsgCase kind, Predicate<WorkerMessage> matches, String what) {
    Waits.until(this, () -> sent(kind).stream().anyMatch(matches), what + " on " + target);
    return sent(kind).stream().filter(matches).findFirst().orElseThrow();
  }

  synchronized void awaitHalfClosed() {
    Waits.until(this, () -> halfCloses > 0, "the worker to half-close its call to " + target);
  }

  synchronized int halfCloses() {
    return halfCloses;
  }

  /** The cancel's message; null while not cancelled. */
  synchronized String cancelledWith() {
    return cancelledWith;
  }
}
