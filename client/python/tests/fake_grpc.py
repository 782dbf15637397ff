"""gRPC as a PipelineWorker sees it, without a daemon or a socket: each Connect call the worker
makes becomes a FakeCall, which the test answers as a daemon would (docs/PROTOCOL.md)."""
import queue
import threading
import types
from unittest import mock

import grpc

from ckpt_worker import worker as worker_module

from waits import wait_until


class _End:
    def __init__(self, code, details, trailers):
        self.code = code
        self.details = details
        self.trailers = tuple(trailers)


class FakeCall(grpc.RpcError):
    """One Connect call. The worker iterates it for the daemon's messages and writes through its
    request iterator, which a thread drains as gRPC's would. As gRPC's own call object, the call
    itself is raised when it ends with a status other than OK."""

    def __init__(self, target, requests, metadata):
        super().__init__()
        self.target = target
        self.metadata = dict(metadata or ())
        self._condition = threading.Condition()
        self._sent = []
        self._half_closed = False
        self._cancelled = False
        self._end = None
        self._arrivals = queue.Queue()
        threading.Thread(target=self._drain, args=(requests,), daemon=True).start()

    def _drain(self, requests):
        for message in requests:
            with self._condition:
                self._sent.append(message)
                self._condition.notify_all()
        with self._condition:
            self._half_closed = True
            self._condition.notify_all()

    # ---- what the worker calls -----------------------------------------------------------------

    def __iter__(self):
        return self

    def __next__(self):
        arrival = self._arrivals.get()
        if isinstance(arrival, _End):
            self._arrivals.put(arrival)  # an ended call stays ended
            if arrival.code == grpc.StatusCode.OK:
                raise StopIteration
            raise self
        return arrival

    def cancel(self):
        with self._condition:
            self._cancelled = True
        self.finish(grpc.StatusCode.CANCELLED, "Locally cancelled by application!")

    def code(self):
        return self._end.code

    def details(self):
        return self._end.details

    def trailing_metadata(self):
        return self._end.trailers

    # ---- what the test calls, as the daemon ----------------------------------------------------

    def reply(self, message):
        """Delivers a CoordinatorMessage to the worker."""
        self._arrivals.put(message)

    def finish(self, code=grpc.StatusCode.OK, details="", trailers=()):
        """Ends the call with a status; only the first end counts."""
        with self._condition:
            if self._end is not None:
                return
            self._end = _End(code, details, trailers)
        self._arrivals.put(self._end)

    def sent(self, kind=None):
        """What the worker wrote so far: every WorkerMessage, or those whose msg is `kind`."""
        with self._condition:
            return [m for m in self._sent if kind is None or m.WhichOneof("msg") == kind]

    def wait_sent(self, kind, count=1):
        """The worker's messages of `kind`, once there are at least `count` of them."""
        with self._condition:
            wait_until(self._condition, lambda: len(self.sent(kind)) >= count,
                       f"{count} {kind} message(s) on the call to {self.target}")
            return self.sent(kind)

    def wait_sent_where(self, kind, predicate, what):
        """The first message of `kind` for which predicate(message) holds, once one was sent."""
        def matching():
            return [m for m in self.sent(kind) if predicate(m)]
        with self._condition:
            wait_until(self._condition, matching, what)
            return matching()[0]

    def wait_half_closed(self):
        with self._condition:
            wait_until(self._condition, lambda: self._half_closed,
                       f"the worker to half-close its call to {self.target}")

    @property
    def cancelled(self):
        with self._condition:
            return self._cancelled


class FakeTransport:
    """Takes gRPC's place under one PipelineWorker: its channels name their target, and its stub's
    Connect makes a FakeCall, kept in the order the worker made them."""

    def __init__(self, test, worker):
        self._condition = threading.Condition()
        self._calls = []
        self._taken = 0
        # The worker's own Channels stays (its TLS flag decides whom a token may go to); only the
        # channel it would open is replaced by the target's name.
        patch_channels = mock.patch.object(worker._channels, "get", side_effect=lambda t: t)
        patch_stub = mock.patch.object(
            worker_module, "worker_pb2_grpc",
            types.SimpleNamespace(WorkerServiceStub=self._stub))
        for patch in (patch_channels, patch_stub):
            patch.start()
            test.addCleanup(patch.stop)

    def _stub(self, target):
        return types.SimpleNamespace(Connect=lambda requests, metadata=None:
                                     self._connect(target, requests, metadata))

    def _connect(self, target, requests, metadata):
        call = FakeCall(target, requests, metadata)
        with self._condition:
            self._calls.append(call)
            self._condition.notify_all()
        return call

    def next_call(self):
        """The worker's next Connect call, in order, waiting for it if need be."""
        with self._condition:
            wait_until(self._condition, lambda: len(self._calls) > self._taken,
                       f"Connect call number {self._taken + 1}")
            self._taken += 1
            return self._calls[self._taken - 1]

    def call_count(self):
        with self._condition:
            return len(self._calls)
