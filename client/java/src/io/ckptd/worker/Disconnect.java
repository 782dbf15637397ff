package io.ckptd.worker;

import io.grpc.Status;
import java.time.Duration;

/**
 * Why a stream ended when the worker did not end it, and what happens next.
 *
 * @param code the stream's status code
 * @param message its message
 * @param wasConnected a welcome had arrived on the stream that ended
 * @param willRetry false: the worker stopped for good
 * @param retryIn how long the worker waits before it connects again
 * @param leader the leader a standby named, which the worker connects to next; null if none
 */
public record Disconnect(
    Status.Code code,
    String message,
    boolean wasConnected,
    boolean willRetry,
    Duration retryIn,
    String leader) {}
