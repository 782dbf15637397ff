"""What a worker does when its stream ends: retry with takeover and backoff, move along the
server list, follow a standby's leader, or stop for good (docs/PROTOCOL.md, "How a stream ends")."""
import contextlib
import io
import os
import tempfile
import types
import unittest
from unittest import mock

import grpc

from ckpt_worker import Disconnect, retry
from ckpt_worker import worker as worker_module

import coordinator_messages as msg
from waits import WAIT_S
from worker_harness import SERVER, WorkerTestCase

Code = grpc.StatusCode
A, B = "127.0.0.1:7001", "127.0.0.1:7002"
HA_GROUP = f"{A},{B}"


def leader(address):
    """The trailing metadata of a standby that names the leader."""
    return ((retry.LEADER_TRAILER, address),)


class RetryTest(WorkerTestCase):
    def test_a_reconnect_asks_for_takeover(self):
        worker = self.start_worker()
        self.welcome_next_call().finish(Code.UNAVAILABLE, "ckptd is shutting down")
        ((disconnect,),) = self.recorder.wait_for("disconnected")
        self.assertEqual(disconnect.code, Code.UNAVAILABLE)
        self.assertEqual(disconnect.message, "ckptd is shutting down")
        self.assertTrue(disconnect.was_connected)
        self.assertTrue(disconnect.will_retry)
        self.assertIsNone(disconnect.leader)
        call = self.welcome_next_call()
        self.assertEqual(call.target, SERVER)
        self.assertTrue(call.wait_sent("hello")[0].hello.takeover)
        counters = worker.counters
        self.assertEqual((counters.attempts, counters.connects, counters.reconnects,
                          counters.disconnects), (2, 2, 1, 1))

    def test_takeover_on_reconnect_can_be_turned_off(self):
        self.start_worker(takeover_on_reconnect=False)
        self.transport.next_call().finish(Code.ALREADY_EXISTS, "task 0 is held")
        self.assertFalse(self.transport.next_call().wait_sent("hello")[0].hello.takeover)

    def test_acks_of_an_ended_stream_are_not_carried_over(self):
        worker = self.start_worker()
        call = self.welcome_next_call()
        call.reply(msg.trigger(5, position=300))
        self.recorder.wait_for("trigger")
        call.finish(Code.UNAVAILABLE)
        self.recorder.wait_for("disconnected")
        call = self.welcome_next_call()
        worker.ack(5, "0", worker_module.TaskState("u"))
        # The trigger's position belonged to the old stream: the ack falls back to 0.
        self.assertEqual(call.wait_sent("ack")[0].ack.position, 0)

    def test_a_restore_comes_back_at_once(self):
        self.start_worker()
        self.welcome_next_call().finish(Code.ABORTED, "restored to checkpoint job/p@7")
        ((disconnect,),) = self.recorder.wait_for("disconnected")
        self.assertTrue(disconnect.will_retry)
        self.assertEqual(disconnect.retry_in_s, 0.0)
        self.assertTrue(self.transport.next_call().wait_sent("hello")[0].hello.takeover)

    def test_statuses_that_cannot_succeed_stop_the_worker(self):
        for code, message in ((Code.INVALID_ARGUMENT, "bad hello"),
                              (Code.PERMISSION_DENIED, "not yours"),
                              (Code.UNAUTHENTICATED, "who are you"),
                              (Code.UNIMPLEMENTED, "not a ckptd"),
                              (Code.ABORTED, "tasks taken over by worker w2")):
            with self.subTest(code=code):
                worker = self.start_worker()
                self.welcome_next_call().finish(code, message)
                self.assertTrue(worker.wait_until_stopped(WAIT_S))
                self.assertEqual(self.recorder.of("disconnected"),
                                 [(Disconnect(code, message, True, False, 0.0),)])
                self.assertEqual(self.transport.call_count(), 1)
                self.assertFalse(worker.is_connected())


class DelaysTestCase(WorkerTestCase):
    def setUp(self):
        # Each delay at the top of its jitter range, so that the progression shows.
        patch = mock.patch.object(retry, "random",
                                  types.SimpleNamespace(uniform=lambda lo, hi: hi))
        patch.start()
        self.addCleanup(patch.stop)

    def fail_calls(self, count, code=Code.UNAVAILABLE):
        for _ in range(count):
            self.transport.next_call().finish(code)

    def delays(self):
        return [d.retry_in_s for (d,) in self.recorder.of("disconnected")]


class BackoffTest(DelaysTestCase):
    def test_delays_double_up_to_the_maximum(self):
        self.start_worker(backoff_initial=0.001, backoff_max=0.004)
        self.fail_calls(4)
        self.recorder.wait_for("disconnected", 4)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.004])

    def test_a_missing_pipeline_waits_the_maximum(self):
        self.start_worker(backoff_initial=0.001, backoff_max=0.004)
        self.fail_calls(1, Code.NOT_FOUND)
        self.recorder.wait_for("disconnected")
        self.assertEqual(self.delays(), [0.004])

    def test_a_session_that_stayed_up_starts_the_backoff_over(self):
        with mock.patch.object(worker_module, "_STABLE_SESSION_S", 0.0):
            self.start_worker(backoff_initial=0.001, backoff_max=0.004)
            self.fail_calls(3)
            self.welcome_next_call().finish(Code.UNAVAILABLE)
            self.recorder.wait_for("disconnected", 4)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.001])

    def test_a_short_session_does_not(self):
        with mock.patch.object(worker_module, "_STABLE_SESSION_S", 3600.0):
            self.start_worker(backoff_initial=0.001, backoff_max=0.004)
            self.fail_calls(2)
            self.welcome_next_call().finish(Code.UNAVAILABLE)
            self.recorder.wait_for("disconnected", 3)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004])


class StandbyPaceTest(DelaysTestCase):
    """After a standby's answer, or a leader lost in an HA group, the delays stop growing past
    the standby pace (retry.STANDBY_POLL_MAX_S, here 4 ms) for a while."""

    def setUp(self):
        super().setUp()
        patch = mock.patch.object(retry, "STANDBY_POLL_MAX_S", 0.004)
        patch.start()
        self.addCleanup(patch.stop)

    def test_without_a_sign_the_backoff_grows(self):
        self.start_worker(HA_GROUP, backoff_initial=0.001, backoff_max=1.0)
        self.fail_calls(4)
        self.recorder.wait_for("disconnected", 4)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.008])

    def test_a_standby_s_answer_caps_the_delays(self):
        self.start_worker(HA_GROUP, backoff_initial=0.001, backoff_max=1.0)
        # A standby that knows no leader yet (an empty trailer), then daemons that refuse.
        self.transport.next_call().finish(Code.UNAVAILABLE, "a standby", leader(""))
        self.fail_calls(3)
        self.recorder.wait_for("disconnected", 4)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.004])

    def test_a_leader_lost_in_a_group_caps_the_delays(self):
        with mock.patch.object(worker_module, "_STABLE_SESSION_S", 0.0):
            self.start_worker(HA_GROUP, backoff_initial=0.001, backoff_max=1.0)
            self.welcome_next_call().finish(Code.UNAVAILABLE, "socket closed")
            self.fail_calls(4)
            self.recorder.wait_for("disconnected", 5)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.004, 0.004])

    def test_a_leader_lost_by_a_worker_of_one_daemon_keeps_the_backoff(self):
        with mock.patch.object(worker_module, "_STABLE_SESSION_S", 0.0):
            self.start_worker(backoff_initial=0.001, backoff_max=1.0)
            self.welcome_next_call().finish(Code.UNAVAILABLE, "socket closed")
            self.fail_calls(4)
            self.recorder.wait_for("disconnected", 5)
        self.assertEqual(self.delays(), [0.001, 0.002, 0.004, 0.008, 0.016])


class ServerListTest(WorkerTestCase):
    def test_unavailable_moves_along_the_list(self):
        self.start_worker(HA_GROUP)
        calls = []
        for _ in range(3):
            calls.append(self.transport.next_call())
            calls[-1].finish(Code.UNAVAILABLE, "connection refused")
        self.assertEqual([c.target for c in calls], [A, B, A])

    def test_other_statuses_stay_with_the_same_daemon(self):
        self.start_worker(HA_GROUP)
        self.welcome_next_call().finish(Code.DEADLINE_EXCEEDED, "lease expired")
        self.assertEqual(self.transport.next_call().target, A)


class LeaderRedirectTest(WorkerTestCase):
    def test_a_standby_s_leader_is_followed_at_once(self):
        worker = self.start_worker(HA_GROUP)
        self.transport.next_call().finish(Code.UNAVAILABLE, "a standby", leader(B))
        call = self.transport.next_call()
        self.assertEqual(call.target, B)
        self.assertEqual(self.recorder.of("disconnected"), [
            (Disconnect(Code.UNAVAILABLE, "a standby", False, True, 0.0, B),)])
        self.assertEqual(worker.counters.leader_redirects, 1)
        # The leader was a detour: the list goes on where it was, after the first daemon.
        call.finish(Code.UNAVAILABLE, "connection refused")
        self.assertEqual(self.transport.next_call().target, B)

    def test_a_leader_outside_the_list_is_followed_too(self):
        self.start_worker(HA_GROUP)
        self.transport.next_call().finish(Code.UNAVAILABLE, "a standby", leader("127.0.0.1:7003"))
        self.assertEqual(self.transport.next_call().target, "127.0.0.1:7003")

    def test_at_most_three_redirects_in_a_row(self):
        worker = self.start_worker(HA_GROUP)
        leaders = ["127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103", "127.0.0.1:7104"]
        targets = []
        for address in leaders:
            call = self.transport.next_call()
            targets.append(call.target)
            call.finish(Code.UNAVAILABLE, "a standby", leader(address))
        # The fourth leader named is not followed: back to the list, at its next daemon.
        self.assertEqual(targets, [A] + leaders[:3])
        self.assertEqual(self.transport.next_call().target, B)
        self.assertEqual(worker.counters.leader_redirects, 3)
        self.assertIsNone(self.recorder.of("disconnected")[3][0].leader)

    def test_a_welcome_resets_the_count_of_redirects(self):
        worker = self.start_worker(HA_GROUP)
        for address in ("127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"):
            self.transport.next_call().finish(Code.UNAVAILABLE, "a standby", leader(address))
        self.welcome_next_call().finish(Code.UNAVAILABLE, "deposed", leader("127.0.0.1:7104"))
        self.assertEqual(self.transport.next_call().target, "127.0.0.1:7104")
        self.assertEqual(worker.counters.leader_redirects, 4)

    def test_what_is_not_a_redirect_is_not_followed(self):
        cases = (("the daemon itself", Code.UNAVAILABLE, leader(A), B),
                 ("no leader known", Code.UNAVAILABLE, leader(""), B),
                 ("not UNAVAILABLE", Code.DEADLINE_EXCEEDED, leader(B), A))
        for why, code, trailers, next_target in cases:
            with self.subTest(why):
                worker = self.start_worker(HA_GROUP)
                self.transport.next_call().finish(code, "", trailers)
                self.assertEqual(self.transport.next_call().target, next_target)
                self.assertEqual(worker.counters.leader_redirects, 0)
                self.assertIsNone(self.recorder.of("disconnected")[0][0].leader)


class BearerTokenTest(WorkerTestCase):
    def setUp(self):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.token_file = os.path.join(directory.name, "token")
        self.write_token("first")

    def write_token(self, token):
        with open(self.token_file + ".next", "w") as f:
            f.write(token + "\n")
        os.replace(self.token_file + ".next", self.token_file)

    def test_every_call_carries_the_file_s_current_token(self):
        self.start_worker(token_file=self.token_file)
        call = self.welcome_next_call()
        self.assertEqual(call.metadata, {"authorization": "Bearer first"})
        self.write_token("second")
        call.finish(Code.UNAVAILABLE)
        self.assertEqual(self.transport.next_call().metadata, {"authorization": "Bearer second"})

    def test_a_leader_elsewhere_would_see_the_token_in_the_clear_and_is_not_followed(self):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            worker = self.start_worker(HA_GROUP, token_file=self.token_file)
            self.transport.next_call().finish(Code.UNAVAILABLE, "a standby",
                                              leader("10.0.0.9:7070"))
            self.assertEqual(self.transport.next_call().target, B)
        self.assertIn("not following the leader 10.0.0.9:7070", stderr.getvalue())
        self.assertEqual(worker.counters.leader_redirects, 0)

    def test_a_loopback_leader_is_followed_with_the_token(self):
        self.start_worker(HA_GROUP, token_file=self.token_file)
        self.transport.next_call().finish(Code.UNAVAILABLE, "a standby", leader("[::1]:7003"))
        call = self.transport.next_call()
        self.assertEqual(call.target, "[::1]:7003")
        self.assertEqual(call.metadata, {"authorization": "Bearer first"})


if __name__ == "__main__":
    unittest.main()
