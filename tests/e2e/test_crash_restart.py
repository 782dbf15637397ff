"""ckptd and ckpt-worker-sim as processes: checkpoints complete; after kill -9 and a restart no
completed checkpoint is lost (within `retained`), no id is reused, and no pipeline stays stuck.

CI runs a short version. The full proof run of issue 4 (200 pipelines, 20 rounds):
  CKPT_CRASH_ROUNDS=20 CKPT_CRASH_PIPELINES=200 python3 tests/e2e/test_crash_restart.py \
      --build-dir build
"""
import collections
import os
import random
import signal
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None
ROUNDS = int(os.environ.get("CKPT_CRASH_ROUNDS", "3"))
PIPELINES = int(os.environ.get("CKPT_CRASH_PIPELINES", "4"))

CONFIG = "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" + e2e.declared_pipelines(
    "e2e", PIPELINES, interval_ms=100, timeout_ms=5000, retained=100000)


class CrashRestartTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(CONFIG)
        self.events = self.ws.path("events.log")

    def tearDown(self):
        self.ws.close()

    def completes(self):
        return [e for e in e2e.read_events(self.events) if e[0] == "complete"]

    def test_kill_dash_nine_loses_nothing_and_reuses_no_id(self):
        rng = random.Random(os.getpid())
        daemon = self.ws.start_daemon(self.config)
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "e2e", "--pipelines", str(PIPELINES),
                            "--tasks-per-pipeline", "2",
                            "--ack-delay-ms", "5", "--event-log", self.events)
        for round_no in range(ROUNDS):
            # Kill at a random moment: after a random number of further completes, plus a
            # random slice of an interval so the kill lands mid-round as often as between rounds.
            target = len(self.completes()) + rng.randint(5, 30)
            e2e.wait_until(lambda: len(self.completes()) >= target, 60,
                           f"checkpoints to complete (round {round_no})")
            time.sleep(rng.uniform(0, 0.1))
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            daemon = self.ws.start_daemon(self.config)
        # The simulator reconnects by itself and every pipeline completes a new checkpoint.
        seen_before = len(self.completes())

        def stuck():
            fresh = self.completes()[seen_before:]
            return {f"p{i}" for i in range(PIPELINES)} - {e[2] for e in fresh}
        e2e.wait_until(lambda: not stuck(), 60,
                       "every pipeline to complete a checkpoint after the last restart")
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))

        events = e2e.read_events(self.events)
        stored = collections.defaultdict(set)
        with self.ws.db() as db:
            for pipeline, cid in db.execute(
                    "SELECT pipeline_id, checkpoint_id FROM checkpoints WHERE job_id='e2e'"):
                stored[pipeline].add(cid)
        completed = [(e[2], e[3]) for e in events if e[0] == "complete"]
        missing = [c for c in completed if c[1] not in stored[c[0]]]
        self.assertEqual(missing, [], "told complete but not in the store")

        triggers = e2e.trigger_ids_by_pipeline(events)
        self.assertEqual(e2e.ids_out_of_order(triggers), [],
                         "trigger ids reused or reordered (pipeline, id, the id after it)")
        print(f"e2e crash/restart: {PIPELINES} pipelines, {ROUNDS} kill -9 rounds, "
              f"{len(completed)} completes verified in the store, "
              f"{sum(len(v) for v in triggers.values())} trigger ids strictly increasing")


if __name__ == "__main__":
    e2e.main(globals())
