"""Verified restore with real processes (docs/PROTOCOL.md, "Verified restore"): a task fails its
restore of the newest checkpoint (ckpt-worker-sim --fail-restore N: its restore handler throws, the
SDK sends restore_result ok false); the daemon marks N unrestorable, moves the pipeline to the
newest older checkpoint, and the workers come back to it. No id is reused, N is never offered
again, also after kill -9 of the daemon before any newer checkpoint completed (the restart finds
N marked and falls back again). With no older checkpoint left the pipeline is FAILED and its
workers are held back: never a start without state.
"""
import json
import signal
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None


def config(retained):
    return ("lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" +
            e2e.declared_pipelines("vr", 1, interval_ms=200, timeout_ms=60000,
                                   retained=retained))


class VerifiedRestoreTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.events = self.ws.path("events.log")

    def tearDown(self):
        self.ws.close()

    def events_of(self, kind, after=0):
        return [e for e in e2e.read_events(self.events)[after:] if e[0] == kind]

    def start_sim(self, *flags):
        return self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                             "--job", "vr", "--pipelines", "1", "--tasks-per-pipeline", "2",
                             "--event-log", self.events, "--json", *flags, log="sim.log")

    def ctl_json(self, *args):
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                            *args, "-o", "json"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def listed(self):
        """checkpoint id -> its `checkpoint list` entry (completed ones)."""
        entries = self.ctl_json("checkpoint", "list", "vr", "p0", "--limit", "50")
        return {c["checkpoint_id"]: c for c in entries if c["status"] == "COMPLETED"}

    def stored_ids(self):
        with self.ws.db() as db:
            return sorted(r[0] for r in db.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE job_id='vr' AND pipeline_id='p0'"))

    def test_a_failed_restore_falls_back_and_the_failed_checkpoint_never_comes_back(self):
        daemon = self.ws.start_daemon(self.ws.write_config(config(retained=5)))
        sim = self.start_sim()
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 6, 30, "6 checkpoints")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))
        stored = self.stored_ids()
        failing, older = stored[-1], stored[-2]
        triggered_before = max(e[3] for e in self.events_of("trigger"))

        # Its restore of the newest fails; rounds are held (acks 10 min late) so that nothing
        # newer completes before the kill below.
        mark = len(e2e.read_events(self.events))
        sim = self.start_sim("--fail-restore", str(failing), "--ack-delay-ms", "600000")
        e2e.wait_until(lambda: any(e[3] == older for e in self.events_of("restore", mark)), 30,
                       f"the workers to come back to checkpoint {older}")
        self.assertEqual([e[3] for e in self.events_of("restore_failed", mark)], [failing])
        restores = [e[3] for e in self.events_of("restore", mark)]
        self.assertEqual(restores, [failing, older], "offered once, then the one before it")
        listed = self.listed()
        self.assertTrue(listed[failing]["unrestorable"])
        self.assertFalse(listed[older]["unrestorable"])
        self.assertEqual(self.ws.metric("ckptd_restore_failures_total"), 1)
        log = self.ws.read_log("ckptd.log")
        self.assertIn(f"restored to checkpoint vr/p0@{older}: restore of {failing} failed on "
                      f"task 0: ckpt-worker-sim --fail-restore {failing}", log)
        e2e.wait_until(lambda: any(e[3] > triggered_before
                                   for e in self.events_of("trigger", mark)), 10,
                       "a round after the fallback")
        self.assertTrue(all(e[3] > triggered_before for e in self.events_of("trigger", mark)),
                        "an id was handed out again")

        # kill -9 before anything newer completed: the store's newest is still the marked one.
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        self.assertEqual(self.stored_ids()[-1], failing)
        restart = len(e2e.read_events(self.events))
        daemon = self.ws.start_daemon(self.ws.path("ckptd.yaml"))
        e2e.wait_until(lambda: self.events_of("restore", restart), 30,
                       "the workers to come back after the restart")
        self.assertEqual({e[3] for e in self.events_of("restore", restart)}, {older},
                         "the marked checkpoint is never offered again")
        self.assertEqual(self.events_of("restore_failed", restart), [])
        self.assertTrue(self.listed()[failing]["unrestorable"], "the mark is durable")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))

        # Healthy workers: the pipeline goes on from there, above every id it ever handed out.
        go_on = len(e2e.read_events(self.events))
        sim = self.start_sim()
        e2e.wait_until(lambda: len(self.events_of("complete", go_on)) >= 3, 30,
                       "checkpoints after the fallback")
        self.assertEqual([e[3] for e in self.events_of("restore", go_on)][:1], [older])
        triggers = [e[3] for e in self.events_of("trigger")]
        self.assertEqual(triggers, sorted(set(triggers)), "a trigger id repeated or went back")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))
        self.assertEqual(e2e.stop(daemon), 0, self.ws.read_log("ckptd.log"))

    def test_with_no_older_checkpoint_the_pipeline_fails_and_holds_its_workers(self):
        daemon = self.ws.start_daemon(self.ws.write_config(config(retained=1)))
        sim = self.start_sim()
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 3, 30, "3 checkpoints")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))
        only = self.stored_ids()
        self.assertEqual(len(only), 1, "retained 1: the history holds the newest only")

        mark = len(e2e.read_events(self.events))
        sim = self.start_sim("--fail-restore", str(only[0]))
        e2e.wait_until(lambda: self.ctl_json("pipeline", "get", "vr", "p0")["state"] == "FAILED",
                       30, "the pipeline to fail")
        pipeline = self.ctl_json("pipeline", "get", "vr", "p0")
        self.assertIn(f"restore of {only[0]} failed on task 0", pipeline["state_reason"])
        self.assertIn("no older retained checkpoint", pipeline["state_reason"])
        why = self.ctl_json("pipeline", "why", "vr", "p0")
        self.assertIn("no older retained checkpoint", why["state_reason"])
        # The workers hear FAILED, and are never handed a start without state.
        e2e.wait_until(lambda: any(e[4] == "FAILED" for e in self.events_of("state", mark)), 30,
                       "the workers to hear FAILED")
        self.assertEqual([e[3] for e in self.events_of("restore", mark)], [only[0]])
        self.assertEqual(self.events_of("trigger", mark), [])
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))

        # A worker connecting now is held back as well (welcome.restore_withheld).
        again = len(e2e.read_events(self.events))
        sim = self.start_sim()
        e2e.wait_until(lambda: any(e[4] == "FAILED" for e in self.events_of("state", again)), 30,
                       "a new worker to hear FAILED")
        self.assertEqual(self.events_of("restore", again), [])
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("sim.log"))
        self.assertEqual(e2e.stop(daemon), 0, self.ws.read_log("ckptd.log"))


if __name__ == "__main__":
    e2e.main(globals())
