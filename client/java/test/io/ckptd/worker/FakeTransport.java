package io.ckptd.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * gRPC under one PipelineWorker, without a daemon or a socket: {@link #channels()} goes to the
 * worker's package-private constructor, and every Connect call it makes is kept, in order, as a
 * FakeCall for the test to answer.
 */
final class FakeTransport {
  private final List<FakeCall> calls = new ArrayList<>();
  private final List<FakeChannel> channels = new ArrayList<>();
  private int taken;
  private RuntimeException nextConnectFails; // thrown by the next connect instead of a call

  Channels channels() {
    return new Channels(this::open);
  }

  private synchronized FakeChannel open(String target) {
    FakeChannel channel = new FakeChannel(target, this);
    channels.add(channel);
    return channel;
  }

  synchronized FakeCall connect(String target) {
    if (nextConnectFails != null) {
      RuntimeException e = nextConnectFails;
      nextConnectFails = null;
      throw e;
    }
    FakeCall call = new FakeCall(target);
    calls.add(call);
    notifyAll();
    return call;
  }

  /** The next connect throws {@code e}, as a transport that breaks outside gRPC's statuses. */
  synchronized void failNextConnect(RuntimeException e) {
    nextConnectFails = e;
  }

  /** The worker's next Connect call, in order, waiting for it if need be. */
  synchronized FakeCall nextCall() {
    Waits.until(this, () -> calls.size() > taken, "Connect call number " + (taken + 1));
    return calls.get(taken++);
  }

  synchronized int callCount() {
    return calls.size();
  }

  /** True when every channel the worker opened is shut down (and it opened at least one). */
  synchronized boolean allChannelsShutDown() {
    return !channels.isEmpty() && channels.stream().allMatch(FakeChannel::isShutdown);
  }
}
