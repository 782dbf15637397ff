"""Heartbeats and the positions they carry (docs/PROTOCOL.md, "Positions"): a heartbeat carries
the positions set since the last one, every tenth carries them all, and after a welcome a task
reports again, once even lower, before anything is sent for it."""
import unittest

import grpc

from worker_harness import WorkerTestCase

FAST_HEARTBEAT_MS = 5


def positions(heartbeat):
    return dict(heartbeat.heartbeat.positions)


class HeartbeatTest(WorkerTestCase):
    def wait_heartbeat_with(self, call, expected):
        """The first heartbeat on `call` that carries exactly `expected`."""
        return call.wait_sent_where("heartbeat", lambda m: positions(m) == expected,
                                    f"a heartbeat with {expected}")

    def heartbeats_through_marker(self, call, since, marker_task):
        """Heartbeats on `call` from number `since` through the first that carries marker_task,
        whose position the test set last: every position set before it had its heartbeat."""
        call.wait_sent_where("heartbeat", lambda m: marker_task in positions(m),
                             f"a heartbeat with task {marker_task}")
        heartbeats = call.sent("heartbeat")[since:]
        end = next(i for i, h in enumerate(heartbeats) if marker_task in positions(h))
        return heartbeats[:end + 1]

    def next_heartbeats(self, call, count):
        sent = len(call.sent("heartbeat"))
        return call.wait_sent("heartbeat", sent + count)[sent:]

    def test_a_heartbeat_carries_what_changed(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_position("0", 10)
        self.wait_heartbeat_with(call, {"0": 10})
        worker.set_position("1", 7)
        carrying = call.wait_sent_where(
            "heartbeat", lambda m: "1" in m.heartbeat.positions, "a heartbeat with task 1")
        # Only what changed; unless it is a tenth heartbeat, which carries every position.
        self.assertIn(dict(carrying.heartbeat.positions), ({"1": 7}, {"0": 10, "1": 7}))

    def test_a_lower_position_is_ignored(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_position("0", 10)
        self.wait_heartbeat_with(call, {"0": 10})
        since = len(call.sent("heartbeat"))
        worker.set_position("0", 5)
        worker.set_position("1", 1)
        for heartbeat in self.heartbeats_through_marker(call, since, "1"):
            self.assertNotEqual(positions(heartbeat).get("0"), 5)  # a full one carries 10
        worker.set_position("0", 20)
        # (Task 1's too, if that heartbeat is a tenth one.)
        call.wait_sent_where("heartbeat", lambda m: positions(m).get("0") == 20,
                             "a heartbeat with task 0 at 20")

    def test_every_tenth_heartbeat_carries_every_position(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_position("0", 10)
        self.wait_heartbeat_with(call, {"0": 10})
        later = [positions(h) for h in self.next_heartbeats(call, 10)]
        self.assertEqual(later.count({"0": 10}), 1, later)
        self.assertEqual(later.count({}), 9, later)

    def test_a_position_from_before_the_welcome_waits_for_the_next_one(self):
        worker = self.make_worker()
        worker.set_position("0", 50)
        worker.start()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        # Eleven heartbeats hold a full one: even that one says nothing of task 0 yet.
        for heartbeat in self.next_heartbeats(call, 11):
            self.assertEqual(positions(heartbeat), {})
        worker.set_position("0", 50)  # the same as before: sent all the same
        self.wait_heartbeat_with(call, {"0": 50})

    def test_after_a_reconnect_the_first_position_may_go_back_once(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_position("0", 50)
        self.wait_heartbeat_with(call, {"0": 50})
        call.finish(grpc.StatusCode.UNAVAILABLE)
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_position("0", 30)  # restored to an older checkpoint
        self.wait_heartbeat_with(call, {"0": 30})
        since = len(call.sent("heartbeat"))
        worker.set_position("0", 20)
        worker.set_position("1", 1)
        for heartbeat in self.heartbeats_through_marker(call, since, "1"):
            self.assertNotEqual(positions(heartbeat).get("0"), 20)


if __name__ == "__main__":
    unittest.main()


class BacklogTest(WorkerTestCase):
    """set_backlog (docs/PROTOCOL.md, "Adaptive interval"): said at once and in every heartbeat,
    and again on the next stream after a reconnect (the daemon forgets a stream's backlog)."""

    def test_the_backlog_goes_out_at_once_rides_on_heartbeats_and_is_said_again(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=60_000)  # no periodic heartbeat meanwhile
        worker.set_backlog(True)
        said = call.wait_sent_where("heartbeat", lambda m: m.heartbeat.backlog,
                                    "a heartbeat saying backlog")
        self.assertTrue(said.heartbeat.backlog)
        worker.set_backlog(True)  # no change: nothing more
        worker.set_backlog(False)
        call.wait_sent_where("heartbeat", lambda m: not m.heartbeat.backlog,
                             "a heartbeat saying caught up")
        self.assertEqual(len(call.sent("heartbeat")), 2, call.sent("heartbeat"))

        worker.set_backlog(True)
        call.wait_sent("heartbeat", 3)
        call.finish(grpc.StatusCode.UNAVAILABLE, "daemon restarting")
        again = self.welcome_next_call(heartbeat_ms=60_000)
        again.wait_sent_where("heartbeat", lambda m: m.heartbeat.backlog,
                              "the backlog said again on the new stream")

    def test_periodic_heartbeats_carry_the_backlog(self):
        worker = self.start_worker()
        call = self.welcome_next_call(heartbeat_ms=FAST_HEARTBEAT_MS)
        worker.set_backlog(True)
        sent = len(call.sent("heartbeat"))
        later = call.wait_sent("heartbeat", sent + 3)[sent:]
        self.assertTrue(all(h.heartbeat.backlog for h in later), later)
