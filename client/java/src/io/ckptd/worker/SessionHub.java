package io.ckptd.worker;

import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.MetadataUtils;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Session calls of this process: one per daemon address, credentials and bearer token, shared
 * by every worker that reaches that daemon so (docs/PROTOCOL.md, "Worker sessions"), and the
 * addresses whose daemon has no Session (a Connect call per worker there).
 *
 * <p>Thread-safe (synchronized). A call's channels hold the gRPC channel its hub made; the hub's
 * gRPC channels live as long as the process, one per key.
 */
final class SessionHub {
  static final SessionHub INSTANCE = new SessionHub();

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final Map<List<Object>, SessionCall> calls = new HashMap<>();
  private final Map<List<Object>, Channels> channels = new HashMap<>();
  private final Set<String> connectOnly = new HashSet<>();

  synchronized boolean connectOnly(String target) {
    return connectOnly.contains(target);
  }

  /**
   * The daemon at {@code target} answered Session with UNIMPLEMENTED: Connect from now on. True
   * the first time {@code target} is named.
   */
  synchronized boolean sessionUnsupported(String target) {
    return connectOnly.add(target);
  }

  /**
   * A channel with {@code hello} queued on the shared call to {@code target} with the credentials
   * of {@code credentials} and {@code bearer} (null: none).
   */
  WorkerStream open(String target, Channels credentials, String bearer, WorkerMessage hello) {
    List<Object> key = List.of(target, credentials.identity(), bearer == null ? "" : bearer);
    // A call found used up (its last channel just went) is replaced: twice at most.
    for (int tries = 0; tries < 2; tries++) {
      SessionCall call;
      synchronized (this) {
        call = calls.get(key);
        if (call == null || !call.usable()) {
          Channels shared = channels.computeIfAbsent(key, k -> credentials.sameCredentials());
          WorkerServiceGrpc.WorkerServiceStub stub = WorkerServiceGrpc.newStub(shared.get(target));
          if (bearer != null) {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, "Bearer " + bearer);
            stub = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
          }
          call = new SessionCall(stub, ended -> forget(key, ended));
          calls.put(key, call);
        }
      }
      WorkerStream channel = call.open(hello);
      if (channel != null) {
        return channel;
      }
    }
    ConnectStream busy = new ConnectStream(); // never started: it only ends
    busy.arrivals.add(
        new WorkerStream.End(
            Status.UNAVAILABLE.withDescription("no Session call took the channel; retrying"),
            new Metadata()));
    return busy;
  }

  private synchronized void forget(List<Object> key, SessionCall ended) {
    if (calls.get(key) == ended) {
      calls.remove(key);
    }
  }
}
