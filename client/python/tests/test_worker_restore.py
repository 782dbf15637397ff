"""Verified restore (docs/PROTOCOL.md, "Verified restore"): the worker reports its restore
handler's outcome (on_welcome) as restore_result, a raise being a failed restore with its message
as the reason; a welcome with restore_withheld does not call on_welcome but on_state FAILED."""
import contextlib
import io
import unittest

from ckpt.v1 import common_pb2

import coordinator_messages as msg
from worker_harness import WorkerTestCase


class RestoreResultTest(WorkerTestCase):
    def results(self, call):
        return [(m.restore_result.checkpoint_id, m.restore_result.task_id, m.restore_result.ok,
                 m.restore_result.reason) for m in call.wait_sent("restore_result")]

    def test_a_restore_handler_that_returns_is_reported_ok(self):
        self.worker = self.start_worker()
        call = self.welcome_next_call(restore=common_pb2.RestorePoint(checkpoint_id=41))
        self.assertEqual(self.results(call), [(41, "0", True, "")])

    def test_a_raising_restore_handler_is_a_failed_restore_with_its_message(self):
        def on_welcome(_):
            raise RuntimeError("chk-41/0 is truncated")

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.worker = self.start_worker(on_welcome=on_welcome)
            call = self.transport.next_call()
            call.reply(msg.welcome(restore=common_pb2.RestorePoint(checkpoint_id=41)))
            self.assertEqual(self.results(call), [(41, "0", False, "chk-41/0 is truncated")])
        self.assertIn("chk-41/0 is truncated", stderr.getvalue())

    def test_a_long_reason_is_cut_to_what_the_daemon_keeps(self):
        def on_welcome(_):
            raise RuntimeError("x" * 5000)

        with contextlib.redirect_stderr(io.StringIO()):
            self.worker = self.start_worker(on_welcome=on_welcome)
            call = self.transport.next_call()
            call.reply(msg.welcome(restore=common_pb2.RestorePoint(checkpoint_id=41)))
            ((_, _, ok, reason),) = self.results(call)
        self.assertFalse(ok)
        self.assertEqual(reason, "x" * 1024)

    def test_a_fresh_pipeline_sends_no_result(self):
        self.worker = self.start_worker()
        call = self.welcome_next_call()
        self.wait_handled(call)
        self.assertEqual(call.sent("restore_result"), [])

    def test_a_withheld_restore_holds_the_application_back(self):
        self.worker = self.start_worker()
        call = self.transport.next_call()
        call.reply(msg.welcome(state=common_pb2.PIPELINE_STATE_FAILED, restore_withheld=True))
        self.recorder.wait_for("state")
        ((state, reason),) = self.recorder.of("state")
        self.assertEqual(state, "FAILED")
        self.assertIn("held back", reason)
        self.assertNotIn("welcome", self.recorder.names())
        self.assertEqual(call.sent("restore_result"), [])


if __name__ == "__main__":
    unittest.main()
