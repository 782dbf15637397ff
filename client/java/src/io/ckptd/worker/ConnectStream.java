package io.ckptd.worker;

import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One Connect call. gRPC's threads put what arrives (messages, then the end) on a queue that the
 * worker's stream thread takes from, so that handlers run on that one thread, in order, and a slow
 * handler never holds a gRPC thread (nor makes the daemon see an undrained stream: the queue has
 * no bound).
 *
 * <p>Sends are synchronized on this object (gRPC's request observer is not thread-safe) and
 * checked against the call's end: a send after a cancel is dropped, not an exception. The fields
 * below the marker are guarded by the worker's lock, not by this object.
 */
final class ConnectStream {
  /** How the call ended: its status and trailing metadata. */
  record End(Status status, Metadata trailers) {}

  private final BlockingQueue<Object> arrivals = new LinkedBlockingQueue<>();
  private ClientCallStreamObserver<WorkerMessage> requests; // set once the call starts
  private boolean halfClosed;
  private boolean cancelled;

  // ---- guarded by PipelineWorker's lock --------------------------------------------------------
  /** A welcome of a current leadership arrived. */
  boolean welcomed;
  /** System.nanoTime() of that welcome. */
  long welcomedAtNanos;
  /** The leader epoch of this stream's welcome: its abort, complete and release carry none. */
  long epoch;
  boolean goodbyeSent;
  /** The stream ended (or is ending): nothing more is sent on it. */
  boolean closed;

  /** Starts the call and sends {@code hello} first. */
  void start(WorkerServiceGrpc.WorkerServiceStub stub, WorkerMessage hello) {
    stub.connect(
        new ClientResponseObserver<WorkerMessage, CoordinatorMessage>() {
          @Override
          public void beforeStart(ClientCallStreamObserver<WorkerMessage> requestStream) {
            synchronized (ConnectStream.this) {
              requests = requestStream;
            }
          }

          @Override
          public void onNext(CoordinatorMessage message) {
            arrivals.add(message);
          }

          @Override
          public void onError(Throwable t) {
            Metadata trailers = Status.trailersFromThrowable(t);
            arrivals.add(new End(Status.fromThrowable(t), trailers != null ? trailers : new Metadata()));
          }

          @Override
          public void onCompleted() {
            arrivals.add(new End(Status.OK, new Metadata()));
          }
        });
    send(hello);
  }

  /** The next arrival: a CoordinatorMessage, or the End (the last one). */
  Object take() throws InterruptedException {
    return arrivals.take();
  }

  synchronized void send(WorkerMessage message) {
    if (requests != null && !halfClosed && !cancelled) {
      requests.onNext(message);
    }
  }

  /** Tells the daemon nothing more comes (after a goodbye; else it ends the stream INVALID_ARGUMENT). */
  synchronized void halfClose() {
    if (requests != null && !halfClosed && !cancelled) {
      halfClosed = true;
      requests.onCompleted();
    }
  }

  /** Ends the call from this side; its End (CANCELLED) still arrives on the queue. */
  synchronized void cancel(String why) {
    if (requests != null && !cancelled) {
      cancelled = true;
      requests.cancel(why, null);
    }
  }
}
