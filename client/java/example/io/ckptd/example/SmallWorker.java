package io.ckptd.example;

import io.ckptd.worker.AckFigures;
import io.ckptd.worker.CheckpointKind;
import io.ckptd.worker.Counters;
import io.ckptd.worker.Disconnect;
import io.ckptd.worker.Handler;
import io.ckptd.worker.PipelineState;
import io.ckptd.worker.PipelineWorker;
import io.ckptd.worker.TaskState;
import io.ckptd.worker.Transport;
import io.ckptd.worker.Trigger;
import io.ckptd.worker.Welcome;
import io.ckptd.worker.WorkerOptions;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small worker on the Java SDK: registers tasks of one pipeline, acks every trigger (or declines
 * the first few when asked), and writes what happens as JSON lines, one event a line, for a test
 * or a person to read.
 *
 * <pre>
 * java -cp ckpt-worker.jar:ckpt-worker-example.jar:$(cat classpath.txt) io.ckptd.example.SmallWorker \
 *     --server 127.0.0.1:7070 --job etl --pipeline p0 --tasks 0,1 [--worker-id ID]
 *     [--decline-first N] [--savepoint] [--exit-after-completes N] [--events FILE]
 *     [--ca-file PEM] [--cert-file PEM --key-file PEM] [--token-file FILE] [--throwing-handlers]
 *     [--transport session|connect]
 * </pre>
 *
 * <p>TLS: --ca-file names the CAs that sign the daemon's certificate; --cert-file and --key-file
 * (together; the key unencrypted PKCS#8 PEM) are the worker's own for mutual TLS; --token-file
 * holds a bearer token (docs/SECURITY.md).
 *
 * It runs until N completes with --exit-after-completes, then says goodbye and exits 0 (1 when
 * the daemon stopped it for good), or until SIGTERM or SIGINT, when it says goodbye and the JVM
 * exits with 143 or 130.
 *
 * <p>With --throwing-handlers, onWelcome and onComplete end by throwing an AssertionError and
 * leave the thread interrupted, as a buggy handler might: the worker must go on regardless.
 */
public final class SmallWorker {
  private final PrintStream out;
  private final PipelineWorker worker;
  private final List<String> tasks;
  private final AtomicInteger declinesLeft;
  private final boolean savepoint;
  private final boolean throwingHandlers;
  private final int exitAfterCompletes;
  private final AtomicInteger completes = new AtomicInteger();
  private final CountDownLatch done = new CountDownLatch(1);
  private final AtomicBoolean givenUp = new AtomicBoolean();

  private SmallWorker(Map<String, String> args, PrintStream out) {
    this.out = out;
    this.tasks = Arrays.asList(args.getOrDefault("tasks", "0,1").split(","));
    this.declinesLeft = new AtomicInteger(Integer.parseInt(args.getOrDefault("decline-first", "0")));
    this.savepoint = args.containsKey("savepoint");
    this.throwingHandlers = args.containsKey("throwing-handlers");
    this.exitAfterCompletes = Integer.parseInt(args.getOrDefault("exit-after-completes", "0"));
    WorkerOptions.Builder options =
        WorkerOptions.builder()
            .server(required(args, "server"))
            .workerId(args.getOrDefault("worker-id", "java-small-worker"))
            .jobId(required(args, "job"))
            .pipelineId(required(args, "pipeline"))
            .taskIds(tasks)
            .backoffInitial(Duration.ofMillis(50))
            .backoffMax(Duration.ofMillis(500));
    if (args.containsKey("ca-file")) {
      options.caFile(new File(args.get("ca-file")));
    }
    if (args.containsKey("cert-file") != args.containsKey("key-file")) {
      throw new IllegalArgumentException("--cert-file and --key-file go together");
    }
    if (args.containsKey("cert-file")) {
      options.clientCertificate(new File(args.get("cert-file")), new File(args.get("key-file")));
    }
    if (args.containsKey("token-file")) {
      options.tokenFile(new File(args.get("token-file")));
    }
    switch (args.getOrDefault("transport", "session")) {
      case "session" -> options.transport(Transport.SESSION);
      case "connect" -> options.transport(Transport.CONNECT);
      default -> throw new IllegalArgumentException("--transport: session or connect");
    }
    this.worker = new PipelineWorker(options.build(), new Events());
  }

  /** Every handler call becomes one event line; triggers are acked or declined here. */
  private final class Events implements Handler {
    @Override
    public void onConnecting(String target, boolean takeover) {
      emit("connecting", "target", target, "takeover", takeover);
    }

    @Override
    public void onWelcome(Welcome w) {
      Map<String, Object> restored = new LinkedHashMap<>();
      w.restore().taskStates().forEach((task, s) -> restored.put(task, s.uri()));
      emit("welcome", "session_id", w.sessionId(), "generation", w.generation(),
          "state", w.state().name(), "last_completed", w.lastCompletedCheckpointId(),
          "heartbeat_interval_ms", w.heartbeatIntervalMs(), "leader_epoch", w.leaderEpoch(),
          "restore_checkpoint_id", w.restore().checkpointId(), "restore_states", restored);
      misbehave("welcome");
    }

    @Override
    public void onTrigger(Trigger t) {
      emit("trigger", "checkpoint_id", t.checkpointId(), "kind", t.kind().name(),
          "generation", t.generation(), "target", t.target(), "position", t.position());
      if (declinesLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        worker.decline(t.checkpointId(), tasks.get(0), "the example declines");
        emit("declined", "checkpoint_id", t.checkpointId(), "task", tasks.get(0));
        return;
      }
      for (String task : tasks) {
        // A real worker snapshots the task here (at t.position() when it is not 0).
        String uri = "mem://" + task + "/" + t.checkpointId();
        worker.ack(t.checkpointId(), task, new TaskState(uri, 7, "c"), new AckFigures(1, 2, 0, 0));
      }
      emit("acked", "checkpoint_id", t.checkpointId(), "tasks", tasks);
    }

    @Override
    public void onAbort(long checkpointId, String reason) {
      emit("abort", "checkpoint_id", checkpointId, "reason", reason);
    }

    @Override
    public void onComplete(long checkpointId, CheckpointKind kind) {
      emit("complete", "checkpoint_id", checkpointId, "kind", kind.name());
      int n = completes.incrementAndGet();
      if (n == 1 && savepoint) {
        worker.requestSavepoint();
      }
      if (exitAfterCompletes > 0 && n == exitAfterCompletes) {
        done.countDown();
      }
      misbehave("complete");
    }

    /** --throwing-handlers: what a buggy handler does, which must not stop the worker. */
    private void misbehave(String where) {
      if (throwingHandlers) {
        Thread.currentThread().interrupt();
        throw new AssertionError("the example's " + where + " handler throws");
      }
    }

    @Override
    public void onRelease(List<Long> checkpointIds) {
      emit("release", "checkpoint_ids", checkpointIds);
    }

    @Override
    public void onStateChange(PipelineState state, String reason) {
      emit("state", "state", state.name(), "reason", reason);
    }

    @Override
    public void onSavepointRefused(String reason) {
      emit("savepoint_refused", "reason", reason);
    }

    @Override
    public void onDisconnected(Disconnect d) {
      emit("disconnected", "code", d.code().name(), "message", d.message(),
          "was_connected", d.wasConnected(), "will_retry", d.willRetry(),
          "retry_in_ms", d.retryIn().toMillis(), "leader", d.leader());
      if (!d.willRetry()) {
        givenUp.set(true);
        done.countDown();
      }
    }
  }

  private int run() throws InterruptedException {
    // SIGTERM or SIGINT: the JVM exits once the hooks return, so say goodbye in one.
    Runtime.getRuntime().addShutdownHook(new Thread(this::finish, "goodbye"));
    worker.start();
    done.await();
    finish();
    return givenUp.get() ? 1 : 0;
  }

  private final AtomicBoolean finished = new AtomicBoolean();

  /**
   * Goodbye (a no-op when the worker already stopped), the last event, the channels closed. Not
   * synchronized on this object: goodbye waits for the stream thread, whose handlers emit.
   */
  private void finish() {
    if (finished.getAndSet(true)) {
      return;
    }
    worker.goodbye(Duration.ofSeconds(5));
    Counters c = worker.counters();
    emit("stopped", "connects", c.connects(), "reconnects", c.reconnects(),
        "dropped_sends", c.droppedSends(), "stale_messages", c.staleMessages());
    worker.close();
  }

  // ---- JSON lines -------------------------------------------------------------------------------

  /** One line {"event": name, key: value, ...}; synchronized so that lines never interleave. */
  private synchronized void emit(String event, Object... keyValues) {
    StringBuilder b = new StringBuilder("{\"event\":").append(json(event));
    for (int i = 0; i < keyValues.length; i += 2) {
      b.append(',').append(json(keyValues[i])).append(':').append(json(keyValues[i + 1]));
    }
    out.println(b.append('}'));
    out.flush();
  }

  private static String json(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Number || v instanceof Boolean) {
      return v.toString();
    }
    if (v instanceof List<?> list) {
      StringBuilder b = new StringBuilder("[");
      for (Object item : list) {
        b.append(b.length() > 1 ? "," : "").append(json(item));
      }
      return b.append(']').toString();
    }
    if (v instanceof Map<?, ?> map) {
      StringBuilder b = new StringBuilder("{");
      map.forEach((k, item) -> b.append(b.length() > 1 ? "," : "").append(json(String.valueOf(k)))
          .append(':').append(json(item)));
      return b.append('}').toString();
    }
    StringBuilder b = new StringBuilder("\"");
    for (char c : v.toString().toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  // ---- the command line ---------------------------------------------------------------------------

  private static String required(Map<String, String> args, String name) {
    String v = args.get(name);
    if (v == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return v;
  }

  /** --name value pairs; --savepoint and --throwing-handlers alone. */
  private static Map<String, String> parse(String[] argv) {
    Map<String, String> args = new LinkedHashMap<>();
    for (int i = 0; i < argv.length; i++) {
      if (!argv[i].startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument: " + argv[i]);
      }
      String name = argv[i].substring(2);
      if (name.equals("savepoint") || name.equals("throwing-handlers")) {
        args.put(name, "");
      } else if (i + 1 < argv.length) {
        args.put(name, argv[++i]);
      } else {
        throw new IllegalArgumentException("--" + name + " needs a value");
      }
    }
    return args;
  }

  public static void main(String[] argv) throws IOException, InterruptedException {
    Map<String, String> args;
    try {
      args = parse(argv);
    } catch (IllegalArgumentException e) {
      System.err.println("SmallWorker: " + e.getMessage());
      System.exit(2);
      return;
    }
    OutputStream sink =
        args.containsKey("events") ? new FileOutputStream(args.get("events"), true) : System.out;
    PrintStream out = new PrintStream(sink, true, StandardCharsets.UTF_8);
    int code;
    try {
      code = new SmallWorker(args, out).run();
    } catch (IllegalArgumentException e) {
      System.err.println("SmallWorker: " + e.getMessage());
      code = 2;
    }
    System.exit(code);
  }
}
