package io.ckptd.worker;

import io.ckptd.v1.WorkerMessage;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One try of a worker's stream, as the worker's stream thread sees it: what arrives (messages,
 * then the end) on a queue it takes from, so that handlers run on that one thread, in order, and
 * a slow handler never holds a gRPC thread (the queue has no bound). A Connect call of its own
 * ({@link ConnectStream}) or a channel of a shared Session call ({@link SessionCall.Channel}).
 *
 * <p>The fields below the marker are guarded by the worker's lock.
 */
abstract class WorkerStream {
  /** How the stream ended: its status and trailing metadata. */
  record End(Status status, Metadata trailers) {}

  final BlockingQueue<Object> arrivals = new LinkedBlockingQueue<>();

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

  /** The next arrival: a CoordinatorMessage, or the End (the last one). */
  Object take() throws InterruptedException {
    return arrivals.take();
  }

  /** Sends a message; dropped, not an exception, once the stream is ending. */
  abstract void send(WorkerMessage message);

  /** Tells the daemon nothing more comes (after a goodbye). */
  abstract void halfClose();

  /** Ends the stream from this side; its End (CANCELLED) still arrives on the queue. */
  abstract void cancel(String why);

  /** Whether a Session call carries it (a daemon without Session answers UNIMPLEMENTED). */
  abstract boolean overSession();
}
