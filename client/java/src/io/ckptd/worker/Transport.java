package io.ckptd.worker;

/** How a worker reaches the daemon (docs/PROTOCOL.md, "Worker sessions"). */
public enum Transport {
  /**
   * A channel of one WorkerService.Session call per daemon that the process's workers share, what
   * they send batched into frames; a Connect call per worker where the daemon answers Session with
   * UNIMPLEMENTED (a daemon from before sessions).
   */
  SESSION,
  /** One WorkerService.Connect call per worker. */
  CONNECT,
}
