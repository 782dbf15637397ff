"""ckptd and ckpt-worker-sim as processes under abuse: a simulator frozen (SIGSTOP) past its lease
comes back by itself after SIGCONT; a daemon stopped with SIGTERM while rounds are pending exits 0
within its grace period, and the simulator, never restarted, reconnects to the restarted daemon."""
import json
import signal
import subprocess
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None
PIPELINES = 4
GRACE_MS = 5000


def config(interval_ms):
    return f"""
lease_ttl_ms: 1000
heartbeat_interval_ms: 250
shutdown_grace_ms: {GRACE_MS}
pipelines:
""" + "".join(f"""  - job_id: chaos
    pipeline_id: p{i}
    parallelism: 2
    interval_ms: {interval_ms}
    timeout_ms: 10000
    tolerable_failures: 1000
""" for i in range(PIPELINES))


class WorkerChaosTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.server = f"127.0.0.1:{self.ws.port}"
        self.events = self.ws.path("events.log")
        self.sim = None

    def tearDown(self):
        if self.sim is not None and self.sim.poll() is None:
            self.sim.send_signal(signal.SIGCONT)  # a stopped process would not die of SIGTERM
        self.ws.close()

    # --- helpers -------------------------------------------------------------------------------

    def pipelines(self):
        """`ckptctl pipeline list -o json` as {pipeline_id: object}; {} if the daemon is not up."""
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", self.server, "pipeline", "list",
                            "--job", "chaos", "-o", "json"],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            return {}
        return {p["pipeline_id"]: p for p in json.loads(r.stdout)}

    def wait_pipelines(self, pred, timeout, what):
        """Waits until pred(pipeline) holds for every pipeline; returns the last listing."""
        last = {}

        def check():
            nonlocal last
            last = self.pipelines()
            return len(last) == PIPELINES and all(pred(p) for p in last.values())

        try:
            e2e.wait_until(check, timeout, what)
        except AssertionError as e:
            raise AssertionError(f"{e}; last listing: {json.dumps(last, indent=1)}\n"
                                 f"simulator log:\n{self.ws.read_log('ckpt-worker-sim.log')[-3000:]}")
        return last

    def start_sim(self, ack_delay_ms):
        self.sim = self.ws.start("ckpt-worker-sim", "--server", self.server, "--job", "chaos",
                                 "--pipelines", str(PIPELINES), "--tasks-per-pipeline", "2",
                                 "--ack-delay-ms", str(ack_delay_ms), "--event-log", self.events)
        return self.sim

    def completes(self):
        return [e for e in e2e.read_events(self.events) if e[0] == "complete"]

    # --- tests ---------------------------------------------------------------------------------

    def test_frozen_simulator_loses_its_lease_and_comes_back_after_sigcont(self):
        daemon = self.ws.start_daemon(self.ws.write_config(config(interval_ms=100)))
        sim = self.start_sim(ack_delay_ms=5)
        self.wait_pipelines(lambda p: p["state"] == "RUNNING" and p["completed_count"] >= 2, 60,
                            "every pipeline RUNNING with checkpoints completed")

        frozen_at = time.monotonic()
        sim.send_signal(signal.SIGSTOP)
        frozen = self.wait_pipelines(
            lambda p: p["state"] == "WAITING_FOR_TASKS" and p["registered_tasks"] == 0
            and p["pending_checkpoint_id"] == 0, 30,
            "every pipeline WAITING_FOR_TASKS while the simulator is stopped")
        waited = time.monotonic() - frozen_at
        # Each stream was active at most a heartbeat (250 ms) before SIGSTOP.
        self.assertGreaterEqual(waited, 0.7, "tasks lost before the 1000 ms lease could expire")
        self.assertIsNone(sim.poll(), "the simulator died while stopped")
        for p in frozen.values():
            self.assertEqual(sorted(p["missing_tasks"]), ["0", "1"], p)
        # Frozen means frozen: nothing completes meanwhile.
        before = {k: p["completed_count"] for k, p in frozen.items()}
        self.assertEqual(before, {k: p["completed_count"] for k, p in self.pipelines().items()})

        sim.send_signal(signal.SIGCONT)
        after = self.wait_pipelines(
            lambda p: p["state"] == "RUNNING" and p["completed_count"] >= before[p["pipeline_id"]] + 3,
            60, "every pipeline RUNNING again and completing checkpoints after SIGCONT")
        for k, p in after.items():
            self.assertGreater(p["generation"], frozen[k]["generation"], "a return bumps it")
            self.assertEqual(p["registered_tasks"], 2, p)
        self.assertIsNone(sim.poll(), "the simulator exited instead of reconnecting")
        log = self.ws.read_log("ckptd.log")
        self.assertIn("lease expired", log)

        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))
        print(f"e2e worker chaos: frozen {waited:.1f}s until every lease expired; completed after "
              f"SIGCONT: {sorted(p['completed_count'] for p in after.values())}")

    def test_sigterm_with_pending_rounds_exits_cleanly_and_the_simulator_reconnects(self):
        conf = self.ws.write_config(config(interval_ms=200))
        daemon = self.ws.start_daemon(conf)
        sim = self.start_sim(ack_delay_ms=1500)  # longer than the interval: a round is mostly pending
        self.wait_pipelines(lambda p: p["completed_count"] >= 1 and p["pending_checkpoint_id"] != 0,
                            60, "every pipeline with a checkpoint completed and one pending")

        started = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        rc = daemon.wait(timeout=GRACE_MS / 1000 + 20)
        elapsed = time.monotonic() - started
        log = self.ws.read_log("ckptd.log")
        self.assertEqual(rc, 0, log[-3000:])
        # Pending rounds get the grace period; past it they are aborted; then the server stops
        # (at most 2 s more for calls to drain).
        self.assertLess(elapsed, GRACE_MS / 1000 + 2.5, f"exit took {elapsed:.1f}s\n{log[-3000:]}")
        self.assertIn("shutdown complete", log)
        # The simulator acks within 1.5 s, inside the 5 s grace: the pending rounds finished.
        self.assertNotIn("still pending after the grace period", log)
        self.assertIsNone(sim.poll(), "the simulator exited when the daemon went away")
        # The newest durable checkpoint of each pipeline, from the store the daemon left behind.
        with self.ws.db() as db:
            last_before = dict(db.execute("SELECT pipeline_id, MAX(checkpoint_id) FROM checkpoints "
                                          "WHERE job_id='chaos' GROUP BY pipeline_id"))
        self.assertEqual(len(last_before), PIPELINES, last_before)

        daemon = self.ws.start_daemon(conf)
        after = self.wait_pipelines(lambda p: p["state"] == "RUNNING" and p["completed_count"] >= 1
                                    and p["last_completed_checkpoint_id"]
                                    > last_before.get(p["pipeline_id"], 0), 60,
                                    "checkpoints completing again after the restart")
        # The simulator heard of them too.
        def sim_saw_new_completes():
            seen = {}
            for e in self.completes():
                seen[e[2]] = max(seen.get(e[2], 0), e[3])
            return all(seen.get(f"p{i}", 0) > last_before.get(f"p{i}", 0) for i in range(PIPELINES))
        e2e.wait_until(sim_saw_new_completes, 30, "the simulator to see completes after the restart")
        self.assertIsNone(sim.poll(), "the simulator exited")
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))
        print(f"e2e worker chaos: SIGTERM with pending rounds, exit 0 after {elapsed:.2f}s; after "
              f"the restart: {sorted(p['last_completed_checkpoint_id'] for p in after.values())}")


if __name__ == "__main__":
    e2e.main(globals())
