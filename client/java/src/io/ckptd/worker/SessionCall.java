package io.ckptd.worker;

import io.ckptd.v1.ChannelEnd;
import io.ckptd.v1.CoordinatorEnvelope;
import io.ckptd.v1.CoordinatorFrame;
import io.ckptd.v1.Goodbye;
import io.ckptd.v1.WorkerEnvelope;
import io.ckptd.v1.WorkerFrame;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * One WorkerService.Session call that the workers of a process share, a channel each (docs/
 * PROTOCOL.md, "Worker sessions"). A channel is, to its worker, a Connect call: what the daemon
 * sends it arrives on its queue, and its {@code end} (or the call's end) arrives as its End.
 *
 * <p>Sends go onto a lock-free queue; one drain at a time (on the call's own thread) writes
 * everything queued as one frame, whenever gRPC is ready for it: what the workers send while a
 * frame goes out is batched into the next, and nothing waits to fill one. Channel numbers are
 * never reused on a call: a channel dropped here may still have an {@code end} on its way. The
 * call ends itself when its last channel goes; the hub then opens a new one for the next worker.
 */
final class SessionCall {
  /** A frame holds envelopes up to this size (a larger envelope goes alone). */
  static final int MAX_FRAME_BYTES = 4 << 20;
  /** Channel numbers a call hands out before it takes no more. */
  static final int MAX_CHANNEL_NUMBER = 1 << 30;

  private final Consumer<SessionCall> onEnded;
  private final ConcurrentLinkedQueue<WorkerEnvelope> outgoing = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean draining = new AtomicBoolean();
  private final ExecutorService drainer;

  // Guarded by this.
  private final Map<Integer, Channel> channels = new HashMap<>();
  private int nextNumber = 1;
  private boolean closing; // takes no more channels
  private WorkerStream.End end; // once the call ended
  private ClientCallStreamObserver<WorkerFrame> requests;

  /** Starts the call on {@code stub}; {@code onEnded} is told once it is over. */
  SessionCall(WorkerServiceGrpc.WorkerServiceStub stub, Consumer<SessionCall> onEnded) {
    this.onEnded = onEnded;
    this.drainer =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "ckpt session writer");
              t.setDaemon(true);
              return t;
            });
    stub.session(
        new ClientResponseObserver<WorkerFrame, CoordinatorFrame>() {
          @Override
          public void beforeStart(ClientCallStreamObserver<WorkerFrame> requestStream) {
            synchronized (SessionCall.this) {
              requests = requestStream;
            }
            // gRPC became ready to take more: what waited goes now.
            requestStream.setOnReadyHandler(SessionCall.this::scheduleDrain);
          }

          @Override
          public void onNext(CoordinatorFrame frame) {
            for (CoordinatorEnvelope envelope : frame.getEnvelopesList()) {
              dispatch(envelope);
            }
          }

          @Override
          public void onError(Throwable t) {
            Metadata trailers = Status.trailersFromThrowable(t);
            ended(
                new WorkerStream.End(
                    Status.fromThrowable(t), trailers != null ? trailers : new Metadata()));
          }

          @Override
          public void onCompleted() {
            // Each channel ended with its own end; one still here ends as a stream gone silent.
            ended(
                new WorkerStream.End(
                    Status.UNAVAILABLE.withDescription("the session ended"), new Metadata()));
          }
        });
  }

  /** Whether a new channel may still open here. */
  synchronized boolean usable() {
    return !closing && nextNumber < MAX_CHANNEL_NUMBER;
  }

  /**
   * A new channel with {@code hello} queued; one already ended with the call's status if the call
   * ended (a daemon that is down: the worker retries as after a failed Connect); null when this
   * call takes no more channels but has not ended.
   */
  WorkerStream open(WorkerMessage hello) {
    Channel channel;
    synchronized (this) {
      if (end != null) {
        Channel ended = new Channel(0);
        ended.arrivals.add(end);
        return ended;
      }
      if (closing || nextNumber >= MAX_CHANNEL_NUMBER) {
        return null;
      }
      channel = new Channel(nextNumber++);
      channels.put(channel.number, channel);
    }
    send(channel.number, hello);
    return channel;
  }

  private void send(int number, WorkerMessage message) {
    outgoing.add(WorkerEnvelope.newBuilder().setChannel(number).setMessage(message).build());
    scheduleDrain();
  }

  private void scheduleDrain() {
    if (draining.compareAndSet(false, true)) {
      try {
        drainer.execute(this::drain);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        draining.set(false); // the call is over: nothing goes out any more
      }
    }
  }

  /** On the drainer: everything queued, as frames, while gRPC takes them. */
  private void drain() {
    while (true) {
      synchronized (this) {
        while (requests != null && requests.isReady() && !outgoing.isEmpty()) {
          WorkerFrame.Builder frame = WorkerFrame.newBuilder();
          int size = 0;
          WorkerEnvelope next;
          while ((next = outgoing.peek()) != null) {
            int bytes = next.getSerializedSize();
            if (frame.getEnvelopesCount() > 0 && size + bytes > MAX_FRAME_BYTES) {
              break;
            }
            frame.addEnvelopes(outgoing.poll());
            size += bytes;
          }
          if (end == null) {
            requests.onNext(frame.build());
          }
        }
      }
      draining.set(false);
      // Queued after the look above, or ready again meanwhile: drain once more, unless another
      // drain was scheduled already.
      boolean more;
      synchronized (this) {
        more = requests != null && requests.isReady() && !outgoing.isEmpty();
      }
      if (!more || !draining.compareAndSet(false, true)) {
        return;
      }
    }
  }

  private void dispatch(CoordinatorEnvelope envelope) {
    Channel channel;
    boolean last = false;
    synchronized (this) {
      channel = channels.get(envelope.getChannel());
      if (channel != null && envelope.hasEnd()) {
        channels.remove(envelope.getChannel());
        last = channels.isEmpty() && !closing;
        closing |= last;
      }
    }
    if (channel == null) {
      return; // a channel dropped here: its end was on its way
    }
    if (envelope.hasEnd()) {
      ChannelEnd e = envelope.getEnd();
      channel.arrivals.add(
          new WorkerStream.End(
              Status.fromCodeValue(e.getCode()).withDescription(e.getMessage()), new Metadata()));
      if (last) {
        cancelCall("its last channel ended");
      }
    } else {
      channel.arrivals.add(envelope.getMessage());
    }
  }

  private void ended(WorkerStream.End how) {
    List<Channel> open;
    synchronized (this) {
      if (end != null) {
        return;
      }
      end = how;
      closing = true;
      open = new ArrayList<>(channels.values());
      channels.clear();
    }
    outgoing.clear();
    drainer.shutdown();
    // Every channel ends as its Connect call would have, with the call's status and trailers.
    for (Channel channel : open) {
      channel.arrivals.add(how);
    }
    onEnded.accept(this);
  }

  private void cancelCall(String why) {
    ClientCallStreamObserver<WorkerFrame> r;
    synchronized (this) {
      r = requests;
    }
    if (r != null) {
      r.cancel(why, null);
    }
  }

  /** Drops a channel at once: a goodbye tells the daemon, its worker sees CANCELLED now. */
  private void close(Channel channel, String why) {
    boolean last;
    synchronized (this) {
      if (channels.remove(channel.number) == null) {
        return;
      }
      last = channels.isEmpty() && !closing;
      closing |= last;
    }
    if (last) {
      cancelCall(why); // the daemon sees the call end, as it would see a Connect call cancelled
    } else {
      send(
          channel.number,
          WorkerMessage.newBuilder().setGoodbye(Goodbye.getDefaultInstance()).build());
    }
    channel.arrivals.add(
        new WorkerStream.End(Status.CANCELLED.withDescription(why), new Metadata()));
  }

  /** One channel: a worker's stream on this call. */
  final class Channel extends WorkerStream {
    final int number;

    Channel(int number) {
      this.number = number;
    }

    @Override
    void send(WorkerMessage message) {
      synchronized (SessionCall.this) {
        if (!channels.containsKey(number)) {
          return; // ended or dropped
        }
      }
      SessionCall.this.send(number, message);
    }

    @Override
    void halfClose() {
      // A channel has no half-close: its goodbye ends it, and the daemon answers with its end.
    }

    @Override
    void cancel(String why) {
      close(this, why);
    }

    @Override
    boolean overSession() {
      return true;
    }
  }
}
