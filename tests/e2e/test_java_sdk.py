"""The Java worker SDK (client/java) against a real daemon: a full round with its states in the
store, a decline that aborts its round, a savepoint the worker asks for, a reconnect with takeover
and the restore point after the daemon restarted, goodbye on SIGTERM, a refused hello, handlers
that throw; with two daemons on etcd, a worker following the leader from the standby and through
a takeover; against a daemon with TLS and auth on, a round with a bearer token or a client
certificate, and a wrong token refused for good.

Runs the example worker (io.ckptd.example.SmallWorker) the build put in <build>/java, with
`java -cp ckpt-worker.jar:ckpt-worker-example.jar:$(cat classpath.txt)`, and reads the JSON lines
it writes, one per event.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

import e2e_util as e2e
import etcd_util

BUILD_DIR = None
JOB = "jv"
PIPELINES = e2e.declared_pipelines(JOB, 1, interval_ms=300, timeout_ms=5000,
                                   tolerable_failures=100)
CONFIG = "lease_ttl_ms: 3000\nheartbeat_interval_ms: 200\n" + PIPELINES
WAIT_S = 30  # the JVM's start counts in it


def java_command():
    """`java -cp ...` for the example worker, from what the build wrote into <build>/java."""
    out = os.path.join(BUILD_DIR, "java")
    with open(os.path.join(out, "classpath.txt")) as f:
        classpath = f.read().strip()
    jars = [os.path.join(out, "ckpt-worker.jar"), os.path.join(out, "ckpt-worker-example.jar")]
    for jar in jars:
        if not os.path.exists(jar):
            raise FileNotFoundError(f"{jar}: build the ckpt_java_sdk target first")
    java = shutil.which("java")
    if java is None:
        raise FileNotFoundError("java: not on PATH")
    return [java, "-cp", ":".join(jars + [classpath]), "io.ckptd.example.SmallWorker"]


class JavaWorker:
    """One SmallWorker process and the events it wrote, read from its file as they come."""

    def __init__(self, ws, name, *args):
        self.events_path = ws.path(name + ".events")
        self.stderr_path = ws.path(name + ".stderr")
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                java_command() + ["--server", f"127.0.0.1:{ws.port}", "--job", JOB,
                                  "--events", self.events_path, *args],
                stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        ws.procs.append(self.proc)  # killed by ws.close() if a test fails first
        self.taken = 0  # events[:taken] were matched by next() already

    def events(self):
        try:
            with open(self.events_path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # a line still being written
        return out

    def next(self, event, match=lambda e: True, timeout=WAIT_S):
        """The first event named `event` after the last one next() returned, for which match(e)
        holds; fails after `timeout` with what came."""
        found = []

        def look():
            for i, e in enumerate(self.events()[self.taken:], start=self.taken):
                if e["event"] == event and match(e):
                    found.append(e)
                    self.taken = i + 1
                    return True
            return self.proc.poll() is not None
        e2e.wait_until(look, timeout, f"a {event} event")
        if not found:
            raise AssertionError(f"the worker exited ({self.proc.returncode}) before a {event}; "
                                 f"events: {self.events()[-10:]}; stderr: {self.stderr()}")
        return found[0]

    def all(self, event):
        return [e for e in self.events() if e["event"] == event]

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()[-2000:]

    def terminate(self):
        """SIGTERM: the worker says goodbye (in a shutdown hook) and exits; its exit code, which
        the JVM makes 128 + 15 after a SIGTERM whatever the hooks did."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=WAIT_S)


class JavaSdkTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(CONFIG)
        self.daemon = self.ws.start_daemon(self.config)

    def tearDown(self):
        self.ws.close()

    def worker(self, *args, pipeline="p0", tasks="0,1"):
        return JavaWorker(self.ws, f"worker{len(self.ws.procs)}", "--pipeline", pipeline,
                          "--tasks", tasks, "--worker-id", "javaw", *args)

    def stored(self, checkpoint_id):
        """task id -> state uri of a completed checkpoint in the daemon's store ({}: none)."""
        with self.ws.db() as db:
            row = db.execute(
                "SELECT task_states FROM checkpoints WHERE job_id=? AND pipeline_id=? "
                "AND checkpoint_id=?", (JOB, "p0", checkpoint_id)).fetchone()
        return {t: s["uri"] for t, s in json.loads(row[0]).items()} if row else {}

    def test_a_full_round_completes_with_its_states_stored(self):
        w = self.worker()
        self.assertFalse(w.next("connecting")["takeover"], "a worker's first hello")
        welcome = w.next("welcome")
        self.assertEqual(welcome["restore_checkpoint_id"], 0, "a fresh pipeline")
        self.assertEqual(welcome["heartbeat_interval_ms"], 200)
        self.assertEqual(welcome["state"], "RUNNING")
        trigger = w.next("trigger")
        self.assertEqual(trigger["kind"], "CHECKPOINT")
        cid = trigger["checkpoint_id"]
        w.next("acked", lambda e: e["checkpoint_id"] == cid)
        done = w.next("complete", lambda e: e["checkpoint_id"] == cid)
        self.assertEqual(done["kind"], "CHECKPOINT")
        self.assertEqual(self.stored(cid), {"0": f"mem://0/{cid}", "1": f"mem://1/{cid}"})
        self.assertEqual(self.metric("ckptd_worker_session_calls"), 1, "over Session by default")
        # Heartbeats keep the stream past the lease (3 s): rounds still complete on it after.
        lease_end = time.monotonic() + 3.5
        w.next("complete", lambda e: time.monotonic() > lease_end)
        self.assertEqual(w.all("disconnected"), [], "no stream lost while heartbeats go out")
        self.assertEqual(w.terminate(), 128 + signal.SIGTERM, w.stderr())
        self.assertEqual(w.all("stopped")[-1]["connects"], 1)
        e2e.wait_until(lambda: "worker javaw said goodbye" in self.ws.read_log("ckptd.log"), 5,
                       "the daemon to release the tasks on goodbye")
        self.assertNotIn("lost task(s)", self.ws.read_log("ckptd.log"))

    def metric(self, name):
        return e2e.sample(e2e.http_get(self.ws.metrics_url())[2], name) or 0

    def test_the_connect_transport_still_serves(self):
        w = self.worker("--transport", "connect")
        cid = w.next("trigger")["checkpoint_id"]
        w.next("complete", lambda e: e["checkpoint_id"] == cid)
        self.assertEqual(self.metric("ckptd_worker_session_calls"), 0)
        self.assertEqual(self.metric("ckptd_worker_sessions"), 1)
        self.assertEqual(w.terminate(), 128 + signal.SIGTERM, w.stderr())

    def test_a_decline_aborts_its_round_and_the_next_one_completes(self):
        w = self.worker("--decline-first", "1")
        declined = w.next("declined")["checkpoint_id"]
        abort = w.next("abort", lambda e: e["checkpoint_id"] == declined)
        self.assertIn("task 0 declined it: the example declines", abort["reason"])
        later = w.next("complete", lambda e: e["checkpoint_id"] > declined)["checkpoint_id"]
        self.assertNotIn(declined, [e["checkpoint_id"] for e in w.all("complete")])
        self.assertEqual(self.stored(declined), {}, "a declined round is not stored")
        self.assertTrue(self.stored(later))
        # Failed (declined), not aborted: it counts toward tolerable_failures.
        self.assertEqual(self.ws.metric("ckptd_checkpoints_failed_total"), 1)

    def test_a_savepoint_the_worker_asks_for_completes(self):
        w = self.worker("--savepoint")
        w.next("complete")  # running; the worker asks for a savepoint now
        savepoint = w.next("trigger", lambda e: e["kind"] == "SAVEPOINT")
        self.assertTrue(savepoint["target"], "a savepoint names where its state goes")
        w.next("complete", lambda e: e["checkpoint_id"] == savepoint["checkpoint_id"]
               and e["kind"] == "SAVEPOINT")

    def test_after_a_daemon_restart_it_reconnects_with_takeover_and_goes_on(self):
        w = self.worker()
        self.assertFalse(w.next("connecting")["takeover"])
        first = w.next("complete")["checkpoint_id"]
        e2e.stop(self.daemon, signal.SIGKILL)
        gone = w.next("disconnected")
        self.assertTrue(gone["was_connected"])
        self.assertTrue(gone["will_retry"], f"{gone['code']} is retried")
        self.daemon = self.ws.start_daemon(self.config)  # the same port and data dir
        again = w.next("welcome", lambda e: e["restore_checkpoint_id"] >= first)
        hellos = w.all("connecting")
        self.assertGreater(len(hellos), 1)
        self.assertTrue(all(h["takeover"] for h in hellos[1:]), "every reconnect takes over")
        self.assertGreaterEqual(again["last_completed"], first)
        restored = again["restore_checkpoint_id"]
        self.assertEqual(again["restore_states"], {"0": f"mem://0/{restored}",
                                                   "1": f"mem://1/{restored}"})
        w.next("complete", lambda e: e["checkpoint_id"] > restored)
        self.assertEqual(w.terminate(), 128 + signal.SIGTERM, w.stderr())
        stopped = w.all("stopped")[-1]
        self.assertEqual((stopped["connects"], stopped["reconnects"]), (2, 1))

    def test_handlers_that_throw_errors_do_not_stop_the_worker(self):
        # An AssertionError (not a RuntimeException) and a leftover interrupt from onWelcome and
        # onComplete: rounds go on, on the same stream, and the worker says goodbye at the end.
        w = self.worker("--throwing-handlers", "--exit-after-completes", "2")
        self.assertEqual(w.proc.wait(timeout=WAIT_S), 0, w.stderr())
        self.assertEqual(len(w.all("complete")), 2)
        self.assertEqual(w.all("disconnected"), [])
        self.assertEqual(w.all("stopped")[-1]["connects"], 1)
        self.assertIn("the example's complete handler throws", w.stderr())
        e2e.wait_until(lambda: "worker javaw said goodbye" in self.ws.read_log("ckptd.log"), 5,
                       "the daemon to release the tasks on goodbye")

    def test_a_hello_the_daemon_refuses_stops_the_worker_for_good(self):
        w = self.worker(tasks="0,9")
        refused = w.next("disconnected")
        self.assertEqual(refused["code"], "INVALID_ARGUMENT")
        self.assertFalse(refused["will_retry"])
        self.assertEqual(w.proc.wait(timeout=WAIT_S), 1)
        self.assertEqual(w.all("welcome"), [])


class JavaSdkHaTest(unittest.TestCase):
    """Two daemons sharing one etcd: a worker told of the standby alone reaches the leader
    through the standby's ckpt-leader trailer, and after a kill -9 of the leader it goes on with
    the daemon that takes over, with its tasks, under a higher leader_epoch."""
    TTL_MS = 2000  # etcd's floor: a quick takeover

    def setUp(self):
        self.etcd, self.a, self.b = etcd_util.start_pair(self, BUILD_DIR, "/ckptd-java",
                                                         self.TTL_MS, PIPELINES)

    def test_a_worker_told_of_the_standby_follows_the_leader_and_then_the_takeover(self):
        # Told of B only (JavaWorker gives it its workspace's daemon): A only through B's trailer.
        w = JavaWorker(self.b, "worker", "--pipeline", "p0", "--tasks", "0,1",
                       "--worker-id", "javaw")
        redirected = w.next("disconnected")
        self.assertEqual(redirected["code"], "UNAVAILABLE", redirected)
        self.assertEqual(redirected["leader"], f"127.0.0.1:{self.a.port}", redirected)
        first = w.next("welcome")
        self.assertEqual(first["leader_epoch"], self.a.metric("ckptd_leader_epoch"))
        done = w.next("complete")["checkpoint_id"]
        self.a.daemon.kill()
        self.a.daemon.wait()
        again = w.next("welcome", lambda e: e["leader_epoch"] > first["leader_epoch"],
                       timeout=self.TTL_MS / 1000 + WAIT_S)
        self.assertEqual(self.b.role(), "leader")
        self.assertEqual(again["leader_epoch"], self.b.metric("ckptd_leader_epoch"))
        self.assertGreaterEqual(again["last_completed"], done)
        w.next("complete", lambda e: e["checkpoint_id"] > again["last_completed"])
        self.assertFalse([e for e in w.all("state") if e.get("state") in ("STOPPED", "FAILED")])


class JavaSdkTlsTest(unittest.TestCase):
    """TLS on the gRPC port and auth on: the worker's job is open to one token principal and one
    certificate principal (a worker with the CA alone and no credentials would be refused)."""

    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        tls = e2e.start_tls_auth_daemon(self.ws, JOB, "java", CONFIG)
        self.certs, self.client = tls.certs, tls.client
        self.token_path, self.wrong_token_path = tls.token_path, tls.wrong_token_path

    def tearDown(self):
        self.ws.close()

    def worker(self, *args):
        """A worker with --ca-file. Without netty-tcnative on the build's class path (the build
        found no libnetty-tcnative-java/-jni: client/java/CMakeLists.txt) this JVM's Netty
        cannot do TLS for gRPC, which the SDK's PipelineWorker constructor reports as
        IllegalArgumentException (SmallWorker: exit 2): the test is then skipped (failed in CI,
        which must have it). With it, TLS must work."""
        w = JavaWorker(self.ws, f"worker{len(self.ws.procs)}", "--pipeline", "p0",
                       "--tasks", "0,1", "--worker-id", "javaw",
                       "--ca-file", self.certs.ca.cert, *args)
        e2e.wait_until(lambda: w.events() or w.proc.poll() is not None, WAIT_S,
                       "the worker to start")
        if not w.events() and w.proc.poll() == 2 and "cannot negotiate ALPN" in w.stderr():
            with open(os.path.join(BUILD_DIR, "java", "classpath.txt")) as f:
                self.assertNotIn("netty-tcnative", f.read(), w.stderr())
            e2e.need_tool(self, False, "netty-tcnative (Debian's libnetty-tcnative-java and -jni), "
                          "so no TLS for gRPC in this JVM: " + w.stderr().strip())
        return w

    def complete_a_round(self, w, principal):
        self.assertEqual(w.proc.wait(timeout=WAIT_S), 0, w.stderr())
        self.assertEqual(w.next("welcome")["restore_checkpoint_id"], 0)
        cid = w.next("trigger")["checkpoint_id"]
        w.next("complete", lambda e: e["checkpoint_id"] == cid)
        self.assertEqual(w.all("disconnected"), [])
        self.assertEqual(w.all("stopped")[-1]["connects"], 1)
        log = self.ws.read_log("ckptd.log")
        self.assertIn(f"worker javaw registered 2 task(s) (session 1, principal {principal})", log)
        e2e.wait_until(lambda: "worker javaw said goodbye" in self.ws.read_log("ckptd.log"), 5,
                       "the daemon to release the tasks on goodbye")

    def test_a_round_completes_over_tls_with_a_bearer_token(self):
        self.complete_a_round(
            self.worker("--token-file", self.token_path, "--exit-after-completes", "1"),
            "java-token")

    def test_a_round_completes_over_mutual_tls_with_a_client_certificate(self):
        self.complete_a_round(
            self.worker("--cert-file", self.client.cert, "--key-file", self.client.key,
                        "--exit-after-completes", "1"), "java-cert")

    def test_a_wrong_token_is_refused_and_not_retried(self):
        w = self.worker("--token-file", self.wrong_token_path)
        refused = w.next("disconnected")
        self.assertEqual(refused["code"], "UNAUTHENTICATED", refused)
        self.assertIn("token refused", refused["message"])
        self.assertFalse(refused["was_connected"])
        self.assertFalse(refused["will_retry"])
        self.assertEqual(w.proc.wait(timeout=WAIT_S), 1, "stopped for good")
        self.assertEqual(len(w.all("connecting")), 1, "one hello, no retry")
        self.assertEqual(w.all("welcome"), [])
        self.assertEqual(w.all("stopped")[-1]["connects"], 0)
        self.assertEqual(self.ws.metric('ckptd_auth_denied_total{reason="unknown_token"}'), 1)
        self.assertNotIn("not-the-token", self.ws.read_log("ckptd.log"), "never the secret")


if __name__ == "__main__":
    e2e.main(globals())
