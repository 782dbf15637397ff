"""The Session transport (ckpt_worker/session.py) against small gRPC servers of the test's own on
loopback: workers of a process share one call, a channel each; a channel's end reaches its worker
alone; and a daemon from before Session (Connect only) gets a Connect call per worker."""
import threading
import unittest
from concurrent import futures

import grpc

from ckpt.v1 import worker_pb2, worker_pb2_grpc
from ckpt_worker import PipelineWorker

from waits import wait_until


def welcome():
    return worker_pb2.CoordinatorMessage(welcome=worker_pb2.Welcome(session_id="1"))


class ConnectOnly(worker_pb2_grpc.WorkerServiceServicer):
    """A daemon from before Session: Connect welcomes each hello; Session is UNIMPLEMENTED."""

    def __init__(self):
        self.condition = threading.Condition()
        self.connects = 0

    def Connect(self, request_iterator, context):
        with self.condition:
            self.connects += 1
            self.condition.notify_all()
        for message in request_iterator:
            if message.HasField("hello"):
                yield welcome()
            if message.HasField("goodbye"):
                return


class SessionOnly(worker_pb2_grpc.WorkerServiceServicer):
    """Session: welcomes each channel's hello, ends a channel on goodbye (code 0), and ends the
    channel of pipeline "refused" NOT_FOUND at its hello."""

    def __init__(self):
        self.condition = threading.Condition()
        self.calls = 0
        self.hellos = []  # (channel, pipeline)

    def Session(self, request_iterator, context):
        with self.condition:
            self.calls += 1
            self.condition.notify_all()
        for frame in request_iterator:
            out = worker_pb2.CoordinatorFrame()
            for envelope in frame.envelopes:
                message = envelope.message
                if message.HasField("hello"):
                    with self.condition:
                        self.hellos.append((envelope.channel, message.hello.pipeline_id))
                        self.condition.notify_all()
                    if message.hello.pipeline_id == "refused":
                        out.envelopes.add(channel=envelope.channel, end=worker_pb2.ChannelEnd(
                            code=grpc.StatusCode.NOT_FOUND.value[0], message="no pipeline"))
                    else:
                        out.envelopes.add(channel=envelope.channel, message=welcome())
                elif message.HasField("goodbye"):
                    out.envelopes.add(channel=envelope.channel, end=worker_pb2.ChannelEnd(code=0))
            if out.envelopes:
                yield out


class SessionTestCase(unittest.TestCase):
    def serve(self, servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        worker_pb2_grpc.add_WorkerServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        return f"127.0.0.1:{port}"

    def worker(self, server, pipeline, **handlers):
        worker = PipelineWorker(server, worker_id="w", job_id="job", pipeline_id=pipeline,
                                task_ids=["0"], backoff_initial=0.01, backoff_max=0.05,
                                **handlers)
        self.addCleanup(worker.close)
        worker.start()
        return worker

    def welcomed_workers(self, server, count):
        """`count` workers (pipelines p0, p1, ...), returned once each has been welcomed."""
        welcomed = threading.Semaphore(0)
        workers = [self.worker(server, f"p{i}", on_welcome=lambda w: welcomed.release())
                   for i in range(count)]
        for _ in workers:
            self.assertTrue(welcomed.acquire(timeout=10), "every worker welcomed")
        return workers


class SessionTest(SessionTestCase):
    def test_the_workers_of_a_process_share_one_call(self):
        daemon = SessionOnly()
        workers = self.welcomed_workers(self.serve(daemon), 5)
        with daemon.condition:
            self.assertEqual(daemon.calls, 1)
            channels = [channel for channel, _ in daemon.hellos]
        self.assertEqual(len(set(channels)), 5, "a channel each")
        self.assertTrue(all(w.is_connected() for w in workers))

    def test_a_channels_end_reaches_its_worker_alone(self):
        server = self.serve(SessionOnly())
        condition = threading.Condition()
        ended = []

        def disconnected(d):
            with condition:
                ended.append(d)
                condition.notify_all()
        welcomed = threading.Event()
        kept = self.worker(server, "kept", on_welcome=lambda w: welcomed.set())
        self.assertTrue(welcomed.wait(10))
        self.worker(server, "refused", on_disconnected=disconnected)
        with condition:
            wait_until(condition, lambda: ended, "the refused worker's disconnect")
        self.assertEqual(ended[0].code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(ended[0].message, "no pipeline")
        self.assertTrue(kept.is_connected(), "the other channel goes on")

    def test_goodbye_ends_the_channel_with_ok_and_the_worker_stops(self):
        server = self.serve(SessionOnly())
        welcomed = threading.Event()
        worker = self.worker(server, "p", on_welcome=lambda w: welcomed.set())
        self.assertTrue(welcomed.wait(10))
        worker.goodbye(timeout=5)
        self.assertTrue(worker.wait_until_stopped(5))


class FallbackTest(SessionTestCase):
    def test_a_daemon_without_session_gets_a_connect_call_per_worker(self):
        daemon = ConnectOnly()
        self.welcomed_workers(self.serve(daemon), 2)  # over Connect
        with daemon.condition:
            self.assertEqual(daemon.connects, 2)


if __name__ == "__main__":
    unittest.main()
