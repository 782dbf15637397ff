"""The epoch filter: what a deposed leader still sends is dropped (docs/PROTOCOL.md, "High
availability"); epoch 0, a daemon with the embedded store, never is."""
import unittest

import grpc

import coordinator_messages as msg
from worker_harness import WorkerTestCase


class EpochFilterTest(WorkerTestCase):
    def reconnect(self, call):
        """Ends `call` as a broken connection does and returns the worker's next call."""
        call.finish(grpc.StatusCode.UNAVAILABLE, "connection broke")
        return self.transport.next_call()

    def test_a_trigger_of_an_older_leadership_is_dropped(self):
        worker = self.start_worker()
        call = self.welcome_next_call(epoch=5)
        call.reply(msg.trigger(1, epoch=4))
        call.reply(msg.trigger(2, epoch=5))
        call.reply(msg.trigger(3, epoch=0))
        call.reply(msg.trigger(4, epoch=6))
        self.recorder.wait_for("trigger", 3)
        self.wait_handled(call)
        self.assertEqual([t.checkpoint_id for (t,) in self.recorder.of("trigger")], [2, 3, 4])
        self.assertEqual(worker.counters.stale_messages, 1)

    def test_a_trigger_of_a_newer_leadership_raises_the_bar(self):
        worker = self.start_worker()
        call = self.welcome_next_call(epoch=5)
        call.reply(msg.trigger(1, epoch=6))
        call.reply(msg.trigger(2, epoch=5))
        call.reply(msg.trigger(3, epoch=6))
        self.recorder.wait_for("trigger", 2)
        self.wait_handled(call)
        self.assertEqual([t.checkpoint_id for (t,) in self.recorder.of("trigger")], [1, 3])
        self.assertEqual(worker.counters.stale_messages, 1)

    def test_a_stale_welcome_is_ignored_with_every_end_of_round_of_its_stream(self):
        worker = self.start_worker()
        call = self.reconnect(self.welcome_next_call(epoch=5))
        call.reply(msg.welcome(epoch=4))
        call.reply(msg.abort(1))
        call.reply(msg.complete(1))
        call.reply(msg.release(1))
        call.reply(msg.trigger(2, epoch=4))
        self.wait_handled(call)
        self.assertEqual(self.recorder.names().count("welcome"), 1)
        self.assertNotIn("trigger", self.recorder.names())
        self.assertNotIn("complete", self.recorder.names())
        self.assertFalse(worker.is_connected())
        self.assertEqual(worker.counters.stale_messages, 5)
        self.assertEqual(worker.counters.connects, 1)

    def test_a_newer_welcome_raises_the_bar(self):
        worker = self.start_worker()
        call = self.reconnect(self.welcome_next_call(epoch=5))
        call.reply(msg.welcome(epoch=7))
        self.recorder.wait_for("welcome", 2)
        call.reply(msg.trigger(1, epoch=6))
        call.reply(msg.complete(1))
        self.recorder.wait_for("complete")
        self.assertNotIn("trigger", self.recorder.names())
        self.assertEqual(worker.counters.stale_messages, 1)

    def test_epoch_zero_is_never_stale(self):
        worker = self.start_worker()
        call = self.reconnect(self.welcome_next_call(epoch=5))
        call.reply(msg.welcome(epoch=0))
        call.reply(msg.complete(1))
        self.recorder.wait_for("complete")
        self.assertEqual(self.recorder.names().count("welcome"), 2)
        self.assertTrue(worker.is_connected())
        self.assertEqual(worker.counters.stale_messages, 0)


if __name__ == "__main__":
    unittest.main()
