"""ckptd under systemd's notify protocol, with NOTIFY_SOCKET pointing at a datagram socket this test
owns (this machine's PID 1 is not systemd): READY=1 only once the gRPC port accepts, WATCHDOG=1
pings at half of WATCHDOG_USEC, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around SIGHUP,
STOPPING=1 on SIGTERM."""
import os
import signal
import socket
import subprocess
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None


class NotifySocket:
    """A unix datagram socket that records each message with the time it arrived."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, {key: value}, raw)

    def receive(self, timeout):
        """Waits up to `timeout` s for one message; returns its fields or None."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            return None
        fields = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
        self.messages.append((time.monotonic(), fields, data))
        return fields

    def wait_for(self, key, timeout, on_message=None):
        """Receives until a message has `key`; returns its fields. Fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = self.receive(max(0.01, deadline - time.monotonic()))
            if fields is None:
                continue
            if on_message:
                on_message(fields)
            if key in fields:
                return fields
        raise AssertionError(f"no {key} within {timeout}s; got {[m[2] for m in self.messages]}")

    def close(self):
        self.sock.close()


class SystemdNotifyTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.notify = NotifySocket(self.ws.path("notify.sock"))

    def tearDown(self):
        self.notify.close()
        self.ws.close()

    def start(self, config, watchdog_usec=None, watchdog_pid="self"):
        env = dict(os.environ, NOTIFY_SOCKET=self.notify.path)
        argv = [self.ws.binary("ckptd"), "--config", config]
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
            if watchdog_pid == "self":
                # systemd names the service's main pid; exec keeps the shell's pid for ckptd.
                argv = ["sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"', *argv]
            else:
                env["WATCHDOG_PID"] = str(watchdog_pid)
        log = open(self.ws.path("ckptd.log"), "ab")
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        log.close()
        self.ws.procs.append(proc)
        return proc

    def port_accepts(self, port=None):
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port or self.ws.port)) == 0

    def test_ready_after_the_port_accepts_then_stopping(self):
        # A few declared pipelines, so that start has some work before READY.
        pipelines = "".join(f"  - {{job_id: j, pipeline_id: p{i}, parallelism: 2}}\n"
                            for i in range(20))
        proc = self.start(self.ws.write_config("pipelines:\n" + pipelines))
        accepted_before_ready = []

        def check(fields):
            if "READY" in fields:
                accepted_before_ready.append((self.port_accepts(),
                                              self.port_accepts(self.ws.metrics_port)))

        ready = self.notify.wait_for("READY", 30, on_message=check)
        self.assertEqual(ready["READY"], "1")
        self.assertEqual(accepted_before_ready, [(True, True)],
                         "READY=1 came before the gRPC and metrics ports accepted")
        self.assertIn("STATUS", ready)
        self.assertIn("serving gRPC", ready["STATUS"])
        proc.send_signal(signal.SIGTERM)
        stopping = self.notify.wait_for("STOPPING", 20)
        self.assertEqual(stopping["STOPPING"], "1")
        self.assertEqual(proc.wait(timeout=20), 0)

    def test_no_ready_when_a_port_cannot_be_bound(self):
        # The metrics port is taken: start fails, and systemd must never have heard READY=1.
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", self.ws.metrics_port))
            busy.listen()
            proc = self.start(self.ws.write_config(""))
            self.assertNotEqual(proc.wait(timeout=30), 0)
        while self.notify.receive(0.2) is not None:
            pass
        ready = [m[2] for m in self.notify.messages if "READY" in m[1]]
        self.assertEqual(ready, [], "READY=1 sent by a daemon that failed to start")
        self.assertIn(str(self.ws.metrics_port), self.ws.read_log("ckptd.log"))

    def test_watchdog_pings_keep_coming(self):
        proc = self.start(self.ws.write_config(""), watchdog_usec=400_000)
        self.notify.wait_for("READY", 30)
        pings = []
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            fields = self.notify.receive(0.5)
            if fields and fields.get("WATCHDOG") == "1":
                pings.append(time.monotonic())
        # Every 200 ms (half of 400 ms) for 2 s: about 10; a loop that stopped would send none.
        self.assertGreaterEqual(len(pings), 6, f"only {len(pings)} pings in 2 s")
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        self.assertLess(max(gaps), 0.4, f"a gap reached the watchdog interval: {gaps}")
        self.assertIn("systemd watchdog: 400 ms", self.ws.read_log("ckptd.log"))
        self.assertEqual(e2e.stop(proc), 0)

    def test_no_pings_for_another_pid(self):
        # WATCHDOG_PID names another process (systemd's way of saying "not you"): stay quiet.
        proc = self.start(self.ws.write_config(""), watchdog_usec=200_000, watchdog_pid=1)
        self.notify.wait_for("READY", 30)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            fields = self.notify.receive(0.2)
            self.assertFalse(fields and "WATCHDOG" in fields, "pinged for a watchdog not ours")
        self.assertEqual(e2e.stop(proc), 0)

    def test_reload_sends_reloading_then_ready_and_applies_the_file(self):
        config = self.ws.write_config("log:\n  level: info\n")
        proc = self.start(config)
        self.notify.wait_for("READY", 30)

        with open(config, "a") as f:
            f.write("pipelines:\n  - {job_id: j, pipeline_id: added, parallelism: 1}\n")
        before = time.monotonic_ns() // 1000
        proc.send_signal(signal.SIGHUP)
        reloading = self.notify.wait_for("RELOADING", 20)
        self.assertEqual(reloading["RELOADING"], "1")
        usec = int(reloading["MONOTONIC_USEC"])
        self.assertGreaterEqual(usec, before - 1_000_000)  # CLOCK_MONOTONIC, as systemd reads it
        self.assertLessEqual(usec, time.monotonic_ns() // 1000)
        self.assertEqual(self.notify.wait_for("READY", 20)["READY"], "1")
        e2e.wait_until(lambda: "reload done: 1 pipeline(s) created" in self.ws.read_log("ckptd.log"),
                       10, "the reload to create the declared pipeline")

        # A file that does not parse: reported, the running config kept, READY again, still serving.
        with open(config, "w") as f:
            f.write(f"listen: 127.0.0.1:{self.ws.port}\nthreads: [oops\n")
        proc.send_signal(signal.SIGHUP)
        self.notify.wait_for("RELOADING", 20)
        self.notify.wait_for("READY", 20)
        log = self.ws.read_log("ckptd.log")
        self.assertIn("reload refused, keeping the running config", log)
        self.assertIn(config + ":", log)
        self.assertIsNone(proc.poll())
        self.assertTrue(self.port_accepts())

        # A restart-only key changed: said so, not silently ignored.
        with open(config, "w") as f:
            f.write(f"listen: 127.0.0.1:{self.ws.port}\nmetrics_listen: \"\"\n"
                    f"data_dir: {self.ws.path('data')}\nthreads: 3\n")
        proc.send_signal(signal.SIGHUP)
        self.notify.wait_for("RELOADING", 20)
        self.notify.wait_for("READY", 20)
        log = self.ws.read_log("ckptd.log")
        self.assertIn("reload: threads changed", log)
        self.assertIn("needs a restart", log)
        self.assertIn("reload: metrics_listen changed", log)
        self.assertEqual(e2e.stop(proc), 0)


if __name__ == "__main__":
    e2e.main(globals())
