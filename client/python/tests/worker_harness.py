"""A TestCase base that runs PipelineWorkers over a FakeTransport and stops them at the end."""
import itertools
import unittest

from ckpt_worker import PipelineWorker

import coordinator_messages as msg
from fake_grpc import FakeTransport
from recorder import Recorder

SERVER = "127.0.0.1:7070"
TASKS = ("0", "1")


class WorkerTestCase(unittest.TestCase):
    """self.recorder and self.transport belong to the worker start_worker made last."""

    _barriers = itertools.count(1)

    def make_worker(self, server=SERVER, **options):
        """A worker over a fake transport, not started; every handler records into
        self.recorder unless `options` names its own. Backoffs are milliseconds, not seconds."""
        self.recorder = Recorder()
        # The fake transport stands in for Connect calls: the worker's logic is the same over a
        # Session channel (session.py is tested against a real daemon, tests/e2e).
        arguments = dict(worker_id="w1", job_id="job", pipeline_id="p", task_ids=list(TASKS),
                         backoff_initial=0.001, backoff_max=0.004, transport="connect")
        arguments.update(self.recorder.handlers())
        arguments.update(options)
        worker = PipelineWorker(server, **arguments)
        self.transport = FakeTransport(self, worker)
        self.addCleanup(worker.close)  # before the transport's patches are undone
        return worker

    def start_worker(self, server=SERVER, **options):
        worker = self.make_worker(server, **options)
        worker.start()
        return worker

    def welcome_next_call(self, **welcome_fields):
        """The worker's next Connect call, answered with a welcome the worker has handled."""
        call = self.transport.next_call()
        welcomes = len(self.recorder.of("welcome"))
        call.reply(msg.welcome(**welcome_fields))
        self.recorder.wait_for("welcome", welcomes + 1)
        return call

    def wait_handled(self, call):
        """Returns once the worker handled everything sent on `call` so far: the worker handles
        a call's messages in order, and a state change sent now comes back last."""
        reason = f"barrier {next(self._barriers)}"
        call.reply(msg.state(0, reason))
        self.recorder.wait_for_event(("state", ("UNSPECIFIED", reason)))

    def events_but_barriers(self):
        """The recorder's events, without the state changes wait_handled sent."""
        return [(name, args) for name, args in self.recorder.events()
                if not (name == "state" and str(args[1]).startswith("barrier "))]
