package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.ckptd.v1.ChannelEnd;
import io.ckptd.v1.CoordinatorEnvelope;
import io.ckptd.v1.CoordinatorFrame;
import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.WorkerEnvelope;
import io.ckptd.v1.WorkerFrame;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.Timeout;

/**
 * The Session transport against small gRPC servers of the test's own on loopback: the workers of a
 * process share one call, a channel each; a channel's end reaches its worker alone; a daemon from
 * before Session (Connect only) gets a Connect call per worker.
 */
public class SessionTransportTest {
  @Rule public final Timeout perTest = Timeout.seconds(60);

  private final List<Server> servers = new ArrayList<>();
  private final List<PipelineWorker> workers = new ArrayList<>();

  @After
  public void stop() {
    for (PipelineWorker w : workers) {
      w.close();
    }
    for (Server s : servers) {
      s.shutdownNow();
    }
  }

  private String serve(BindableService service) throws IOException {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(service)
            .build()
            .start();
    servers.add(server);
    return "127.0.0.1:" + server.getPort();
  }

  private PipelineWorker start(String server, String pipeline, Handler handler) {
    WorkerOptions options =
        WorkerOptions.builder()
            .server(server)
            .workerId("w")
            .jobId("job")
            .pipelineId(pipeline)
            .taskIds(List.of("0"))
            .backoffInitial(Duration.ofMillis(10))
            .backoffMax(Duration.ofMillis(50))
            .build();
    PipelineWorker worker = new PipelineWorker(options, handler);
    workers.add(worker);
    worker.start();
    return worker;
  }

  private static CoordinatorMessage welcome() {
    return CoordinatorMessage.newBuilder()
        .setWelcome(io.ckptd.v1.Welcome.newBuilder().setSessionId("1"))
        .build();
  }

  /** Session only: welcomes each channel's hello; ends pipeline "refused" NOT_FOUND. */
  private static final class SessionOnly extends WorkerServiceGrpc.WorkerServiceImplBase {
    final AtomicInteger calls = new AtomicInteger();
    final Set<Integer> channels = new HashSet<>();

    @Override
    public StreamObserver<WorkerFrame> session(StreamObserver<CoordinatorFrame> out) {
      calls.incrementAndGet();
      return new StreamObserver<>() {
        @Override
        public void onNext(WorkerFrame frame) {
          CoordinatorFrame.Builder reply = CoordinatorFrame.newBuilder();
          for (WorkerEnvelope e : frame.getEnvelopesList()) {
            WorkerMessage m = e.getMessage();
            if (m.hasHello()) {
              synchronized (channels) {
                channels.add(e.getChannel());
              }
              CoordinatorEnvelope.Builder b = reply.addEnvelopesBuilder().setChannel(e.getChannel());
              if (m.getHello().getPipelineId().equals("refused")) {
                b.setEnd(
                    ChannelEnd.newBuilder()
                        .setCode(Status.Code.NOT_FOUND.value())
                        .setMessage("no pipeline"));
              } else {
                b.setMessage(welcome());
              }
            }
          }
          if (reply.getEnvelopesCount() > 0) {
            synchronized (out) {
              out.onNext(reply.build());
            }
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  /** A daemon from before Session: Connect welcomes each hello; Session is UNIMPLEMENTED. */
  private static final class ConnectOnly extends WorkerServiceGrpc.WorkerServiceImplBase {
    final AtomicInteger connects = new AtomicInteger();

    @Override
    public StreamObserver<WorkerMessage> connect(StreamObserver<CoordinatorMessage> out) {
      connects.incrementAndGet();
      return new StreamObserver<>() {
        @Override
        public void onNext(WorkerMessage m) {
          if (m.hasHello()) {
            out.onNext(welcome());
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  private static Handler countingWelcomes(CountDownLatch welcomed) {
    return new Handler() {
      @Override
      public void onWelcome(Welcome welcome) {
        welcomed.countDown();
      }
    };
  }

  @Test
  public void theWorkersOfAProcessShareOneCall() throws Exception {
    SessionOnly daemon = new SessionOnly();
    String server = serve(daemon);
    CountDownLatch welcomed = new CountDownLatch(5);
    for (int i = 0; i < 5; i++) {
      start(server, "p" + i, countingWelcomes(welcomed));
    }
    assertTrue("every worker welcomed", welcomed.await(10, TimeUnit.SECONDS));
    assertEquals(1, daemon.calls.get());
    synchronized (daemon.channels) {
      assertEquals("a channel each", 5, daemon.channels.size());
    }
  }

  @Test
  public void aChannelsEndReachesItsWorkerAlone() throws Exception {
    String server = serve(new SessionOnly());
    CountDownLatch welcomed = new CountDownLatch(1);
    PipelineWorker kept = start(server, "kept", countingWelcomes(welcomed));
    assertTrue(welcomed.await(10, TimeUnit.SECONDS));
    CountDownLatch refused = new CountDownLatch(1);
    List<Disconnect> ends = new ArrayList<>();
    start(
        server,
        "refused",
        new Handler() {
          @Override
          public void onDisconnected(Disconnect d) {
            synchronized (ends) {
              ends.add(d);
            }
            refused.countDown();
          }
        });
    assertTrue(refused.await(10, TimeUnit.SECONDS));
    synchronized (ends) {
      assertEquals(Status.Code.NOT_FOUND, ends.get(0).code());
      assertEquals("no pipeline", ends.get(0).message());
    }
    assertTrue("the other channel goes on", kept.isConnected());
  }

  @Test
  public void aDaemonWithoutSessionGetsAConnectCallPerWorker() throws Exception {
    ConnectOnly daemon = new ConnectOnly();
    String server = serve(daemon);
    CountDownLatch welcomed = new CountDownLatch(2);
    start(server, "p0", countingWelcomes(welcomed));
    start(server, "p1", countingWelcomes(welcomed));
    assertTrue("welcomed over Connect", welcomed.await(10, TimeUnit.SECONDS));
    assertEquals(2, daemon.connects.get());
  }
}
