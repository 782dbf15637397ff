"""The commit phase (docs/PROTOCOL.md, "Commit phase"): on_commit after on_complete, or after
on_welcome for a restore point with commit_pending, then `committed` for every task of the worker;
all_committed handed to on_all_committed unless a stale stream sent it."""
import contextlib
import io
import itertools
import unittest

import grpc

from ckpt.v1 import common_pb2

import coordinator_messages as msg
from worker_harness import WorkerTestCase

_flushes = itertools.count(1)


class CommitTestCase(WorkerTestCase):
    def marker(self, name):
        """A handler that leaves its mark among the messages the worker sends (a savepoint request
        whose target names it and its arguments), so their order is the order things ran in."""
        def handler(*args):
            self.worker.request_savepoint(target=" ".join(map(str, (name,) + args)))
        return handler

    def sent_so_far(self, call):
        """Everything the worker queued on the welcomed `call` until now but the hello: markers
        as their text, committed as ("committed", id, task). A savepoint request queued now goes
        out behind all of it, so once that one is sent, nothing queued before is on its way."""
        flush = f"flush {next(_flushes)}"
        self.worker.request_savepoint(target=flush)
        call.wait_sent_where("savepoint_request", lambda m: m.savepoint_request.target == flush,
                             f"the savepoint request {flush!r}")
        sent = []
        for m in call.sent():
            kind = m.WhichOneof("msg")
            if kind == "committed":
                sent.append(("committed", m.committed.checkpoint_id, m.committed.task_id))
            elif kind == "savepoint_request":
                if not m.savepoint_request.target.startswith("flush "):
                    sent.append(m.savepoint_request.target)
            elif kind not in ("hello", "restore_result"):  # test_worker_restore.py: the latter
                sent.append(kind)
        return sent


class CommitAfterCompleteTest(CommitTestCase):
    def start(self, **options):
        handlers = dict(on_complete=self.marker("on_complete"), on_commit=self.marker("on_commit"))
        handlers.update(options)
        self.worker = self.start_worker(**handlers)
        return self.welcome_next_call()

    def test_committed_goes_out_per_task_once_on_complete_and_on_commit_returned(self):
        call = self.start()
        call.reply(msg.complete(7, commit=True))
        call.wait_sent("committed", 2)
        self.assertEqual(self.sent_so_far(call), [
            "on_complete 7 CHECKPOINT", "on_commit 7", ("committed", 7, "0"), ("committed", 7, "1"),
        ])
        self.assertEqual(self.worker.counters.dropped_sends, 0)

    def test_a_complete_without_commit_commits_nothing(self):
        call = self.start()
        call.reply(msg.complete(7))
        self.wait_handled(call)
        self.assertEqual(self.sent_so_far(call), ["on_complete 7 CHECKPOINT"])

    def test_without_auto_commit_committed_waits_for_the_application(self):
        call = self.start(auto_commit=False)
        call.reply(msg.complete(7, commit=True))
        self.wait_handled(call)
        self.assertEqual(self.sent_so_far(call), ["on_complete 7 CHECKPOINT", "on_commit 7"])
        self.worker.committed(7, "1")
        self.assertEqual(self.sent_so_far(call),
                         ["on_complete 7 CHECKPOINT", "on_commit 7", ("committed", 7, "1")])

    def test_a_raising_on_commit_sends_no_committed(self):
        def on_commit(_):
            raise RuntimeError("the commit failed")

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            call = self.start(on_commit=on_commit)
            call.reply(msg.complete(7, commit=True))
            self.wait_handled(call)
        self.assertIn("the commit failed", stderr.getvalue())
        self.assertEqual(self.sent_so_far(call), ["on_complete 7 CHECKPOINT"])
        self.assertTrue(self.worker.is_connected())

    def test_a_raising_on_complete_ends_the_commit_there(self):
        def on_complete(*_):
            raise RuntimeError("the complete handler failed")

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            call = self.start(on_complete=on_complete)
            call.reply(msg.complete(7, commit=True))
            self.wait_handled(call)
        self.assertIn("the complete handler failed", stderr.getvalue())
        self.assertEqual(self.sent_so_far(call), [])  # not even on_commit's mark


class CommitPendingTest(CommitTestCase):
    def welcome_committing(self, call, **fields):
        call.reply(msg.welcome(restore=common_pb2.RestorePoint(checkpoint_id=41,
                                                               commit_pending=True), **fields))

    def test_a_committing_restore_point_is_committed_after_on_welcome(self):
        def on_welcome(w):
            self.worker.request_savepoint(target=f"on_welcome {w.restore.checkpoint_id}")

        self.worker = self.start_worker(on_welcome=on_welcome, on_commit=self.marker("on_commit"))
        call = self.transport.next_call()
        self.welcome_committing(call)
        call.wait_sent("committed", 2)
        self.assertEqual(self.sent_so_far(call), [
            "on_welcome 41", "on_commit 41", ("committed", 41, "0"), ("committed", 41, "1"),
        ])

    def test_the_welcome_hands_over_the_commit_fields(self):
        self.worker = self.start_worker()
        call = self.transport.next_call()
        self.welcome_committing(call, last_committed_checkpoint_id=40)
        self.recorder.wait_for("commit")
        ((welcome,),) = self.recorder.of("welcome")
        self.assertEqual(welcome.last_committed_checkpoint_id, 40)
        self.assertTrue(welcome.restore.commit_pending)
        self.assertEqual(self.recorder.events()[1:], [("commit", (41,))])

    def test_a_restore_point_without_commit_pending_is_not_committed(self):
        self.worker = self.start_worker()
        call = self.welcome_next_call(
            restore=common_pb2.RestorePoint(checkpoint_id=41), last_committed_checkpoint_id=41)
        self.wait_handled(call)
        ((welcome,),) = self.recorder.of("welcome")
        self.assertEqual(welcome.last_committed_checkpoint_id, 41)
        self.assertFalse(welcome.restore.commit_pending)
        self.assertNotIn("commit", self.recorder.names())
        self.assertEqual(self.sent_so_far(call), [])

    def test_without_auto_commit_a_pending_commit_waits_for_the_application(self):
        self.worker = self.start_worker(auto_commit=False)
        call = self.transport.next_call()
        self.welcome_committing(call)
        self.recorder.wait_for("commit")
        self.assertEqual(self.sent_so_far(call), [])
        self.worker.committed(41, "0")
        self.assertEqual(self.sent_so_far(call), [("committed", 41, "0")])

    def test_a_raising_on_welcome_commits_nothing(self):
        def on_welcome(_):
            raise RuntimeError("the restore failed")

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.worker = self.start_worker(on_welcome=on_welcome)
            call = self.transport.next_call()
            self.welcome_committing(call)
            self.wait_handled(call)
        self.assertIn("the restore failed", stderr.getvalue())
        self.assertNotIn("commit", self.recorder.names())
        self.assertEqual(self.sent_so_far(call), [])


class AllCommittedTest(CommitTestCase):
    def test_all_committed_reaches_on_all_committed(self):
        self.worker = self.start_worker()
        call = self.welcome_next_call()
        call.reply(msg.all_committed(7))
        self.assertEqual(self.recorder.wait_for("all_committed"), [(7,)])
        self.assertEqual(self.worker.counters.stale_messages, 0)
        self.assertEqual(self.sent_so_far(call), [])  # nothing answers it

    def test_an_all_committed_before_the_welcome_is_dropped_as_stale(self):
        self.worker = self.start_worker()
        call = self.transport.next_call()
        call.reply(msg.all_committed(7))
        self.wait_handled(call)
        self.assertEqual(self.events_but_barriers(), [])
        self.assertEqual(self.worker.counters.stale_messages, 1)

    def test_a_deposed_leader_s_commit_messages_are_dropped(self):
        self.worker = self.start_worker()
        self.welcome_next_call(epoch=5).finish(grpc.StatusCode.UNAVAILABLE, "connection broke")
        call = self.transport.next_call()
        call.reply(msg.welcome(epoch=4, restore=common_pb2.RestorePoint(checkpoint_id=41,
                                                                          commit_pending=True)))
        call.reply(msg.complete(42, commit=True))
        call.reply(msg.all_committed(42))
        self.wait_handled(call)
        names = self.recorder.names()
        self.assertEqual(names.count("welcome"), 1)
        for name in ("complete", "commit", "all_committed"):
            self.assertNotIn(name, names)
        self.assertEqual(self.worker.counters.stale_messages, 3)
        # Nothing tried to send committed either: on this stream it would be a dropped send.
        self.assertEqual(self.worker.counters.dropped_sends, 0)


class CommittedSendTest(CommitTestCase):
    def test_committed_before_the_welcome_is_dropped_and_counted(self):
        self.worker = self.start_worker()
        call = self.transport.next_call()
        self.worker.committed(7, "0")
        self.assertEqual(self.worker.counters.dropped_sends, 1)
        call.reply(msg.welcome())
        self.wait_handled(call)
        self.assertEqual(self.sent_so_far(call), [])


if __name__ == "__main__":
    unittest.main()
