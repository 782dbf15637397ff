package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;

/** What WorkerOptions and the PipelineWorker constructor refuse, and the defaults. */
public class WorkerOptionsTest {
  private static WorkerOptions.Builder valid() {
    return WorkerOptions.builder().server("127.0.0.1:7070").workerId("w1").jobId("job")
        .pipelineId("p").taskIds(List.of("0"));
  }

  private static void assertRefused(String expected, WorkerOptions.Builder options) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, options::build);
    assertTrue(e.getMessage(), e.getMessage().contains(expected));
  }

  @Test
  public void theDefaults() {
    WorkerOptions options = valid().server("a:1,b:2").build();
    assertEquals(List.of("a:1", "b:2"), options.servers());
    assertTrue(options.takeoverOnReconnect());
    assertTrue(options.autoCommit());
    assertEquals(Duration.ofMillis(100), options.backoffInitial());
    assertEquals(Duration.ofSeconds(5), options.backoffMax());
  }

  @Test
  public void autoCommitCanBeTurnedOff() {
    assertFalse(valid().autoCommit(false).build().autoCommit());
    assertTrue(valid().autoCommit(false).autoCommit(true).build().autoCommit());
  }

  @Test
  public void everyIdIsRequired() {
    assertThrows(NullPointerException.class, () -> valid().server(null).build());
    assertThrows(NullPointerException.class, () -> valid().workerId(null).build());
    assertThrows(NullPointerException.class, () -> valid().jobId(null).build());
    assertThrows(NullPointerException.class, () -> valid().pipelineId(null).build());
  }

  @Test
  public void theTaskSet() {
    assertRefused("at least one task", valid().taskIds(null));
    assertRefused("at least one task", valid().taskIds(List.of()));
    assertRefused("named twice", valid().taskIds(List.of("0", "1", "0")));
    assertRefused("task id is empty", valid().taskIds(List.of("0", "")));
  }

  @Test
  public void theIdsAreCheckedBeforeTheDaemonRefusesThem() {
    assertRefused("workerId has a control character", valid().workerId("w\n1"));
    assertRefused("jobId may not be . or ..", valid().jobId(".."));
    assertRefused("pipelineId is empty", valid().pipelineId(""));
  }

  @Test
  public void theServerListAndTheBackoff() {
    assertRefused("is not HOST:PORT", valid().server("127.0.0.1"));
    assertRefused("backoff", valid().backoffInitial(Duration.ofSeconds(6)));
    assertRefused("backoff", valid().backoffInitial(Duration.ZERO));
  }

  @Test
  public void theTaskListIsCopied() {
    List<String> tasks = new ArrayList<>(List.of("0"));
    WorkerOptions options = valid().taskIds(tasks).build();
    tasks.add("1");
    assertEquals(List.of("0"), options.taskIds());
  }

  @Test
  public void aTokenGoesInTheClearOnlyToLoopbackAddresses() throws IOException {
    File token = File.createTempFile("token", null);
    token.deleteOnExit();
    Files.writeString(token.toPath(), "s3cret\n");
    Handler none = new Handler() {};
    WorkerOptions remote = valid().server("127.0.0.1:7070,10.0.0.2:7070").tokenFile(token).build();
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new PipelineWorker(remote, none));
    assertTrue(e.getMessage(), e.getMessage().contains("tokenFile without TLS"));
    WorkerOptions local =
        valid().server("127.0.0.1:1,localhost:2,[::1]:3").tokenFile(token).build();
    new PipelineWorker(local, none).close();
  }

  @Test
  public void tlsOptionsGoTogether() throws IOException {
    File pem = File.createTempFile("cert", ".pem");
    pem.deleteOnExit();
    Handler none = new Handler() {};
    WorkerOptions certWithoutKey = valid().clientCertificate(pem, null).build();
    assertThrows(
        IllegalArgumentException.class, () -> new PipelineWorker(certWithoutKey, none));
    WorkerOptions nameWithoutTls = valid().tlsServerName("ckptd.example").build();
    assertThrows(
        IllegalArgumentException.class, () -> new PipelineWorker(nameWithoutTls, none));
    assertThrows(NullPointerException.class, () -> new PipelineWorker(valid().build(), null));
  }
}
