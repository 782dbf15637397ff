"""Positions with real processes (docs/ALIGNMENT.md, "Positions (per pipeline and per group)"): the
simulator gives every task a position advancing at a fixed rate, reports it in heartbeats and
snapshots when it reaches a trigger's position. Every completed checkpoint is taken at a multiple of
position_interval, each past the last; a round whose position a task had already passed is declined
and the next one steps further; a restarted worker resumes from the restore point's position; and a
pipeline whose tasks report no position triggers nothing and says why.
"""
import json
import signal
import subprocess
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None
RATE = 100            # positions per second, per task
POSITION_INTERVAL = 100

CONFIG = "lease_ttl_ms: 2000\nheartbeat_interval_ms: 100\n" + e2e.declared_pipelines(
    "pos", 2, interval_ms=200, timeout_ms=5000, tolerable_failures=1000,
    position_interval=POSITION_INTERVAL)
# Heartbeats a second apart, and the interval, not the positions, holding each trigger: when it
# fires, the positions the daemon knows are up to a second old.
SLOW_HEARTBEATS = "lease_ttl_ms: 5000\nheartbeat_interval_ms: 1000\n" + e2e.declared_pipelines(
    "pos", 1, interval_ms=2300, timeout_ms=5000, tolerable_failures=1000,
    position_interval=POSITION_INTERVAL)


class PositionsTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        slow = self._testMethodName.startswith("test_a_passed")
        self.config = self.ws.write_config(SLOW_HEARTBEATS if slow else CONFIG)
        self.events = self.ws.path("events.log")
        self.daemon = self.ws.start_daemon(self.config)

    def tearDown(self):
        self.ws.close()

    def ctl(self, *args):
        return subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                               *args], capture_output=True, text=True, timeout=60)

    def run_sim(self, *extra, until, what, pipelines=2, timeout=60):
        """Runs the simulator until `until()` holds (or `timeout` passes), then stops it with
        SIGINT; returns its --json summary."""
        out = self.ws.path(f"sim-{time.monotonic_ns()}.json")
        with open(out, "w") as stdout:
            proc = subprocess.Popen(
                [self.ws.binary("ckpt-worker-sim"), "--server", f"127.0.0.1:{self.ws.port}",
                 "--job", "pos", "--pipelines", str(pipelines), "--tasks-per-pipeline", "2",
                 "--event-log", self.events, "--json", *extra],
                stdout=stdout, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            e2e.wait_until(lambda: until() or proc.poll() is not None, timeout, what)
            self.assertIsNone(proc.poll(), "the simulator exited early")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        self.assertEqual(proc.returncode, 0)
        with open(out) as f:
            return json.loads(f.read())

    def events_of(self, kind):
        return [e for e in e2e.read_events(self.events) if e[0] == kind]

    def stored_positions(self, pipeline):
        with self.ws.db() as db:
            return [p for (p,) in db.execute(
                "SELECT position FROM checkpoints WHERE job_id='pos' AND pipeline_id=? "
                "ORDER BY checkpoint_id", (pipeline,))]

    def test_checkpoints_are_taken_at_the_positions_the_triggers_name(self):
        # Each round waits for its tasks to pass the last position by an interval, then for them
        # to reach the next multiple: two intervals of positions (2 s) a round.
        started = time.monotonic()
        summary = self.run_sim(
            "--positions", str(RATE),
            until=lambda: min(len(self.stored_positions(p)) for p in ("p0", "p1")) >= 2,
            what="two checkpoints of each pipeline")
        elapsed = time.monotonic() - started
        self.assertGreaterEqual(summary["aligned_rounds"], 4, summary)
        for pipeline in ("p0", "p1"):
            positions = self.stored_positions(pipeline)
            self.assertTrue(positions, pipeline)
            for p in positions:
                self.assertGreater(p, 0)
                self.assertEqual(p % POSITION_INTERVAL, 0, positions)
            self.assertEqual(positions, sorted(set(positions)),
                             f"each checkpoint of {pipeline} past the last: {positions}")
        # With a 200 ms interval the positions, not the clock, set the pace: at most one round
        # per interval of positions.
        self.assertLessEqual(summary["completes"] // 2,
                             int(elapsed * RATE / POSITION_INTERVAL) + 1, summary)

        # Shown to operators: the pipeline's position_interval, the restore point's position, and
        # each checkpoint's.
        got = self.ctl("-o", "json", "pipeline", "get", "pos", "p0")
        self.assertEqual(got.returncode, 0, got.stderr)
        pipeline = json.loads(got.stdout)
        self.assertEqual(pipeline["position_interval"], POSITION_INTERVAL)
        newest = self.stored_positions("p0")[-1]
        self.assertEqual(pipeline["restore"]["position"], newest)
        listed = self.ctl("-o", "json", "checkpoint", "list", "pos", "p0")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        completed = [c for c in json.loads(listed.stdout) if c["status"] == "COMPLETED"]
        self.assertTrue(completed)
        self.assertTrue(all(c["position"] % POSITION_INTERVAL == 0 and c["position"] > 0
                            for c in completed), completed)

        # A worker starting again resumes from the restore point's position: its first round is
        # past it, not back at the start.
        self.run_sim("--positions", str(RATE),
                     until=lambda: self.stored_positions("p0")[-1] > newest,
                     what="a checkpoint of the restarted worker")
        positions = self.stored_positions("p0")
        self.assertGreater(positions[-1], newest, positions)
        self.assertEqual(positions, sorted(set(positions)), positions)

    def test_a_passed_position_is_declined_and_later_rounds_still_align(self):
        # With heartbeats a second apart the tasks run up to 150 positions ahead of what the
        # daemon knows: a trigger often names a position they already passed. They decline it; the
        # round after asks for one interval more, which they often reach.
        summary = self.run_sim(
            "--positions", "200", pipelines=1,
            until=lambda: self.events_of("passed") and self.events_of("aligned"),
            what="a passed position and an aligned round")
        self.assertGreater(summary["positions_passed"], 0, summary)
        self.assertGreater(summary["aligned_rounds"], 0, summary)
        stored = self.stored_positions("p0")
        self.assertTrue(stored and all(p % POSITION_INTERVAL == 0 for p in stored), stored)

    def test_without_positions_nothing_triggers_and_why_says_so(self):
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "pos", "--pipelines", "2", "--tasks-per-pipeline", "2",
                            "--event-log", self.events)
        e2e.wait_until(lambda: self.ctl("pipeline", "get", "pos", "p0").stdout.find(
            "RUNNING") >= 0, 30, "the simulator to register p0")
        def explain():
            why = self.ctl("-o", "json", "pipeline", "why", "pos", "p0")
            self.assertEqual(why.returncode, 0, why.stderr)
            return json.loads(why.stdout)
        e2e.wait_until(lambda: explain()["holdup"] == "WAITING_FOR_POSITIONS", 10,
                       "p0 to wait for positions")
        # A negative needs a window: five intervals (and ten heartbeats) without a trigger.
        window_end = time.monotonic() + 1.0
        while time.monotonic() < window_end:
            self.assertFalse([e for e in e2e.read_events(self.events) if e[0] == "trigger"])
            time.sleep(0.1)
        explanation = explain()
        self.assertEqual(explanation["holdup"], "WAITING_FOR_POSITIONS", explanation)
        self.assertEqual(explanation["position_needed"], POSITION_INTERVAL)
        self.assertEqual(explanation["tasks_total"], 2)
        self.assertIn("waiting for positions", explanation["summary"])
        self.assertFalse([e for e in e2e.read_events(self.events) if e[0] == "trigger"])
        e2e.stop(sim)


if __name__ == "__main__":
    e2e.main(globals())
