// One class, not split: a worker's session with the daemon (the stream thread that connects,
// reconnects with backoff, follows the leader and dispatches; the heartbeats; the public calls) all
// read and write one state under one lock (the current stream, the newest epoch, the positions).
// What stands alone is already a class of its own (ConnectStream, SessionCall, Backoff, Channels,
// RetryPolicy, ServerList, TokenSource); splitting the rest would spread that lock's invariants over several
// files.
package io.ckptd.worker;

import io.ckptd.v1.Ack;
import io.ckptd.v1.Committed;
import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.Decline;
import io.ckptd.v1.Goodbye;
import io.ckptd.v1.Heartbeat;
import io.ckptd.v1.Hello;
import io.ckptd.v1.RestoreResult;
import io.ckptd.v1.SavepointRequest;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.MetadataUtils;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Serves one pipeline's tasks from this process: one Connect stream to the daemon, reconnected
 * with backoff until the worker is stopped (docs/PROTOCOL.md describes the protocol).
 *
 * <p>The first hello is sent without takeover, every later one (every reconnect) with it, unless
 * {@link WorkerOptions#takeoverOnReconnect()} is off. With several daemons, UNAVAILABLE moves on to
 * the next one, and a standby's {@code ckpt-leader} trailer is followed at once (three redirects
 * in a row at most). Messages of a leadership older than the newest seen are dropped. Statuses
 * that cannot succeed again (a bad hello, credentials, a takeover by another worker) stop the
 * worker for good, reported through {@link Handler#onDisconnected}.
 *
 * <p>Threads: each worker has one stream thread, which opens the streams, reads them and calls the
 * {@link Handler} one call at a time, and one thread for heartbeats. Both end, and the channels
 * close, once the worker stopped for good. Every public method is thread-safe and may be called
 * from a handler. {@code ack}, {@code decline}, {@code requestSavepoint} and {@code committed} go
 * out only on a welcomed stream; otherwise they are dropped and counted (a round of a stream that
 * ended is aborted by the daemon, and a new one triggered; a checkpoint still COMMITTING comes back
 * in the next welcome's restore point, with {@code commitPending}).
 *
 * <p>Commit phase (docs/PROTOCOL.md): a complete that asks for a commit calls {@link
 * Handler#onComplete}, then {@link Handler#onCommit}; a welcome whose restore point is {@link
 * RestorePoint#commitPending()} calls {@link Handler#onWelcome}, then {@code onCommit} for the
 * restore point. Then, with {@link WorkerOptions#autoCommit()}, {@code committed} goes out for
 * every task of this worker, unless one of those handlers threw: then none goes out for that
 * commit. Without autoCommit the application calls {@link #committed} per task.
 * {@link Handler#onAllCommitted} says every task of the pipeline committed.
 */
public final class PipelineWorker implements AutoCloseable {
  /** The largest position a worker may report. */
  public static final long MAX_POSITION = 1L << 60;

  private static final System.Logger LOG = System.getLogger("io.ckptd.worker");
  /** A session that stayed up this long starts the next backoff from the beginning. */
  private static final long STABLE_SESSION_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** The standby pace (StandbyPoll): retries at most this far apart, for the window below. */
  private static final Duration STANDBY_POLL_MAX = Duration.ofSeconds(1);
  private static final Duration STANDBY_POLL_WINDOW = Duration.ofSeconds(30);
  /** Every tenth heartbeat carries every task's position, not only the ones that changed. */
  private static final int FULL_POSITIONS_EVERY = 10;
  /** Ack positions default to the trigger's: the last few triggers are enough. */
  private static final int TRIGGERS_REMEMBERED = 16;
  /** A welcome that names no heartbeat interval: the daemon's default. */
  private static final long DEFAULT_HEARTBEAT_MS = 3000;
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> LEADER =
      Metadata.Key.of(RetryPolicy.LEADER_TRAILER, Metadata.ASCII_STRING_MARSHALLER);

  private final WorkerOptions options;
  private final Handler handler;
  private final Set<String> tasks;
  private final Channels channels;
  private final TokenSource token;
  private final Backoff backoff; // the stream thread's alone
  private final Backoff standbyBackoff; // the stream thread's alone: backoff capped at a second
  private final StandbyPoll standbyPoll; // the stream thread's alone: when standbyBackoff is used
  private final Thread thread;
  private final ScheduledExecutorService heartbeats;
  private final CountDownLatch stopSignal = new CountDownLatch(1); // wakes a backoff wait
  private final CountDownLatch stopped = new CountDownLatch(1);

  private final Object lock = new Object();
  // Guarded by lock: read and written from any thread.
  private WorkerStream stream; // the current one
  private boolean started;
  private boolean ending; // goodbye or stop asked, or given up: never reconnect
  private long maxEpoch; // the newest leadership seen
  private final Map<String, Long> positions = new HashMap<>(); // task -> highest position set
  private Set<String> changed = new HashSet<>(); // tasks the next heartbeat reports
  private Set<String> mayGoBack = new HashSet<>(); // first position after a welcome may be lower
  private boolean backlog; // setBacklog's: every heartbeat carries it
  private final TreeMap<Long, Long> triggerPositions = new TreeMap<>(); // checkpoint -> position
  private ScheduledFuture<?> heartbeat;
  private long heartbeatsSent;
  private long attempts, connects, reconnects, disconnects, droppedSends, staleMessages, redirects;

  /**
   * A worker for {@code options}, calling {@code handler}; nothing happens before {@link #start}.
   *
   * @throws IllegalArgumentException unusable TLS files or token file, or a token that would go in
   *     the clear to an address that is not loopback
   */
  public PipelineWorker(WorkerOptions options, Handler handler) {
    this(
        options,
        Objects.requireNonNull(handler, "handler"),
        new Channels(
            options.caFile(), options.certFile(), options.keyFile(), options.tlsServerName()));
  }

  /** As the public constructor, over {@code channels}: the unit tests' fake transport. */
  PipelineWorker(WorkerOptions options, Handler handler, Channels channels) {
    this.options = options;
    this.handler = Objects.requireNonNull(handler, "handler");
    this.tasks = Set.copyOf(options.taskIds());
    this.channels = channels;
    this.token = new TokenSource(options.tokenFile() == null ? null : options.tokenFile().toPath());
    if (token.present()
        && !channels.tls()
        && !options.servers().stream().allMatch(ServerList::isLoopback)) {
      throw new IllegalArgumentException(
          "tokenFile without TLS: a token is sent in the clear only to a loopback address");
    }
    this.backoff = new Backoff(options.backoffInitial(), options.backoffMax());
    Duration standbyMax = options.backoffMax().compareTo(STANDBY_POLL_MAX) < 0
        ? options.backoffMax() : STANDBY_POLL_MAX;
    this.standbyBackoff = new Backoff(options.backoffInitial(),
        standbyMax.compareTo(options.backoffInitial()) < 0 ? options.backoffInitial() : standbyMax);
    this.standbyPoll = new StandbyPoll(STANDBY_POLL_WINDOW.toNanos(), options.servers().size() > 1);
    String name = options.jobId() + "/" + options.pipelineId();
    this.thread = new Thread(this::run, "ckpt " + name);
    this.thread.setDaemon(true);
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "ckpt heartbeat " + name);
              t.setDaemon(true);
              return t;
            });
    executor.setRemoveOnCancelPolicy(true);
    this.heartbeats = executor;
  }

  // ---- what the application calls ---------------------------------------------------------------

  /** Connects. Only the first call has an effect; none after {@link #stop} or {@link #goodbye}. */
  public void start() {
    synchronized (lock) {
      if (started || ending) {
        return;
      }
      started = true;
      // Under the lock: a stop() from another thread sees the thread started or not at all.
      thread.start();
    }
  }

  /** The task's snapshot for this round is done; acked at the trigger's position. */
  public void ack(long checkpointId, String taskId, TaskState state) {
    ack(checkpointId, taskId, state, AckFigures.NONE);
  }

  /** As {@link #ack(long, String, TaskState)}, with figures for operators. */
  public void ack(long checkpointId, String taskId, TaskState state, AckFigures figures) {
    long position;
    synchronized (lock) {
      position = triggerPositions.getOrDefault(checkpointId, 0L);
    }
    ack(checkpointId, taskId, state, figures, position);
  }

  /**
   * The task's snapshot for this round is done, taken at {@code position} (an ack at another
   * position than the trigger's fails the round).
   *
   * @throws IllegalArgumentException a task not of this worker, or a state uri over 4096 bytes or
   *     checksum over 1024 (the daemon would end the stream over it, and the worker stop)
   */
  public void ack(
      long checkpointId, String taskId, TaskState state, AckFigures figures, long position) {
    checkTask(taskId);
    Limits.checkState(state);
    Ack ack =
        Ack.newBuilder()
            .setCheckpointId(checkpointId)
            .setTaskId(taskId)
            .setState(Protos.taskState(state))
            .setSyncDurationMs(figures.syncDurationMs())
            .setAsyncDurationMs(figures.asyncDurationMs())
            .setAlignmentDurationMs(figures.alignmentDurationMs())
            .setBytesProcessedDuringAlignment(figures.bytesProcessedDuringAlignment())
            .setPosition(position)
            .build();
    sendOnSession(WorkerMessage.newBuilder().setAck(ack).build());
  }

  /** The task cannot take this round: it fails at once, for the whole pipeline. */
  public void decline(long checkpointId, String taskId, String reason) {
    decline(checkpointId, taskId, reason, false, 0);
  }

  /**
   * As {@link #decline(long, String, String)}. {@code expired}: the task gave up waiting (the
   * round counts as expired); {@code position}: where the task is, when past the trigger's (0: not
   * said).
   *
   * @throws IllegalArgumentException a task not of this worker
   */
  public void decline(
      long checkpointId, String taskId, String reason, boolean expired, long position) {
    checkTask(taskId);
    Decline decline =
        Decline.newBuilder()
            .setCheckpointId(checkpointId)
            .setTaskId(taskId)
            .setReason(reason)
            .setExpired(expired)
            .setPosition(position)
            .build();
    sendOnSession(WorkerMessage.newBuilder().setDecline(decline).build());
  }

  /**
   * The task committed what {@code checkpointId} held back (a pipeline with a commit phase; see
   * {@link Handler#onCommit}). Only needed without {@link WorkerOptions#autoCommit()}: an
   * asynchronous commit calls it once each task's commit is done, from any thread, or after a
   * commit handler threw. Sent on a welcomed stream only, as {@code ack} is; otherwise dropped and
   * counted (the next welcome asks for the commit again, with {@link
   * RestorePoint#commitPending()}).
   *
   * @throws IllegalArgumentException a task not of this worker
   */
  public void committed(long checkpointId, String taskId) {
    checkTask(taskId);
    sendOnSession(committedMessage(checkpointId, taskId));
  }

  private static WorkerMessage committedMessage(long checkpointId, String taskId) {
    Committed committed =
        Committed.newBuilder().setCheckpointId(checkpointId).setTaskId(taskId).build();
    return WorkerMessage.newBuilder().setCommitted(committed).build();
  }

  /** Asks for a savepoint to the default location; the answer is a trigger, or a refusal. */
  public void requestSavepoint() {
    requestSavepoint("", false);
  }

  /**
   * Asks the daemon for a savepoint of this pipeline to {@code target} (empty: the default
   * location); {@code stop}: SAVEPOINT_AND_STOP. The answer is a {@link Trigger} of that kind, or
   * {@link Handler#onSavepointRefused}.
   *
   * @throws IllegalArgumentException a target over 4096 bytes, with a control character, or "."
   *     or ".." (the daemon would end the stream over it, and the worker stop)
   */
  public void requestSavepoint(String target, boolean stop) {
    Limits.checkTarget(target);
    SavepointRequest request = SavepointRequest.newBuilder().setTarget(target).setStop(stop).build();
    sendOnSession(WorkerMessage.newBuilder().setSavepointRequest(request).build());
  }

  /**
   * The highest position (0 to {@link #MAX_POSITION}) the task has committed, sent with the next
   * heartbeat. A lower one than the task's last is ignored, except the first after a welcome (a
   * task may have gone back to its restore point). The first after a welcome is sent even when
   * equal to the last: the daemon forgot every position of the previous stream.
   *
   * @throws IllegalArgumentException a task not of this worker, or a position out of range
   */
  public void setPosition(String taskId, long position) {
    checkTask(taskId);
    if (position < 0 || position > MAX_POSITION) {
      throw new IllegalArgumentException("a position is between 0 and " + MAX_POSITION);
    }
    synchronized (lock) {
      Long last = positions.get(taskId);
      boolean firstSinceWelcome = mayGoBack.remove(taskId);
      if (last != null && position < last && !firstSinceWelcome) {
        return;
      }
      if (firstSinceWelcome || last == null || last != position) {
        positions.put(taskId, position);
        changed.add(taskId);
      }
    }
  }

  /**
   * The tasks are behind, catching up on a backlog (true), or caught up (false): said at once and
   * in every heartbeat. While any worker of a pipeline says so, the daemon checkpoints it at its
   * max_interval_ms, when set (docs/PROTOCOL.md, "Adaptive interval"). Said again after a
   * reconnect.
   */
  public void setBacklog(boolean behind) {
    synchronized (lock) {
      if (behind == backlog) {
        return;
      }
      backlog = behind;
      WorkerStream s = stream;
      if (s != null && s.welcomed && !s.goodbyeSent && !s.closed) {
        s.send(
            WorkerMessage.newBuilder()
                .setHeartbeat(Heartbeat.newBuilder().setBacklog(behind))
                .build());
      }
    }
  }

  private void checkTask(String taskId) {
    if (!tasks.contains(taskId)) {
      throw new IllegalArgumentException("task '" + taskId + "' is not one of this worker's");
    }
  }

  /**
   * Deregisters the tasks cleanly: goodbye, then half-close, then the daemon ends the stream
   * (cancelled if that takes longer than {@code timeout}). Never reconnects afterwards. Blocks
   * until the worker stopped, unless called from a handler.
   */
  public void goodbye(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    WorkerStream unwelcomed = null;
    boolean wasStarted;
    synchronized (lock) {
      ending = true;
      wasStarted = started;
      WorkerStream s = stream;
      if (s != null && s.welcomed && !s.closed) {
        if (!s.goodbyeSent) { // a second goodbye() only waits
          s.goodbyeSent = true;
          s.send(WorkerMessage.newBuilder().setGoodbye(Goodbye.getDefaultInstance()).build());
          s.halfClose(); // the daemon answers with OK, which ends the stream thread
        }
      } else {
        unwelcomed = s; // nothing to say goodbye to
      }
    }
    stopSignal.countDown();
    if (unwelcomed != null) {
      unwelcomed.cancel("goodbye before the welcome");
    }
    if (!wasStarted) {
      neverStarted();
      return;
    }
    if (Thread.currentThread() == thread) {
      // A handler cannot wait for its own thread: the heartbeat thread enforces the timeout
      // (and goes away with the stream thread if the daemon ends the stream in time).
      try {
        heartbeats.schedule(this::stop, timeout.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        // already shutting down
      }
      return;
    }
    if (!awaitStopped(timeout)) {
      stop();
    }
  }

  /**
   * Cancels the stream (the daemon sees the tasks lost, not a clean departure) and never
   * reconnects. Waits for the stream thread, unless called from a handler.
   */
  public void stop() {
    WorkerStream s;
    boolean wasStarted;
    synchronized (lock) {
      ending = true;
      s = stream;
      wasStarted = started;
    }
    stopSignal.countDown();
    if (s != null) {
      s.cancel("worker stopped");
    }
    if (!wasStarted) {
      neverStarted();
      return;
    }
    if (Thread.currentThread() != thread) {
      joinUninterruptibly();
    }
  }

  /** Stopped before start(): no thread to end what the constructor made, so this does. */
  private void neverStarted() {
    heartbeats.shutdownNow();
    stopped.countDown();
  }

  /**
   * True once the worker stopped for good (goodbye, stop, or a status not retried), waiting up to
   * {@code timeout}. From a handler it does not wait: it says whether the worker is stopped.
   */
  public boolean awaitStopped(Duration timeout) {
    if (Thread.currentThread() == thread) {
      return stopped.getCount() == 0;
    }
    try {
      return stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return stopped.getCount() == 0;
    }
  }

  /** Stops the worker (as {@link #stop}) and closes its channels. */
  @Override
  public void close() {
    stop();
    channels.close();
  }

  /** True while a welcomed stream is open. */
  public boolean isConnected() {
    synchronized (lock) {
      return stream != null && stream.welcomed && !stream.closed;
    }
  }

  /** True once the worker stopped for good. */
  public boolean isStopped() {
    return stopped.getCount() == 0;
  }

  /** The counters as they are now. */
  public Counters counters() {
    synchronized (lock) {
      return new Counters(
          attempts, connects, reconnects, disconnects, droppedSends, staleMessages, redirects);
    }
  }

  /** The options this worker was made with. */
  public WorkerOptions options() {
    return options;
  }

  // ---- the stream thread ------------------------------------------------------------------------

  private void run() {
    List<String> servers = options.servers();
    int index = 0; // the daemon of the list tried next
    String redirect = null; // the leader a standby named
    int redirectsInARow = 0;
    boolean first = true;
    try {
      while (stopSignal.getCount() > 0) {
        String target = redirect != null ? redirect : servers.get(index);
        redirect = null;
        boolean takeover = !first && options.takeoverOnReconnect();
        first = false;
        synchronized (lock) {
          if (ending) {
            break;
          }
          attempts++;
        }
        call(h -> h.onConnecting(target, takeover));
        WorkerStream s = open(target, takeover);
        synchronized (lock) {
          stream = s;
        }
        WorkerStream.End end = serve(s, target);
        boolean userEnded;
        boolean wasConnected;
        synchronized (lock) {
          stream = null;
          triggerPositions.clear();
          stopHeartbeats();
          userEnded = ending;
          wasConnected = s.welcomed;
          if (!userEnded) {
            disconnects++;
          }
        }
        if (userEnded) {
          break;
        }
        Status.Code code = end.status().getCode();
        String message = end.status().getDescription() == null ? "" : end.status().getDescription();
        if (code == Status.Code.UNIMPLEMENTED && s.overSession() && !wasConnected) {
          // A daemon from before Session: the same hello again at once, over Connect.
          if (SessionHub.INSTANCE.sessionUnsupported(target)) {
            LOG.log(Level.WARNING, "{0} has no WorkerService.Session (UNIMPLEMENTED): a Connect "
                + "call per worker there", target);
          }
          redirect = target;
          first = true;
          continue;
        }
        boolean stable =
            wasConnected && System.nanoTime() - s.welcomedAtNanos >= STABLE_SESSION_NANOS;
        if (stable) {
          backoff.reset();
          standbyBackoff.reset();
        }
        if (wasConnected) {
          redirectsInARow = 0;
        }
        String leader = end.trailers().get(LEADER);
        // A trailer (even empty) is a standby's answer: a takeover is under way. So may a leader
        // lost be.
        standbyPoll.streamEnded(
            wasConnected,
            leader != null,
            stable && code == Status.Code.UNAVAILABLE,
            System.nanoTime());
        if (leader != null && !leader.isEmpty() && !mayConnectTo(leader)) {
          LOG.log(
              Level.WARNING,
              "not following the leader {0}: the bearer token would go to it in the clear",
              leader);
          leader = null;
        }
        if (code == Status.Code.UNAVAILABLE
            && leader != null
            && !leader.isEmpty()
            && !leader.equals(target)
            && redirectsInARow < RetryPolicy.MAX_REDIRECTS_IN_A_ROW) {
          redirectsInARow++;
          redirect = leader;
          synchronized (lock) {
            redirects++;
          }
          Disconnect d = new Disconnect(code, message, wasConnected, true, Duration.ZERO, leader);
          call(h -> h.onDisconnected(d));
          continue;
        }
        redirectsInARow = 0;
        if (code == Status.Code.UNAVAILABLE && servers.size() > 1) {
          index = (index + 1) % servers.size();
        }
        RetryPolicy.Action action = RetryPolicy.classify(code, message);
        if (action == RetryPolicy.Action.GIVE_UP) {
          Disconnect d = new Disconnect(code, message, wasConnected, false, Duration.ZERO, null);
          call(h -> h.onDisconnected(d));
          break;
        }
        Duration delay;
        if (RetryPolicy.isRestore(code, message)) {
          delay = Duration.ZERO; // restored by an operator: back at once for the new restore point
        } else if (action == RetryPolicy.Action.RETRY && standbyPoll.active(System.nanoTime())) {
          delay = standbyBackoff.nextDelay(false);
        } else {
          delay = backoff.nextDelay(action == RetryPolicy.Action.RETRY_SLOWLY);
        }
        Disconnect d = new Disconnect(code, message, wasConnected, true, delay, null);
        call(h -> h.onDisconnected(d));
        if (stopSignal.await(delay.toNanos(), TimeUnit.NANOSECONDS)) {
          break;
        }
      }
    } catch (InterruptedException e) {
      // Only code of the application interrupts this thread (call() clears what a handler left):
      // taken as a stop, and the finally below cancels the stream.
    } catch (Throwable e) {
      // A missing class on the classpath, say: the worker cannot go on, and says so.
      LOG.log(Level.ERROR, "the worker of " + options.jobId() + "/" + options.pipelineId() + " failed", e);
      Disconnect d = new Disconnect(Status.Code.INTERNAL, e.toString(), false, false, Duration.ZERO, null);
      call(h -> h.onDisconnected(d));
    } finally {
      WorkerStream s;
      synchronized (lock) {
        ending = true;
        s = stream;
        stream = null;
        stopHeartbeats();
      }
      if (s != null) {
        s.cancel("worker stopped"); // left by an exception: the daemon must not keep the tasks
      }
      stopSignal.countDown();
      heartbeats.shutdownNow();
      // Nothing connects again (start() works once): a worker that stops by itself, say on a
      // refused hello, holds no connection even if the application never calls close().
      channels.shutdown();
      stopped.countDown();
    }
  }

  /** A bearer token goes in the clear only to a loopback address. */
  private boolean mayConnectTo(String target) {
    return channels.tls() || !token.present() || ServerList.isLoopback(target);
  }

  /**
   * Starts the next stream to {@code target} with its hello: a channel of the process's Session
   * call to it, or a Connect call of its own (the CONNECT transport, or a daemon without Session).
   */
  private WorkerStream open(String target, boolean takeover) {
    Hello hello =
        Hello.newBuilder()
            .setWorkerId(options.workerId())
            .setJobId(options.jobId())
            .setPipelineId(options.pipelineId())
            .addAllTaskIds(options.taskIds())
            .setTakeover(takeover)
            .build();
    WorkerMessage first = WorkerMessage.newBuilder().setHello(hello).build();
    String bearer = token.current();
    try {
      if (options.transport() == Transport.SESSION
          && !SessionHub.INSTANCE.connectOnly(target)) {
        return SessionHub.INSTANCE.open(target, channels, bearer, first);
      }
      WorkerServiceGrpc.WorkerServiceStub stub = WorkerServiceGrpc.newStub(channels.get(target));
      if (bearer != null) {
        Metadata headers = new Metadata();
        headers.put(AUTHORIZATION, "Bearer " + bearer);
        stub = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
      }
      ConnectStream s = new ConnectStream();
      s.start(stub, first);
      return s;
    } catch (RuntimeException e) {
      // Not gRPC's status: retried as a broken stream, never the end of this thread.
      LOG.log(Level.ERROR, "stream to " + target + " failed", e);
      ConnectStream failed = new ConnectStream(); // never started: it only ends
      failed.arrivals.add(
          new WorkerStream.End(Status.UNKNOWN.withDescription(e.toString()), new Metadata()));
      return failed;
    }
  }

  /** Runs one stream to its end, dispatching what arrives. */
  private WorkerStream.End serve(WorkerStream s, String target) throws InterruptedException {
    boolean ended = false; // the stream's End arrived: nothing is left to end
    try {
      synchronized (lock) {
        if (ending && !s.goodbyeSent) {
          s.cancel("worker stopped"); // stop() came before the call existed
        }
      }
      while (true) {
        Object arrival = s.take();
        if (arrival instanceof WorkerStream.End end) {
          ended = true;
          return end;
        }
        dispatch(s, (CoordinatorMessage) arrival);
      }
    } catch (RuntimeException e) {
      // Not gRPC's status: retried as a broken stream, never the end of this thread.
      LOG.log(Level.ERROR, "stream to " + target + " failed", e);
      return new WorkerStream.End(Status.UNKNOWN.withDescription(e.toString()), new Metadata());
    } finally {
      synchronized (lock) {
        s.closed = true;
      }
      if (!ended) {
        // Left early (an error, an interrupt): cancelled, not half-closed, which without a
        // goodbye would only make the daemon end it INVALID_ARGUMENT later.
        s.cancel("worker error");
      }
    }
  }

  private void dispatch(WorkerStream s, CoordinatorMessage message) {
    switch (message.getMsgCase()) {
      case WELCOME:
        onWelcome(s, message.getWelcome());
        break;
      case TRIGGER:
        io.ckptd.v1.Trigger t = message.getTrigger();
        synchronized (lock) {
          if (!isCurrent(t.getLeaderEpoch(), maxEpoch)) {
            staleMessages++;
            return;
          }
          maxEpoch = Math.max(maxEpoch, t.getLeaderEpoch()); // the newest seen, as a welcome's
          triggerPositions.put(t.getCheckpointId(), t.getPosition());
          while (triggerPositions.size() > TRIGGERS_REMEMBERED) {
            triggerPositions.pollFirstEntry();
          }
        }
        Trigger trigger = Protos.trigger(t);
        call(h -> h.onTrigger(trigger));
        break;
      case ABORT:
        if (!staleStream(s)) {
          call(h -> h.onAbort(message.getAbort().getCheckpointId(), message.getAbort().getReason()));
        }
        break;
      case COMPLETE:
        if (!staleStream(s)) {
          io.ckptd.v1.Complete complete = message.getComplete();
          CheckpointKind kind = CheckpointKind.fromProto(complete.getKind());
          boolean returned = call(h -> h.onComplete(complete.getCheckpointId(), kind));
          if (complete.getCommit()) {
            commit(complete.getCheckpointId(), returned);
          }
        }
        break;
      case ALL_COMMITTED:
        if (!staleStream(s)) { // a deposed leader's may not be durable
          long id = message.getAllCommitted().getCheckpointId();
          call(h -> h.onAllCommitted(id));
        }
        break;
      case RELEASE:
        if (!staleStream(s)) { // a deposed leader's release deletes nothing
          List<Long> ids = List.copyOf(message.getRelease().getCheckpointIdsList());
          call(h -> h.onRelease(ids));
        }
        break;
      case STATE:
        PipelineState state = PipelineState.fromProto(message.getState().getState());
        call(h -> h.onStateChange(state, message.getState().getReason()));
        break;
      case SAVEPOINT_REFUSED:
        call(h -> h.onSavepointRefused(message.getSavepointRefused().getReason()));
        break;
      default:
        break; // a newer daemon's message: ignored
    }
  }

  private void onWelcome(WorkerStream s, io.ckptd.v1.Welcome w) {
    synchronized (lock) {
      s.epoch = w.getLeaderEpoch();
      if (!isCurrent(w.getLeaderEpoch(), maxEpoch)) {
        staleMessages++; // a deposed leader's: this stream's other messages are dropped too
        return;
      }
      maxEpoch = Math.max(maxEpoch, w.getLeaderEpoch());
      s.welcomed = true;
      s.welcomedAtNanos = System.nanoTime();
      connects++;
      if (connects > 1) {
        reconnects++;
      }
      // The daemon knows no position of a task that registered anew: each reports again with its
      // next setPosition, which may go back once (to where it restored). Until then nothing is
      // sent for it: a position from before a restore would push rounds to where it is not.
      changed = new HashSet<>();
      mayGoBack = new HashSet<>(tasks);
      if (backlog) {
        // The daemon forgot the last stream's backlog with it: said again, at once.
        s.send(
            WorkerMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder().setBacklog(true)).build());
      }
      long intervalMs =
          w.getHeartbeatIntervalMs() > 0 ? w.getHeartbeatIntervalMs() : DEFAULT_HEARTBEAT_MS;
      stopHeartbeats();
      heartbeat =
          heartbeats.scheduleAtFixedRate(
              () -> heartbeatSafely(s), intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }
    if (w.getRestoreWithheld()) {
      // The pipeline has state it cannot offer: the application is held back (onWelcome would
      // start it as a fresh pipeline) until an operator restores the pipeline, which ends this
      // stream; the next welcome carries the new restore point.
      call(
          h ->
              h.onStateChange(
                  PipelineState.FAILED,
                  "the pipeline's restore point failed and none replaced it; the application is"
                      + " held back until an operator restores it (ckptctl pipeline why)"));
      return;
    }
    Welcome welcome = Protos.welcome(w);
    String failure = callForFailure(h -> h.onWelcome(welcome));
    long restored = welcome.restore().checkpointId();
    if (restored != 0) {
      // The restore handler's outcome (docs/PROTOCOL.md, "Verified restore"): an exception is a
      // failed restore, and the daemon moves the pipeline to an older checkpoint.
      RestoreResult result =
          RestoreResult.newBuilder()
              .setCheckpointId(restored)
              .setTaskId(options.taskIds().get(0))
              .setOk(failure == null)
              .setReason(failure == null ? "" : Limits.cut(failure, Limits.MAX_RESTORE_REASON_CHARS))
              .build();
      sendOnSession(WorkerMessage.newBuilder().setRestoreResult(result).build());
    }
    if (failure == null && welcome.restore().commitPending()) {
      // onWelcome restored the tasks; the restore point's commit follows (not after a failed
      // restore: the state it would commit did not load).
      commit(restored, true);
    }
  }

  /**
   * The commit phase of {@code checkpointId}, once the handler before it (onComplete or onWelcome)
   * ran: onCommit, then with autoCommit {@code committed} for every task of this worker, unless a
   * handler threw ({@code returned} false, or onCommit now): the commit may not have happened, and
   * saying otherwise would let the daemon mark it COMMITTED.
   */
  private void commit(long checkpointId, boolean returned) {
    boolean committed = call(h -> h.onCommit(checkpointId));
    if (!options.autoCommit()) {
      return;
    }
    if (!returned || !committed) {
      LOG.log(
          Level.WARNING,
          "{0}/{1}: no committed sent for checkpoint {2}: a handler of its commit threw",
          options.jobId(), options.pipelineId(), Long.toString(checkpointId));
      return;
    }
    for (String task : options.taskIds()) {
      sendOnSession(committedMessage(checkpointId, task));
    }
  }

  /** Epoch 0 (a daemon with the embedded store) is never stale; others must not go back. */
  private static boolean isCurrent(long epoch, long newest) {
    return epoch == 0 || epoch >= newest;
  }

  /** Abort, complete, release and all_committed belong to their stream's welcome, and its epoch. */
  private boolean staleStream(WorkerStream s) {
    synchronized (lock) {
      if (!s.welcomed || !isCurrent(s.epoch, maxEpoch)) {
        staleMessages++;
        return true;
      }
      return false;
    }
  }

  /** Runs a handler; false when it threw (logged). */
  private boolean call(Consumer<Handler> event) {
    return callForFailure(event) == null;
  }

  /** Null when the handler returned; otherwise what it threw (logged too). */
  private String callForFailure(Consumer<Handler> event) {
    String failure = null;
    try {
      event.accept(handler);
    } catch (VirtualMachineError e) {
      throw e; // out of memory, say: run() ends the worker and reports it
    } catch (Throwable e) {
      // A handler's bug must not end the stream thread: nor an AssertionError (a test's assert)
      // or a checked exception thrown past javac (Kotlin, sneaky throws).
      LOG.log(Level.ERROR, "a handler of " + options.jobId() + "/" + options.pipelineId() + " threw", e);
      failure = e.getMessage() != null ? e.getMessage() : e.getClass().getName();
    }
    if (Thread.interrupted()) {
      // A handler that restored an interrupt it caught would make the next take() or backoff
      // wait throw, and the worker end without a word.
      LOG.log(Level.WARNING, "a handler of {0}/{1} left the stream thread interrupted; cleared",
          options.jobId(), options.pipelineId());
    }
    return failure;
  }

  // ---- sends and heartbeats ---------------------------------------------------------------------

  private void sendOnSession(WorkerMessage message) {
    synchronized (lock) {
      WorkerStream s = stream;
      if (s == null || !s.welcomed || s.goodbyeSent || s.closed) {
        droppedSends++;
        return;
      }
      s.send(message);
    }
  }

  /** A periodic task that throws is never run again: the lease would then expire unnoticed. */
  private void heartbeatSafely(WorkerStream s) {
    try {
      sendHeartbeat(s);
    } catch (RuntimeException e) {
      LOG.log(Level.ERROR, "a heartbeat of " + options.jobId() + "/" + options.pipelineId() + " failed", e);
    }
  }

  private void sendHeartbeat(WorkerStream s) {
    synchronized (lock) {
      if (stream != s || s.goodbyeSent || s.closed) {
        return;
      }
      heartbeatsSent++;
      Set<String> which = heartbeatsSent % FULL_POSITIONS_EVERY == 0 ? positions.keySet() : changed;
      Heartbeat.Builder hb = Heartbeat.newBuilder();
      for (String task : which) {
        Long position = positions.get(task);
        if (position != null && !mayGoBack.contains(task)) {
          hb.putPositions(task, position);
        }
      }
      changed = new HashSet<>();
      hb.setBacklog(backlog);
      s.send(WorkerMessage.newBuilder().setHeartbeat(hb).build());
    }
  }

  /** Caller holds lock. */
  private void stopHeartbeats() {
    if (heartbeat != null) {
      heartbeat.cancel(false);
      heartbeat = null;
    }
  }

  private void joinUninterruptibly() {
    boolean interrupted = false;
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
