package io.ckptd.worker;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A Handler that records every call, in order, as an {@link Event}, and then runs what the test
 * asked for that event (an ack, a goodbye, a throw).
 */
final class RecordingHandler implements Handler {
  /** One handler call: its name ("trigger", "abort", ...) and its arguments. */
  record Event(String name, List<Object> args) {
    Object arg(int index) {
      return args.get(index);
    }
  }

  static Event event(String name, Object... args) {
    return new Event(name, Arrays.asList(args));
  }

  private final List<Event> events = new ArrayList<>();
  private final Map<String, Consumer<Event>> actions = new HashMap<>();

  /** After recording each {@code name} event, runs {@code action} on the stream thread. */
  synchronized RecordingHandler then(String name, Consumer<Event> action) {
    actions.put(name, action);
    return this;
  }

  private void record(String name, Object... args) {
    Event e = event(name, args);
    Consumer<Event> action;
    synchronized (this) {
      events.add(e);
      notifyAll();
      action = actions.get(name);
    }
    if (action != null) {
      action.accept(e);
    }
  }

  synchronized List<Event> events() {
    return List.copyOf(events);
  }

  /** The events of one name so far. */
  synchronized List<Event> of(String name) {
    return events.stream().filter(e -> e.name().equals(name)).toList();
  }

  /** The events of one name, once there are at least {@code count}. */
  synchronized List<Event> await(String name, int count) {
    Waits.until(this, () -> of(name).size() >= count, count + " call(s) of " + name);
    return of(name);
  }

  /** The first event of one name, once it came. */
  Event await(String name) {
    return await(name, 1).get(0);
  }

  /** Returns once {@code expected} was recorded. */
  synchronized void awaitEvent(Event expected) {
    Waits.until(this, () -> events.contains(expected), "the event " + expected);
  }

  @Override
  public void onConnecting(String target, boolean takeover) {
    record("connecting", target, takeover);
  }

  @Override
  public void onWelcome(Welcome welcome) {
    record("welcome", welcome);
  }

  @Override
  public void onTrigger(Trigger trigger) {
    record("trigger", trigger);
  }

  @Override
  public void onAbort(long checkpointId, String reason) {
    record("abort", checkpointId, reason);
  }

  @Override
  public void onComplete(long checkpointId, CheckpointKind kind) {
    record("complete", checkpointId, kind);
  }

  @Override
  public void onCommit(long checkpointId) {
    record("commit", checkpointId);
  }

  @Override
  public void onAllCommitted(long checkpointId) {
    record("all_committed", checkpointId);
  }

  @Override
  public void onRelease(List<Long> checkpointIds) {
    record("release", checkpointIds);
  }

  @Override
  public void onStateChange(PipelineState state, String reason) {
    record("state", state, reason);
  }

  @Override
  public void onSavepointRefused(String reason) {
    record("savepoint_refused", reason);
  }

  @Override
  public void onDisconnected(Disconnect disconnect) {
    record("disconnected", disconnect);
  }
}
