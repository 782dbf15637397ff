package io.ckptd.worker;

import io.ckptd.v1.WorkerServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.util.concurrent.TimeUnit;

/** A channel to one target whose calls the FakeTransport makes: nothing goes on a network. */
final class FakeChannel extends ManagedChannel {
  private final String target;
  private final FakeTransport transport;
  private volatile boolean shutdown;

  FakeChannel(String target, FakeTransport transport) {
    this.target = target;
    this.transport = transport;
  }

  @Override
  @SuppressWarnings("unchecked") // the one method a worker calls: checked below
  public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions options) {
    String connect = WorkerServiceGrpc.getConnectMethod().getFullMethodName();
    if (!method.getFullMethodName().equals(connect)) {
      throw new AssertionError("a worker calls Connect only, not " + method.getFullMethodName());
    }
    return (ClientCall<ReqT, RespT>) transport.connect(target);
  }

  @Override
  public String authority() {
    return target;
  }

  @Override
  public ManagedChannel shutdown() {
    shutdown = true;
    return this;
  }

  @Override
  public ManagedChannel shutdownNow() {
    return shutdown();
  }

  @Override
  public boolean isShutdown() {
    return shutdown;
  }

  @Override
  public boolean isTerminated() {
    return shutdown;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return shutdown;
  }
}
