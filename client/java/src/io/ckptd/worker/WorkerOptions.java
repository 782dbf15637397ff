package io.ckptd.worker;

import java.io.File;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link PipelineWorker} serves and how it reaches the daemon. Immutable; made with
 * {@link #builder()}.
 *
 * <pre>{@code
 * WorkerOptions options = WorkerOptions.builder()
 *     .server("127.0.0.1:7070")           // or an HA group: "a:7070,b:7070,c:7070"
 *     .workerId("w1").jobId("etl").pipelineId("p0")
 *     .taskIds(List.of("0", "1"))
 *     .build();
 * }</pre>
 */
public final class WorkerOptions {
  private final List<String> servers;
  private final String workerId;
  private final String jobId;
  private final String pipelineId;
  private final List<String> taskIds;
  private final boolean takeoverOnReconnect;
  private final boolean autoCommit;
  private final Transport transport;
  private final Duration backoffInitial;
  private final Duration backoffMax;
  private final File caFile;
  private final File certFile;
  private final File keyFile;
  private final File tokenFile;
  private final String tlsServerName;

  private WorkerOptions(Builder b) {
    servers = ServerList.parse(Objects.requireNonNull(b.server, "server"));
    workerId = Objects.requireNonNull(b.workerId, "workerId");
    jobId = Objects.requireNonNull(b.jobId, "jobId");
    pipelineId = Objects.requireNonNull(b.pipelineId, "pipelineId");
    if (b.taskIds == null || b.taskIds.isEmpty()) {
      throw new IllegalArgumentException("taskIds: a worker serves at least one task");
    }
    taskIds = List.copyOf(b.taskIds);
    if (new LinkedHashSet<>(taskIds).size() != taskIds.size()) {
      throw new IllegalArgumentException("taskIds: a task is named twice");
    }
    // Here rather than as the daemon's INVALID_ARGUMENT, which would stop the worker after start.
    Limits.checkId(workerId, "workerId");
    Limits.checkId(jobId, "jobId");
    Limits.checkId(pipelineId, "pipelineId");
    for (String task : taskIds) {
      Limits.checkId(task, "task id");
    }
    takeoverOnReconnect = b.takeoverOnReconnect;
    autoCommit = b.autoCommit;
    transport = b.transport;
    backoffInitial = b.backoffInitial;
    backoffMax = b.backoffMax;
    new Backoff(backoffInitial, backoffMax); // checks them
    caFile = b.caFile;
    certFile = b.certFile;
    keyFile = b.keyFile;
    tokenFile = b.tokenFile;
    tlsServerName = b.tlsServerName;
  }

  /**
   * A builder with the defaults: takeover on reconnect, backoff from 100 ms to 5 s, committed sent
   * by the worker (autoCommit), plaintext.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** The daemons, in the order they are tried. */
  public List<String> servers() {
    return servers;
  }

  public String workerId() {
    return workerId;
  }

  public String jobId() {
    return jobId;
  }

  public String pipelineId() {
    return pipelineId;
  }

  /** The tasks every hello registers. */
  public List<String> taskIds() {
    return taskIds;
  }

  public boolean takeoverOnReconnect() {
    return takeoverOnReconnect;
  }

  /**
   * With a commit phase: whether the worker sends {@code committed} for every task once the
   * handlers of a commit returned (see {@link Handler#onCommit}); false: the application calls
   * {@link PipelineWorker#committed} itself.
   */
  /** How the worker reaches the daemon (default {@link Transport#SESSION}). */
  public Transport transport() {
    return transport;
  }

  public boolean autoCommit() {
    return autoCommit;
  }

  public Duration backoffInitial() {
    return backoffInitial;
  }

  public Duration backoffMax() {
    return backoffMax;
  }

  File caFile() {
    return caFile;
  }

  File certFile() {
    return certFile;
  }

  File keyFile() {
    return keyFile;
  }

  File tokenFile() {
    return tokenFile;
  }

  String tlsServerName() {
    return tlsServerName;
  }

  /** Collects the options; {@link #build()} checks them. Not thread-safe. */
  public static final class Builder {
    private String server;
    private String workerId;
    private String jobId;
    private String pipelineId;
    private List<String> taskIds;
    private boolean takeoverOnReconnect = true;
    private boolean autoCommit = true;
    private Transport transport = Transport.SESSION;
    private Duration backoffInitial = Duration.ofMillis(100);
    private Duration backoffMax = Duration.ofSeconds(5);
    private File caFile;
    private File certFile;
    private File keyFile;
    private File tokenFile;
    private String tlsServerName;

    private Builder() {}

    /** "host:port", or the daemons of an HA group as "a:port,b:port" (the leader is followed). */
    public Builder server(String server) {
      this.server = server;
      return this;
    }

    /** This process's name in the daemon's logs and in takeover messages. */
    public Builder workerId(String workerId) {
      this.workerId = workerId;
      return this;
    }

    public Builder jobId(String jobId) {
      this.jobId = jobId;
      return this;
    }

    public Builder pipelineId(String pipelineId) {
      this.pipelineId = pipelineId;
      return this;
    }

    /** The tasks of the pipeline this worker runs (at least one, each once). */
    public Builder taskIds(List<String> taskIds) {
      this.taskIds = taskIds;
      return this;
    }

    /**
     * Whether every hello after the first asks for takeover (default true): a live stream holding
     * our tasks is most likely our own previous one, not yet seen dead by the daemon.
     */
    public Builder takeoverOnReconnect(boolean takeoverOnReconnect) {
      this.takeoverOnReconnect = takeoverOnReconnect;
      return this;
    }

    /**
     * A pipeline with a commit phase (docs/PROTOCOL.md, "Commit phase"): whether the worker sends
     * {@code committed} for every task of its own once {@link Handler#onCommit} (and the {@code
     * onComplete} or {@code onWelcome} before it) returned without throwing (default true). False
     * for an asynchronous commit: call {@link PipelineWorker#committed} per task once its commit
     * is done.
     */
    public Builder autoCommit(boolean autoCommit) {
      this.autoCommit = autoCommit;
      return this;
    }

    /**
     * {@link Transport#SESSION} (the default): this worker's stream is a channel of a Session call
     * shared by every worker of the process with the same daemon and credentials, what they send
     * meanwhile batched into frames; Connect instead where the daemon has no Session.
     * {@link Transport#CONNECT}: a Connect call of its own.
     */
    public Builder transport(Transport transport) {
      this.transport = Objects.requireNonNull(transport);
      return this;
    }

    /** The first reconnect delay (default 100 ms); it doubles up to {@link #backoffMax}. */
    public Builder backoffInitial(Duration backoffInitial) {
      this.backoffInitial = Objects.requireNonNull(backoffInitial);
      return this;
    }

    /**
     * The largest reconnect delay (default 5 s); also the delay after NOT_FOUND and
     * FAILED_PRECONDITION (an unreadable pipeline).
     */
    public Builder backoffMax(Duration backoffMax) {
      this.backoffMax = Objects.requireNonNull(backoffMax);
      return this;
    }

    /** TLS: the CA certificates (PEM) that sign the daemon's certificate. */
    public Builder caFile(File caFile) {
      this.caFile = caFile;
      return this;
    }

    /** Mutual TLS: this worker's certificate chain and key (PEM; the key unencrypted PKCS#8). */
    public Builder clientCertificate(File certFile, File keyFile) {
      this.certFile = certFile;
      this.keyFile = keyFile;
      return this;
    }

    /**
     * A file holding a bearer token, sent as "authorization: Bearer ..." and read again when the
     * file changes. Without TLS it is sent only to loopback addresses.
     */
    public Builder tokenFile(File tokenFile) {
      this.tokenFile = tokenFile;
      return this;
    }

    /** TLS: the name to check the daemon's certificate against, instead of the address's host. */
    public Builder tlsServerName(String tlsServerName) {
      this.tlsServerName = tlsServerName;
      return this;
    }

    /**
     * The options; IllegalArgumentException or NullPointerException naming what is wrong (an id
     * empty, with a control character, or "." or "..", say).
     */
    public WorkerOptions build() {
      return new WorkerOptions(this);
    }
  }
}
