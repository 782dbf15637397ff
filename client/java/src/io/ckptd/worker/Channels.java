package io.ckptd.worker;

import io.grpc.ManagedChannel;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import javax.net.ssl.SSLException;

/**
 * One gRPC channel per daemon address, made on first use, plaintext or TLS.
 *
 * <p>Thread-safe (synchronized): the stream thread gets channels, {@code close} may come from any
 * thread.
 */
final class Channels {
  /** A wide pipeline's welcome (its restore point) can pass gRPC's 4 MiB default. */
  static final int MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

  private final SslContext ssl; // null: plaintext
  private final String serverNameOverride;
  private final Function<String, ManagedChannel> opener; // null: Netty's, as set up here
  private final List<Object> identity; // what the credentials come from
  private final File caFile, certFile, keyFile;
  private final Map<String, ManagedChannel> channels = new HashMap<>();
  private boolean closed;

  /**
   * Plaintext channels that {@code opener} makes instead of Netty: the unit tests' fake transport,
   * which lets them drive a worker's streams without a daemon.
   */
  Channels(Function<String, ManagedChannel> opener) {
    this.ssl = null;
    this.serverNameOverride = null;
    this.opener = Objects.requireNonNull(opener, "opener");
    this.identity = List.of(opener);
    this.caFile = this.certFile = this.keyFile = null;
  }

  Channels(File caFile, File certFile, File keyFile, String serverNameOverride) {
    this.opener = null;
    this.caFile = caFile;
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.identity =
        java.util.Arrays.asList(
            "tls", String.valueOf(caFile), String.valueOf(certFile), String.valueOf(keyFile),
            String.valueOf(serverNameOverride));
    if ((certFile == null) != (keyFile == null)) {
      throw new IllegalArgumentException("certFile and keyFile go together");
    }
    boolean tls = caFile != null || certFile != null;
    if (serverNameOverride != null && !tls) {
      throw new IllegalArgumentException("tlsServerName needs TLS (caFile, or certFile and keyFile)");
    }
    this.serverNameOverride = serverNameOverride;
    if (!tls) {
      ssl = null;
      return;
    }
    try {
      SslContextBuilder b = GrpcSslContexts.forClient();
      if (caFile != null) {
        b.trustManager(caFile); // else: the JDK's default trust store
      }
      if (certFile != null) {
        b.keyManager(certFile, keyFile); // the key as unencrypted PKCS#8 PEM
      }
      ssl = b.build();
    } catch (SSLException | IllegalArgumentException e) {
      throw new IllegalArgumentException("TLS credentials: " + e.getMessage(), e);
    } catch (UnsupportedOperationException e) {
      // A Netty without ALPN for the JDK provider (Debian's libnetty-java strips it) and no
      // netty-tcnative: gRPC cannot use TLS at all. Said here, not as an unexpected exception.
      throw new IllegalArgumentException("TLS: this Netty cannot negotiate ALPN, which gRPC "
          + "needs (" + e.getMessage() + "); put netty-tcnative on the class path", e);
    }
  }

  boolean tls() {
    return ssl != null;
  }

  /** What these channels' credentials come from: equal for channels that may share a call. */
  List<Object> identity() {
    return identity;
  }

  /** New channels with the same credentials (for the process's shared Session calls). */
  Channels sameCredentials() {
    return opener != null
        ? new Channels(opener)
        : new Channels(caFile, certFile, keyFile, serverNameOverride);
  }

  synchronized ManagedChannel get(String target) {
    if (closed) {
      throw new IllegalStateException("channels closed");
    }
    return channels.computeIfAbsent(target, opener != null ? opener : this::open);
  }

  private ManagedChannel open(String target) {
    NettyChannelBuilder b =
        NettyChannelBuilder.forTarget(target).maxInboundMessageSize(MAX_MESSAGE_BYTES);
    if (ssl == null) {
      b.usePlaintext();
    } else {
      b.sslContext(ssl);
      if (serverNameOverride != null) {
        b.overrideAuthority(serverNameOverride);
      }
    }
    return b.build();
  }

  /** Shuts every channel down without waiting; none is made afterwards. */
  void shutdown() {
    for (ManagedChannel c : takeAll()) {
      c.shutdownNow();
    }
  }

  /** Shuts every channel down, waiting a moment for each. */
  void close() {
    List<ManagedChannel> open = takeAll();
    // All shut down before any wait: an interrupted wait must not leave the rest open.
    for (ManagedChannel c : open) {
      c.shutdownNow();
    }
    for (ManagedChannel c : open) {
      try {
        c.awaitTermination(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private synchronized List<ManagedChannel> takeAll() {
    closed = true;
    List<ManagedChannel> open = new ArrayList<>(channels.values());
    channels.clear();
    return open;
  }
}
