"""What a worker does when its stream ends without it asking: one table (docs/PROTOCOL.md)."""
import random

import grpc

RETRY = "retry"                # exponential backoff
RETRY_SLOWLY = "retry_slowly"  # at the maximum backoff: the cause is not expected to clear soon
GIVE_UP = "give_up"            # stop for good and report

# The start of the message of a stream ended by RestorePipeline: come back for the new restore
# point at once.
RESTORED_PREFIX = "restored to checkpoint"

# Trailing metadata of a standby's UNAVAILABLE: the leader's HOST:PORT (empty: none known).
LEADER_TRAILER = "ckpt-leader"
MAX_REDIRECTS_IN_A_ROW = 3

# Once a standby has answered, or a leader was lost (StandbyPoll), retries are no further apart
# than this (jittered) for STANDBY_POLL_WINDOW_S: a takeover is due within the election TTL.
STANDBY_POLL_MAX_S = 1.0
STANDBY_POLL_WINDOW_S = 30.0


def classify(code, message):
    if code == grpc.StatusCode.ABORTED and (message or "").startswith(RESTORED_PREFIX):
        return RETRY
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED,
                grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNIMPLEMENTED):
        return GIVE_UP  # the same hello cannot succeed
    if code == grpc.StatusCode.ABORTED:
        return GIVE_UP  # another stream took our tasks over: taking them back would be a fight
    if code == grpc.StatusCode.NOT_FOUND:
        return RETRY_SLOWLY  # no such pipeline: an operator may create it later
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return RETRY_SLOWLY  # its stored record is unreadable: an operator must recreate it
    # UNAVAILABLE, DEADLINE_EXCEEDED (lease expired), ALREADY_EXISTS (our previous stream not yet
    # seen dead), CANCELLED, OK without our goodbye, anything unexpected.
    return RETRY


class Backoff:
    """Doubles from `initial` up to `maximum`; each delay jittered to [d/2, d]."""

    def __init__(self, initial, maximum):
        if initial <= 0 or maximum < initial:
            raise ValueError("backoff: need 0 < backoff_initial <= backoff_max")
        self.initial = initial
        self.maximum = maximum
        self.current = initial

    def reset(self):
        self.current = self.initial

    def next_delay(self, slowly=False):
        base = self.maximum if slowly else self.current
        self.current = min(self.current * 2, self.maximum)
        return random.uniform(base / 2, base)


class StandbyPoll:
    """When a worker retries at the standby pace rather than its backoff (the C++ SDK's
    client/sdk/standby_poll.h). A standby's answer says a takeover is under way, due within the
    election TTL; so does a leader lost by a worker that knows several daemons (a stream welcomed
    for a while that ended UNAVAILABLE), whose channel to the standby may still fail fast from
    the standby's own restart and never bring its answer. Only for `window_s` after the first
    sign since the last welcome: a group that stays without a leader is then retried at the
    normal backoff. Not thread-safe: the worker's stream thread alone uses it."""

    def __init__(self, window_s, in_group):
        self.window_s = window_s
        self.in_group = in_group
        self.answered = False  # a sign since the last welcome (or the start) ...
        self.since = 0.0       # ... first at this time (time.monotonic())

    def stream_ended(self, was_welcomed, standby_answered, leader_lost, now):
        if was_welcomed:
            self.answered = False
        sign = standby_answered or (was_welcomed and leader_lost and self.in_group)
        if sign and not self.answered:
            self.answered = True
            self.since = now

    def active(self, now):
        return self.answered and now - self.since < self.window_s
