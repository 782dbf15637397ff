package io.ckptd.worker;

import static org.junit.Assert.assertEquals;

import io.grpc.Metadata;
import io.grpc.Status;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.junit.Before;
import org.junit.Test;

/** The bearer token on every call, and the leaders it may not go to (docs/SECURITY.md). */
public class PipelineWorkerTokenTest extends WorkerHarness {
  private static final String A = "127.0.0.1:7001";
  private static final String B = "127.0.0.1:7002";
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> LEADER =
      Metadata.Key.of(RetryPolicy.LEADER_TRAILER, Metadata.ASCII_STRING_MARSHALLER);

  private Path tokenFile;

  @Before
  public void writeToken() throws IOException {
    tokenFile = Files.createTempFile("token", null);
    tokenFile.toFile().deleteOnExit();
    rotate("first");
  }

  private void rotate(String token) throws IOException {
    Path next = Files.createTempFile(tokenFile.getParent(), "token", ".next");
    Files.writeString(next, token + "\n");
    Files.move(
        next, tokenFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private PipelineWorker startWithToken() {
    File file = tokenFile.toFile();
    return start(options(A + "," + B).tokenFile(file).build());
  }

  private static void finishAsStandby(FakeCall call, String leader) {
    Metadata trailers = new Metadata();
    trailers.put(LEADER, leader);
    call.finish(Status.UNAVAILABLE.withDescription("a standby"), trailers);
  }

  @Test
  public void everyCallCarriesTheFilesCurrentToken() throws IOException {
    startWithToken();
    FakeCall call = welcomeNextCall();
    assertEquals("Bearer first", call.headers().get(AUTHORIZATION));
    rotate("second");
    call.finish(Status.Code.UNAVAILABLE, "");
    assertEquals("Bearer second", transport.nextCall().headers().get(AUTHORIZATION));
  }

  @Test
  public void aLeaderElsewhereWouldSeeTheTokenInTheClearAndIsNotFollowed() {
    PipelineWorker worker = startWithToken();
    finishAsStandby(transport.nextCall(), "10.0.0.9:7070");
    assertEquals(B, transport.nextCall().target);
    assertEquals(0, worker.counters().leaderRedirects());
  }

  @Test
  public void aLoopbackLeaderIsFollowedWithTheToken() {
    startWithToken();
    finishAsStandby(transport.nextCall(), "[::1]:7003");
    FakeCall call = transport.nextCall();
    assertEquals("[::1]:7003", call.target);
    assertEquals("Bearer first", call.headers().get(AUTHORIZATION));
  }
}
