"""The Python worker SDK (client/python) against a real daemon: a full round with its state in the
store, a decline that fails only its round, a savepoint asked by the worker, a trigger at a
position, a reconnect with the restore point after the daemon restarted, goodbye, a refused
hello; with two daemons on etcd, a worker following the leader from the standby and through a
takeover, and gRPC health NOT_SERVING on the standby until it leads; against a daemon with TLS
and auth on, a round with a bearer token or a client certificate and a wrong token refused for
good; and the package the build assembles installs with pip.

Runs on Debian's python3 (its python3-grpcio and python3-protobuf), with the stubs the build
generated in <build>/python on PYTHONPATH (tests/CMakeLists.txt sets both).
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import e2e_util as e2e
import etcd_util

BUILD_DIR = None
JOB = "py"
PIPELINES = e2e.declared_pipelines(JOB, 1, interval_ms=300, timeout_ms=5000,
                                   tolerable_failures=100)
SHARED = 20  # pipelines of one worker process, for the Session tests
CONFIG = "lease_ttl_ms: 3000\nheartbeat_interval_ms: 200\n" + PIPELINES + e2e.declared_pipelines(
    JOB + "pos", 1, interval_ms=300, timeout_ms=5000, tolerable_failures=100,
    position_interval=100).replace("pipelines:\n", "") + e2e.declared_pipelines(
    JOB + "share", SHARED, interval_ms=100, timeout_ms=5000).replace("pipelines:\n", "")
WAIT_S = 30


class Recorder:
    """Every handler call of one worker, in order, as (event, fields...) on a queue."""

    def __init__(self):
        self.events = queue.Queue()
        self.seen = []
        self.worker = None
        self.decline_next = 0  # rounds to decline (task "0") before acking again

    def handlers(self):
        return dict(
            on_welcome=lambda w: self.events.put(("welcome", w)),
            on_trigger=self.on_trigger,
            on_abort=lambda i, r: self.events.put(("abort", i, r)),
            on_complete=lambda i, k: self.events.put(("complete", i, k)),
            on_release=lambda ids: self.events.put(("release", ids)),
            on_state=lambda s, r: self.events.put(("state", s, r)),
            on_savepoint_refused=lambda r: self.events.put(("savepoint_refused", r)),
            on_disconnected=lambda d: self.events.put(("disconnected", d)))

    def on_trigger(self, t):
        self.events.put(("trigger", t))
        if self.decline_next > 0:
            self.decline_next -= 1
            self.worker.decline(t.checkpoint_id, "0", "the test declines")
            return
        for task in ("0", "1"):
            self.worker.ack(t.checkpoint_id, task,
                            TaskState(uri=f"mem://{task}/{t.checkpoint_id}", size_bytes=7,
                                      checksum="c"))

    def all(self, event):
        """Every `event` so far, whether or not next() has looked at it."""
        while not self.events.empty():
            self.seen.append(self.events.get())
        return [e for e in self.seen if e[0] == event]

    def next(self, event, match=lambda e: True, timeout=WAIT_S):
        """The next event named `event` for which match(e) holds; fails after `timeout`."""
        for e in self.seen:
            if e[0] == event and match(e):
                self.seen.remove(e)
                return e
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            while not deadline.is_set():
                try:
                    e = self.events.get(timeout=0.1)
                except queue.Empty:
                    continue
                if e[0] == event and match(e):
                    return e
                self.seen.append(e)
        finally:
            timer.cancel()
        raise AssertionError(f"no {event} within {timeout} s; seen: {self.seen[-10:]}")


class PythonSdkTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(CONFIG)
        self.daemon = self.ws.start_daemon(self.config)
        self.workers = []

    def tearDown(self):
        for w in self.workers:
            w.close()
        self.ws.close()

    def worker(self, pipeline="p0", job=JOB, **options):
        rec = Recorder()
        rec.worker = PipelineWorker(f"127.0.0.1:{self.ws.port}", worker_id="pyw", job_id=job,
                                    pipeline_id=pipeline, task_ids=["0", "1"],
                                    backoff_initial=0.05, backoff_max=0.5, **options,
                                    **rec.handlers())
        self.workers.append(rec.worker)
        return rec

    def stored(self, job, pipeline, checkpoint_id):
        """task id -> state uri of a completed checkpoint in the daemon's store ({}: none)."""
        with self.ws.db() as db:
            row = db.execute(
                "SELECT task_states FROM checkpoints WHERE job_id=? AND pipeline_id=? "
                "AND checkpoint_id=?", (job, pipeline, checkpoint_id)).fetchone()
        return {t: s["uri"] for t, s in json.loads(row[0]).items()} if row else {}

    def test_a_full_round_completes_with_its_states_stored(self):
        rec = self.worker()
        rec.worker.start()
        welcome = rec.next("welcome")[1]
        self.assertEqual(welcome.restore.checkpoint_id, 0, "a fresh pipeline")
        self.assertEqual(welcome.heartbeat_interval_ms, 200)
        trigger = rec.next("trigger")[1]
        self.assertEqual(trigger.kind, "CHECKPOINT")
        done = rec.next("complete", lambda e: e[1] == trigger.checkpoint_id)
        self.assertEqual(done[2], "CHECKPOINT")
        self.assertEqual(self.stored(JOB, "p0", trigger.checkpoint_id),
                         {"0": f"mem://0/{trigger.checkpoint_id}",
                          "1": f"mem://1/{trigger.checkpoint_id}"})
        self.assertTrue(rec.worker.is_connected())
        self.assertEqual(rec.worker.counters.dropped_sends, 0)

    def test_a_decline_fails_its_round_and_the_next_one_completes(self):
        rec = self.worker()
        rec.decline_next = 1
        rec.worker.start()
        declined = rec.next("trigger")[1].checkpoint_id
        abort = rec.next("abort", lambda e: e[1] == declined)
        self.assertIn("the test declines", abort[2])
        later = rec.next("complete", lambda e: e[1] > declined)
        self.assertNotIn(declined, [e[1] for e in rec.seen if e[0] == "complete"])
        self.assertEqual(self.stored(JOB, "p0", declined), {}, "a declined round is not stored")
        self.assertTrue(self.stored(JOB, "p0", later[1]))

    def test_a_savepoint_the_worker_asks_for_completes(self):
        rec = self.worker()
        rec.worker.start()
        rec.next("complete")  # running
        rec.worker.request_savepoint()
        savepoint = rec.next("trigger", lambda e: e[1].kind == "SAVEPOINT")[1]
        self.assertTrue(savepoint.target, "a savepoint names where its state goes")
        rec.next("complete", lambda e: e[1] == savepoint.checkpoint_id and e[2] == "SAVEPOINT")

    def test_a_trigger_waits_for_positions_and_the_ack_carries_its_position(self):
        rec = self.worker(pipeline="p0", job=JOB + "pos")
        rec.worker.start()
        rec.next("welcome")
        with self.assertRaises(ValueError):
            rec.worker.set_position("not-mine", 1)
        with self.assertRaises(TypeError):
            rec.worker.set_position("0", 1.5)
        with self.assertRaises(ValueError):
            rec.worker.set_position("0", 2 ** 63)
        rec.worker.set_position("0", 150)
        rec.worker.set_position("1", 170)
        trigger = rec.next("trigger")[1]
        self.assertEqual(trigger.position, 200, "the next multiple of 100 above every report")
        rec.next("complete", lambda e: e[1] == trigger.checkpoint_id)
        with self.ws.db() as db:
            (position,) = db.execute(
                "SELECT position FROM checkpoints WHERE job_id=? AND checkpoint_id=?",
                (JOB + "pos", trigger.checkpoint_id)).fetchone()
        self.assertEqual(position, 200)

    def test_after_a_daemon_restart_it_reconnects_with_its_restore_point(self):
        rec = self.worker()
        rec.worker.start()
        first = rec.next("complete")[1]
        e2e.stop(self.daemon, signal.SIGKILL)
        gone = rec.next("disconnected")[1]
        self.assertTrue(gone.was_connected)
        self.assertTrue(gone.will_retry, f"{gone.code} is retried")
        self.daemon = self.ws.start_daemon(self.config)
        again = rec.next("welcome", lambda e: e[1].restore.checkpoint_id >= first)[1]
        self.assertGreaterEqual(again.last_completed_checkpoint_id, first)
        restored = again.restore.checkpoint_id
        self.assertEqual(again.restore.task_states["0"].uri, f"mem://0/{restored}")
        self.assertEqual(rec.worker.counters.reconnects, 1)
        rec.next("complete", lambda e: e[1] > restored)

    def test_goodbye_deregisters_at_once_and_stops_the_worker(self):
        rec = self.worker()
        rec.worker.start()
        rec.next("complete")
        rec.worker.goodbye(timeout=5)
        self.assertTrue(rec.worker.wait_until_stopped(5))
        self.assertFalse(rec.worker.is_connected())
        # Released by goodbye within a moment, not lost (by a broken stream or the lease).
        e2e.wait_until(lambda: "worker pyw said goodbye" in self.ws.read_log("ckptd.log"), 2,
                       "the daemon to release the tasks on goodbye")
        self.assertNotIn("lost task(s)", self.ws.read_log("ckptd.log"))
        # After goodbye: dropped, not sent. (A trigger sent before the daemon read the goodbye
        # may still have come, and its acks been dropped too.)
        dropped = rec.worker.counters.dropped_sends
        rec.worker.ack(1, "0", TaskState(uri="x"))
        self.assertEqual(rec.worker.counters.dropped_sends, dropped + 1)

    def metric(self, name):
        return e2e.sample(e2e.http_get(self.ws.metrics_url())[2], name) or 0

    def start_shared(self, **options):
        """SHARED workers of this process, one per pipeline of the share job, started."""
        recs = [self.worker(pipeline=f"p{i}", job=JOB + "share", **options)
                for i in range(SHARED)]
        for rec in recs:
            rec.worker.start()
        return recs

    def test_the_workers_of_a_process_share_one_session_call(self):
        recs = self.start_shared()
        for rec in recs:
            rec.next("complete")
            rec.next("complete")
        self.assertEqual(self.metric("ckptd_worker_session_calls"), 1)
        self.assertEqual(self.metric("ckptd_worker_sessions"), SHARED, "a channel each")
        # One scrape for both: rounds go on between two. How many envelopes share a frame
        # depends on timing; session_protocol_test proves a frame carries many.
        scrape = e2e.http_get(self.ws.metrics_url())[2]
        frames = e2e.sample(scrape, "ckptd_session_frames_written_total")
        envelopes = e2e.sample(scrape, "ckptd_session_envelopes_written_total")
        self.assertGreaterEqual(envelopes, 5 * SHARED, "welcome, 2 triggers, 2 completes each")
        self.assertGreater(frames, 0)
        self.assertGreaterEqual(envelopes, frames, "a frame carries one envelope or more")
        # One leaves (goodbye), one stops (its channel dropped): the others go on, on the call.
        recs[0].worker.goodbye(timeout=5)
        recs[1].worker.stop()
        self.assertTrue(recs[0].worker.wait_until_stopped(5))
        e2e.wait_until(lambda: self.metric("ckptd_worker_sessions") == SHARED - 2, WAIT_S,
                       "two channels to end")
        for rec in recs[2:]:
            last = max([0] + [e[1] for e in rec.all("complete")])
            rec.next("complete", lambda e, last=last: e[1] > last)
        self.assertEqual(self.metric("ckptd_worker_session_calls"), 1)
        for rec in recs[2:]:
            rec.worker.goodbye(timeout=5)
        e2e.wait_until(lambda: self.metric("ckptd_worker_session_calls") == 0, WAIT_S,
                       "the call to end with its last channel")

    def test_the_connect_transport_keeps_a_stream_per_worker(self):
        recs = self.start_shared(transport="connect")
        for rec in recs:
            rec.next("complete")
        self.assertEqual(self.metric("ckptd_worker_session_calls"), 0)
        self.assertEqual(self.metric("ckptd_worker_sessions"), SHARED)

    def test_a_hello_the_daemon_refuses_stops_the_worker_for_good(self):
        rec = self.worker()
        rec.worker = PipelineWorker(f"127.0.0.1:{self.ws.port}", worker_id="pyw", job_id=JOB,
                                    pipeline_id="p0", task_ids=["0", "9"], **rec.handlers())
        self.workers.append(rec.worker)
        rec.worker.start()
        refused = rec.next("disconnected")[1]
        self.assertEqual(refused.code.name, "INVALID_ARGUMENT")
        self.assertFalse(refused.will_retry)
        self.assertTrue(rec.worker.wait_until_stopped(5))
        self.assertEqual(rec.worker.counters.connects, 0)


def grpc_health(address, service=""):
    """grpc.health.v1.Health/Check of `service` at `address`: UNKNOWN, SERVING, NOT_SERVING or
    SERVICE_UNKNOWN. Messages coded here by hand (one field each), so that no health stubs are
    needed: the request's field 1 is the service name, the response's field 1 the status."""
    import grpc
    name = service.encode()
    assert len(name) < 128  # a one-byte length
    request = (b"\x0a" + bytes([len(name)]) + name) if name else b""
    with grpc.insecure_channel(address) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        response = check(request, timeout=10)
    status = response[1] if response[:1] == b"\x08" else 0  # absent: the default, UNKNOWN
    return ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"][status]


class PythonSdkHaTest(unittest.TestCase):
    """Two daemons sharing one etcd: a worker told of the standby alone reaches the leader
    through the standby's ckpt-leader trailer, and after a kill -9 of the leader it goes on with
    the daemon that takes over, its tasks kept, under a higher leader_epoch."""
    TTL_MS = 2000  # etcd's floor: a quick takeover

    def setUp(self):
        self.workers = []
        self.etcd, self.a, self.b = etcd_util.start_pair(self, BUILD_DIR, "/ckptd-py",
                                                         self.TTL_MS, PIPELINES)
        self.addCleanup(lambda: [w.close() for w in self.workers])  # first: before the daemons

    def test_grpc_health_is_not_serving_on_the_standby_until_it_takes_over(self):
        leader, standby = f"127.0.0.1:{self.a.port}", f"127.0.0.1:{self.b.port}"
        for service in ("", "ckpt.v1.WorkerService", "ckpt.v1.AdminService"):
            self.assertEqual(grpc_health(leader, service), "SERVING", service)
            self.assertEqual(grpc_health(standby, service), "NOT_SERVING", service)
        self.a.daemon.kill()
        self.a.daemon.wait()
        e2e.wait_until(lambda: grpc_health(standby) == "SERVING", self.TTL_MS / 1000 + WAIT_S,
                       "the standby's health to turn SERVING once it leads")
        self.assertEqual(self.b.role(), "leader")
        self.assertEqual(grpc_health(standby, "ckpt.v1.WorkerService"), "SERVING")

    def test_a_worker_told_of_the_standby_follows_the_leader_and_then_the_takeover(self):
        rec = Recorder()
        rec.worker = PipelineWorker(f"127.0.0.1:{self.b.port}", worker_id="pyw", job_id=JOB,
                                    pipeline_id="p0", task_ids=["0", "1"],
                                    backoff_initial=0.05, backoff_max=0.5, **rec.handlers())
        self.workers.append(rec.worker)
        rec.worker.start()
        first = rec.next("welcome")[1]
        self.assertEqual(first.leader_epoch, self.a.metric("ckptd_leader_epoch"))
        self.assertGreaterEqual(rec.worker.counters.leader_redirects, 1)
        done = rec.next("complete")[1]
        self.a.daemon.kill()
        self.a.daemon.wait()
        again = rec.next("welcome", lambda e: e[1].leader_epoch > first.leader_epoch,
                         timeout=self.TTL_MS / 1000 + WAIT_S)[1]
        self.assertEqual(self.b.role(), "leader")
        self.assertEqual(again.leader_epoch, self.b.metric("ckptd_leader_epoch"))
        self.assertGreaterEqual(again.last_completed_checkpoint_id, done)
        rec.next("complete", lambda e: e[1] > again.last_completed_checkpoint_id)
        # Reconnected with its tasks: never told to stop or fail them.
        states = [e[1] for e in rec.all("state")]
        self.assertFalse([s for s in states if str(s).endswith(("STOPPED", "FAILED"))], states)


class PythonSdkTlsTest(unittest.TestCase):
    """TLS on the gRPC port and auth on: the worker's job is open to one token principal and one
    certificate principal (a worker with the CA alone and no credentials would be refused)."""

    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.workers = []
        tls = e2e.start_tls_auth_daemon(self.ws, JOB, "py", CONFIG)
        self.certs, self.client = tls.certs, tls.client
        self.token_path, self.wrong_token_path = tls.token_path, tls.wrong_token_path

    def tearDown(self):
        for w in self.workers:
            w.close()
        self.ws.close()

    def worker(self, **options):
        rec = Recorder()
        rec.worker = PipelineWorker(f"127.0.0.1:{self.ws.port}", worker_id="pyw", job_id=JOB,
                                    pipeline_id="p0", task_ids=["0", "1"],
                                    backoff_initial=0.05, backoff_max=0.5,
                                    ca_file=self.certs.ca.cert, **options, **rec.handlers())
        self.workers.append(rec.worker)
        return rec

    def complete_a_round(self, rec, principal):
        rec.worker.start()
        self.assertEqual(rec.next("welcome")[1].restore.checkpoint_id, 0)
        trigger = rec.next("trigger")[1]
        rec.next("complete", lambda e: e[1] == trigger.checkpoint_id)
        rec.worker.goodbye(timeout=5)
        self.assertTrue(rec.worker.wait_until_stopped(5))
        self.assertEqual((rec.worker.counters.connects, rec.worker.counters.disconnects), (1, 0))
        self.assertIn(f"worker pyw registered 2 task(s) (session 1, principal {principal})",
                      self.ws.read_log("ckptd.log"))

    def test_a_round_completes_over_tls_with_a_bearer_token(self):
        self.complete_a_round(self.worker(token_file=self.token_path), "py-token")

    def test_a_round_completes_over_mutual_tls_with_a_client_certificate(self):
        # Also tls_server_name: the server certificate names localhost (and 127.0.0.1).
        self.complete_a_round(self.worker(cert_file=self.client.cert, key_file=self.client.key,
                                          tls_server_name="localhost"), "py-cert")

    def test_a_wrong_token_is_refused_and_not_retried(self):
        rec = self.worker(token_file=self.wrong_token_path)
        rec.worker.start()
        refused = rec.next("disconnected")[1]
        self.assertEqual(refused.code.name, "UNAUTHENTICATED", refused)
        self.assertIn("token refused", refused.message)
        self.assertFalse(refused.was_connected)
        self.assertFalse(refused.will_retry)
        self.assertTrue(rec.worker.wait_until_stopped(5))
        counters = rec.worker.counters
        self.assertEqual((counters.attempts, counters.connects), (1, 0), "one hello, no retry")
        self.assertEqual(self.ws.metric('ckptd_auth_denied_total{reason="unknown_token"}'), 1)
        self.assertNotIn("not-the-token", self.ws.read_log("ckptd.log"), "never the secret")


class PythonSdkPackageTest(unittest.TestCase):
    def test_the_built_package_installs_with_pip_and_imports_from_where_it_went(self):
        target = tempfile.mkdtemp(prefix="ckpt-py-")
        try:
            install = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                 "--no-index", "--target", target, os.path.join(BUILD_DIR, "python")],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
            probe = subprocess.run(
                [sys.executable, "-c", "import ckpt_worker, ckpt.v1.worker_pb2_grpc; "
                 "print(ckpt_worker.__file__)"],
                capture_output=True, text=True, timeout=60, cwd=target,
                env={**os.environ, "PYTHONPATH": target})
            self.assertEqual(probe.returncode, 0, probe.stderr)
            self.assertTrue(probe.stdout.startswith(target), probe.stdout)
        finally:
            shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(sys.argv[sys.argv.index("--build-dir") + 1], "python"))
    from ckpt_worker import PipelineWorker, TaskState  # noqa: E402 (the build's package)
    e2e.main(globals())
