package io.ckptd.worker;

import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;

/**
 * One Connect call. gRPC's threads put what arrives on the stream's queue (see {@link
 * WorkerStream}).
 *
 * <p>Sends are synchronized on this object (gRPC's request observer is not thread-safe) and
 * checked against the call's end: a send after a cancel is dropped, not an exception.
 */
final class ConnectStream extends WorkerStream {
  private ClientCallStreamObserver<WorkerMessage> requests; // set once the call starts
  private boolean halfClosed;
  private boolean cancelled;

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

  @Override
  synchronized void send(WorkerMessage message) {
    if (requests != null && !halfClosed && !cancelled) {
      requests.onNext(message);
    }
  }

  /** Tells the daemon nothing more comes (after a goodbye; else it ends the stream INVALID_ARGUMENT). */
  @Override
  synchronized void halfClose() {
    if (requests != null && !halfClosed && !cancelled) {
      halfClosed = true;
      requests.onCompleted();
    }
  }

  @Override
  synchronized void cancel(String why) {
    if (requests != null && !cancelled) {
      cancelled = true;
      requests.cancel(why, null);
    }
  }

  @Override
  boolean overSession() {
    return false;
  }
}
