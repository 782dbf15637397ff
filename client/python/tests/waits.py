"""Waiting for a worker's threads: on a condition, with a deadline, never a bare sleep."""
import time

# Generous, since a loaded machine may be slow; a passing test never waits that long.
WAIT_S = 10.0


def wait_until(condition, predicate, what, timeout=WAIT_S):
    """Waits on `condition` (held by the caller, notified whenever what predicate() reads
    changes) until predicate() is true; AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        condition.wait(left)
