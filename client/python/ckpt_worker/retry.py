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
