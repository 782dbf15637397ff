"""What a worker does when its stream ends (retry.classify) and how long it waits (Backoff)."""
import random
import unittest
from unittest import mock

import grpc

from ckpt_worker import retry

Code = grpc.StatusCode


class ClassifyTest(unittest.TestCase):
    """The table of docs/PROTOCOL.md, "How a stream ends, and what to do"."""

    def assert_action(self, action, code, message=""):
        with self.subTest(code=code, message=message):
            self.assertEqual(retry.classify(code, message), action)

    def test_a_hello_that_cannot_succeed_gives_up(self):
        for code in (Code.INVALID_ARGUMENT, Code.PERMISSION_DENIED, Code.UNAUTHENTICATED,
                     Code.UNIMPLEMENTED):
            self.assert_action(retry.GIVE_UP, code, "whatever the daemon said")

    def test_a_takeover_by_another_worker_gives_up(self):
        self.assert_action(retry.GIVE_UP, Code.ABORTED, "tasks taken over by worker w2")
        self.assert_action(retry.GIVE_UP, Code.ABORTED, None)
        # The restore prefix counts only at the start of the message.
        self.assert_action(retry.GIVE_UP, Code.ABORTED, "not restored to checkpoint job/p@7")

    def test_a_restore_comes_back(self):
        self.assert_action(retry.RETRY, Code.ABORTED, "restored to checkpoint job/p@7")

    def test_a_missing_pipeline_is_retried_slowly(self):
        self.assert_action(retry.RETRY_SLOWLY, Code.NOT_FOUND, "no pipeline job/p")

    def test_an_unreadable_pipeline_is_retried_slowly(self):
        # Only an operator clears it (delete and create the pipeline again): docs/PROTOCOL.md.
        self.assert_action(retry.RETRY_SLOWLY, Code.FAILED_PRECONDITION,
                           "pipeline job/p is UNREADABLE: its stored record cannot be read")

    def test_everything_else_is_retried(self):
        for code in (Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.ALREADY_EXISTS,
                     Code.CANCELLED, Code.OK, Code.RESOURCE_EXHAUSTED, Code.INTERNAL,
                     Code.UNKNOWN):
            self.assert_action(retry.RETRY, code)


class _UpperBound:
    """random's stand-in: uniform(lo, hi) is hi, and every range asked for is kept."""

    def __init__(self):
        self.ranges = []

    def uniform(self, lo, hi):
        self.ranges.append((lo, hi))
        return hi


class BackoffTest(unittest.TestCase):
    def setUp(self):
        self.random = _UpperBound()
        patch = mock.patch.object(retry, "random", self.random)
        patch.start()
        self.addCleanup(patch.stop)

    def test_needs_a_positive_initial_not_above_the_maximum(self):
        for initial, maximum in ((0, 1), (-0.1, 1), (2, 1)):
            with self.subTest(initial=initial, maximum=maximum):
                with self.assertRaises(ValueError):
                    retry.Backoff(initial, maximum)
        retry.Backoff(1, 1)  # equal is fine

    def test_doubles_up_to_the_maximum_each_jittered_down_to_half(self):
        backoff = retry.Backoff(0.1, 0.8)
        delays = [backoff.next_delay() for _ in range(6)]
        self.assertEqual(delays, [0.1, 0.2, 0.4, 0.8, 0.8, 0.8])
        self.assertEqual(self.random.ranges,
                         [(0.05, 0.1), (0.1, 0.2), (0.2, 0.4), (0.4, 0.8), (0.4, 0.8),
                          (0.4, 0.8)])

    def test_reset_starts_from_the_initial_delay_again(self):
        backoff = retry.Backoff(0.1, 0.8)
        for _ in range(3):
            backoff.next_delay()
        backoff.reset()
        self.assertEqual(backoff.next_delay(), 0.1)

    def test_slowly_waits_the_maximum_from_the_first_delay(self):
        backoff = retry.Backoff(0.1, 0.8)
        self.assertEqual(backoff.next_delay(slowly=True), 0.8)
        self.assertEqual(self.random.ranges, [(0.4, 0.8)])

    def test_real_jitter_stays_within_half_and_whole(self):
        with mock.patch.object(retry, "random", random):
            for _ in range(50):  # each delay is random: a wrong range shows in one run or another
                backoff = retry.Backoff(0.1, 0.4)
                for base in (0.1, 0.2, 0.4, 0.4):
                    delay = backoff.next_delay()
                    self.assertTrue(base / 2 <= delay <= base,
                                    f"{delay} not in [{base / 2}, {base}]")


if __name__ == "__main__":
    unittest.main()
