package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;

import io.ckptd.v1.CoordinatorMessage;
import io.ckptd.v1.Goodbye;
import io.ckptd.v1.Hello;
import io.ckptd.v1.WorkerMessage;
import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.List;
import org.junit.Before;
import org.junit.Test;

/** One Connect call: what arrives goes on a queue, sends stop at the call's end. */
public class ConnectStreamTest {
  private static final WorkerMessage HELLO =
      WorkerMessage.newBuilder().setHello(Hello.newBuilder().setWorkerId("w1")).build();
  private static final WorkerMessage GOODBYE =
      WorkerMessage.newBuilder().setGoodbye(Goodbye.getDefaultInstance()).build();

  private final FakeTransport transport = new FakeTransport();
  private final ConnectStream stream = new ConnectStream();
  private FakeCall call;

  @Before
  public void startTheCall() {
    stream.start(WorkerServiceGrpc.newStub(transport.channels().get("127.0.0.1:7070")), HELLO);
    call = transport.nextCall();
  }

  @Test
  public void theHelloGoesFirst() {
    assertEquals(List.of(HELLO), call.sent());
  }

  @Test
  public void messagesArriveInOrderThenTheEnd() throws InterruptedException {
    CoordinatorMessage welcome = Messages.welcome(0);
    CoordinatorMessage trigger = Messages.trigger(1, 0, 0);
    call.reply(welcome);
    call.reply(trigger);
    call.finish(Status.Code.OK, null);
    assertSame(welcome, stream.take());
    assertSame(trigger, stream.take());
    ConnectStream.End end = (ConnectStream.End) stream.take();
    assertEquals(Status.Code.OK, end.status().getCode());
  }

  @Test
  public void anErrorsEndKeepsItsTrailers() throws InterruptedException {
    Metadata trailers = new Metadata();
    Metadata.Key<String> leader = Metadata.Key.of("ckpt-leader", Metadata.ASCII_STRING_MARSHALLER);
    trailers.put(leader, "127.0.0.1:7071");
    call.finish(Status.UNAVAILABLE.withDescription("a standby"), trailers);
    ConnectStream.End end = (ConnectStream.End) stream.take();
    assertEquals(Status.Code.UNAVAILABLE, end.status().getCode());
    assertEquals("a standby", end.status().getDescription());
    assertEquals("127.0.0.1:7071", end.trailers().get(leader));
  }

  @Test
  public void aCancelEndsTheCallAndLaterSendsAreDropped() throws InterruptedException {
    stream.cancel("worker stopped");
    stream.cancel("twice");
    assertEquals("worker stopped", call.cancelledWith());
    assertEquals(Status.Code.CANCELLED, ((ConnectStream.End) stream.take()).status().getCode());
    stream.send(GOODBYE);
    stream.halfClose();
    assertEquals(List.of(HELLO), call.sent());
    assertEquals(0, call.halfCloses());
  }

  @Test
  public void aHalfCloseHappensOnceAndEndsTheSends() {
    stream.send(GOODBYE);
    stream.halfClose();
    stream.halfClose();
    stream.send(GOODBYE);
    assertEquals(List.of(HELLO, GOODBYE), call.sent());
    assertEquals(1, call.halfCloses());
    assertNull(call.cancelledWith());
  }
}
