"""Starting and ending a PipelineWorker: goodbye, stop, and what happens before start."""
import threading
import unittest

import grpc

from ckpt_worker import TaskState

import coordinator_messages as msg
from waits import WAIT_S
from worker_harness import WorkerTestCase


def in_background(function, **kwargs):
    thread = threading.Thread(target=function, kwargs=kwargs, daemon=True)
    thread.start()
    return thread


class GoodbyeTest(WorkerTestCase):
    def test_goodbye_then_half_close_then_the_daemon_ends_the_stream(self):
        worker = self.start_worker()
        call = self.welcome_next_call()
        goodbye = in_background(worker.goodbye, timeout=WAIT_S)
        call.wait_half_closed()
        self.assertEqual(call.sent()[-1].WhichOneof("msg"), "goodbye")
        self.assertFalse(call.cancelled)
        self.assertFalse(worker.is_stopped())  # goodbye waits for the daemon's answer
        call.finish(grpc.StatusCode.OK)
        goodbye.join(WAIT_S)
        self.assertFalse(goodbye.is_alive())
        self.assertTrue(worker.is_stopped())
        self.assertEqual(self.recorder.of("disconnected"), [])
        self.assertEqual(self.transport.call_count(), 1)
        self.assertEqual(worker.counters.disconnects, 0)

    def test_sends_after_goodbye_are_dropped(self):
        worker = self.start_worker()
        call = self.welcome_next_call()
        in_background(worker.goodbye, timeout=WAIT_S)
        call.wait_half_closed()
        worker.ack(1, "0", TaskState("u"))
        self.assertEqual(worker.counters.dropped_sends, 1)
        self.assertEqual(call.sent("ack"), [])

    def test_a_daemon_that_does_not_answer_is_cancelled_after_the_timeout(self):
        worker = self.start_worker()
        call = self.welcome_next_call()
        worker.goodbye(timeout=0.05)  # the fake daemon never ends the stream
        self.assertTrue(call.cancelled)
        self.assertTrue(worker.is_stopped())
        self.assertEqual(len(call.sent("goodbye")), 1)

    def test_before_the_welcome_there_is_nobody_to_say_goodbye_to(self):
        worker = self.start_worker()
        call = self.transport.next_call()
        call.wait_sent("hello")
        worker.goodbye(timeout=WAIT_S)
        self.assertTrue(call.cancelled)
        self.assertTrue(worker.is_stopped())
        self.assertEqual(call.sent("goodbye"), [])
        self.assertEqual(self.transport.call_count(), 1)

    def test_a_handler_may_say_goodbye(self):
        worker = None

        def on_complete(checkpoint_id, kind):
            worker.goodbye(timeout=WAIT_S)  # on the stream thread: returns without waiting

        worker = self.start_worker(on_complete=on_complete)
        call = self.welcome_next_call()
        call.reply(msg.complete(3))
        call.wait_half_closed()
        self.assertEqual(call.sent()[-1].WhichOneof("msg"), "goodbye")
        call.finish(grpc.StatusCode.OK)
        self.assertTrue(worker.wait_until_stopped(WAIT_S))
        self.assertEqual(self.transport.call_count(), 1)


class StopTest(WorkerTestCase):
    def test_stop_cancels_the_stream_and_never_reconnects(self):
        worker = self.start_worker()
        call = self.welcome_next_call()
        worker.stop()
        self.assertTrue(call.cancelled)
        self.assertTrue(worker.is_stopped())
        self.assertFalse(worker.is_connected())
        self.assertEqual(call.sent("goodbye"), [])
        self.assertEqual(self.recorder.of("disconnected"), [])
        self.assertEqual(self.transport.call_count(), 1)

    def test_stop_during_the_backoff_ends_the_wait(self):
        worker = self.start_worker(backoff_initial=WAIT_S * 10, backoff_max=WAIT_S * 10)
        self.transport.next_call().finish(grpc.StatusCode.UNAVAILABLE)
        self.recorder.wait_for("disconnected")
        stop = in_background(worker.stop)
        stop.join(WAIT_S)
        self.assertFalse(stop.is_alive(), "stop() waited for the backoff")
        self.assertTrue(worker.is_stopped())
        self.assertEqual(self.transport.call_count(), 1)

    def test_stopped_before_start_the_worker_never_connects(self):
        worker = self.make_worker()
        self.assertFalse(worker.is_stopped())
        worker.stop()
        self.assertTrue(worker.is_stopped())
        self.assertTrue(worker.wait_until_stopped(0))
        worker.start()
        self.assertFalse(worker._thread.is_alive())
        self.assertEqual(self.transport.call_count(), 0)

    def test_goodbye_before_start_stops_too(self):
        worker = self.make_worker()
        worker.goodbye(timeout=WAIT_S)
        self.assertTrue(worker.is_stopped())
        worker.start()
        self.assertEqual(self.transport.call_count(), 0)

    def test_a_second_start_does_nothing(self):
        worker = self.start_worker()
        self.transport.next_call()
        worker.start()
        worker.stop()
        self.assertEqual(self.transport.call_count(), 1)

    def test_sends_of_a_worker_never_started_are_dropped(self):
        worker = self.make_worker()
        worker.ack(1, "0", TaskState("u"))
        worker.decline(1, "0", "no")
        worker.request_savepoint()
        self.assertEqual(worker.counters.dropped_sends, 3)


if __name__ == "__main__":
    unittest.main()
