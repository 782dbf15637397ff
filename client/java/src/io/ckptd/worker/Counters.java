package io.ckptd.worker;

/**
 * A snapshot of the monotonic counters of one worker's connection life.
 *
 * @param attempts Connect calls started
 * @param connects welcomes received
 * @param reconnects welcomes after the first
 * @param disconnects streams that ended without the worker asking
 * @param droppedSends acks, declines, savepoint requests and committed notices dropped: no
 *     welcomed stream to take them (after a reconnect the daemon aborted that round and triggers a
 *     new one; a checkpoint still COMMITTING comes back as the welcome's commit-pending restore
 *     point)
 * @param staleMessages messages of a deposed leader, dropped
 * @param leaderRedirects times a standby's ckpt-leader was followed
 */
public record Counters(
    long attempts,
    long connects,
    long reconnects,
    long disconnects,
    long droppedSends,
    long staleMessages,
    long leaderRedirects) {}
