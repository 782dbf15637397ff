package io.ckptd.worker;

import io.ckptd.v1.CoordinatorMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.After;
import org.junit.Rule;
import org.junit.rules.Timeout;

/**
 * A base for tests that run PipelineWorkers over a FakeTransport; every worker is closed when the
 * test ends. {@link #transport} and {@link #handler} belong to the worker made last.
 */
abstract class WorkerHarness {
  static final String SERVER = "127.0.0.1:7070";
  static final List<String> TASKS = List.of("0", "1");
  private static final AtomicLong BARRIERS = new AtomicLong();

  FakeTransport transport;
  RecordingHandler handler;
  private final List<PipelineWorker> workers = new ArrayList<>();

  /** A worker thread that never ends fails its test, rather than stall the rest of the suite. */
  @Rule public final Timeout perTest = Timeout.seconds(60);

  /**
   * The options most tests use: backoffs of milliseconds, not seconds; Connect calls, which the
   * fake transport stands in for (the worker's logic is the same over a Session channel; the
   * Session itself is tested against a real daemon, tests/e2e/test_java_sdk.py).
   */
  static WorkerOptions.Builder options(String server) {
    return WorkerOptions.builder()
        .transport(Transport.CONNECT)
        .server(server)
        .workerId("w1")
        .jobId("job")
        .pipelineId("p")
        .taskIds(TASKS)
        .backoffInitial(Duration.ofMillis(1))
        .backoffMax(Duration.ofMillis(4));
  }

  PipelineWorker make(WorkerOptions options) {
    transport = new FakeTransport();
    handler = new RecordingHandler();
    PipelineWorker worker = new PipelineWorker(options, handler, transport.channels());
    workers.add(worker);
    return worker;
  }

  PipelineWorker start(WorkerOptions options) {
    PipelineWorker worker = make(options);
    worker.start();
    return worker;
  }

  PipelineWorker start() {
    return start(options(SERVER).build());
  }

  /** The worker's next call, answered with {@code welcome}, once the worker handled it. */
  FakeCall welcomeNextCall(CoordinatorMessage welcome) {
    FakeCall call = transport.nextCall();
    int welcomes = handler.of("welcome").size();
    call.reply(welcome);
    handler.await("welcome", welcomes + 1);
    return call;
  }

  FakeCall welcomeNextCall() {
    return welcomeNextCall(Messages.welcome(0));
  }

  /**
   * Returns once the worker handled everything sent on {@code call} so far: it handles a call's
   * messages in order, and a state change sent now comes back last.
   */
  void awaitHandled(FakeCall call) {
    String reason = "barrier " + BARRIERS.incrementAndGet();
    call.reply(Messages.state(io.ckptd.v1.PipelineState.PIPELINE_STATE_UNSPECIFIED, reason));
    handler.awaitEvent(RecordingHandler.event("state", PipelineState.UNSPECIFIED, reason));
  }

  /** The handler's events but the barriers' state changes and the connecting notices. */
  List<RecordingHandler.Event> eventsButBarriers() {
    return handler.events().stream()
        .filter(e -> !e.name().equals("connecting"))
        .filter(e -> !(e.name().equals("state") && e.arg(1).toString().startsWith("barrier ")))
        .toList();
  }

  @After
  public void closeWorkers() {
    for (PipelineWorker worker : workers) {
      worker.close();
    }
  }
}
