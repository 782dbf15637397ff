"""The restore loop with real processes (docs/PROTOCOL.md, "Restore and release"): the simulator
writes a real file per task per checkpoint (--state-dir), acks its path, deletes it when released,
and checks every file a restore point hands back. After kill -9 and a restart each reconnecting
worker is handed the newest durable checkpoint's own files; the files of every released checkpoint
are gone; those of every retained checkpoint and savepoint are still there.
"""
import collections
import json
import os
import random
import signal
import subprocess
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None
PIPELINES = 3
RETAINED = 3

CONFIG = "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" + e2e.declared_pipelines(
    "rl", PIPELINES, interval_ms=100, timeout_ms=5000, retained=RETAINED)


class RestoreLoopTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(CONFIG)
        self.events = self.ws.path("events.log")
        self.state_dir = self.ws.path("state")

    def tearDown(self):
        self.ws.close()

    def events_of(self, kind):
        return [e for e in e2e.read_events(self.events) if e[0] == kind]

    def start_sim(self):
        return self.start_sim_of(PIPELINES)

    def start_sim_of(self, pipelines):
        return self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                             "--job", "rl", "--pipelines", str(pipelines),
                             "--tasks-per-pipeline", "2", "--ack-delay-ms", "5",
                             "--event-log", self.events, "--state-dir", self.state_dir,
                             "--json")

    def ctl(self, *args):
        return subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                               *args], capture_output=True, text=True, timeout=60)

    def files_on_disk(self, job="rl"):
        """pipeline -> {checkpoint id: set of task files}."""
        found = collections.defaultdict(dict)
        root = os.path.join(self.state_dir, job)
        if not os.path.isdir(root):
            return found
        for pipeline in os.listdir(root):
            for chk in os.listdir(os.path.join(root, pipeline)):
                tasks = set(os.listdir(os.path.join(root, pipeline, chk)))
                if tasks:
                    found[pipeline][int(chk[len("chk-"):])] = tasks
        return found

    def stored_of(self, job):
        """pipeline -> {checkpoint id: kind} of the history in the store."""
        history = collections.defaultdict(dict)
        with self.ws.db() as db:
            for pipeline, cid, kind in db.execute(
                    "SELECT pipeline_id, checkpoint_id, kind FROM checkpoints WHERE job_id=?",
                    (job,)):
                history[pipeline][cid] = kind
        return history

    def stored(self):
        return self.stored_of("rl")

    def test_kill_dash_nine_restores_the_newest_durable_files_and_releases_the_rest(self):
        rng = random.Random(os.getpid())
        daemon = self.ws.start_daemon(self.config)
        sim = self.start_sim()
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 8 * PIPELINES, 60,
                       "checkpoints to complete")
        # A savepoint of p0 outlives every retention trim.
        out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        savepoint_ids = [e[3] for e in self.events_of("complete") if e[4] == "SAVEPOINT"]
        self.assertEqual(len(savepoint_ids), 1)
        target = len(self.events_of("complete")) + 6 * PIPELINES
        e2e.wait_until(lambda: len(self.events_of("complete")) >= target, 60,
                       "more checkpoints to complete, pushing old ones out of retained")
        self.assertTrue(self.events_of("release"), "completions beyond retained release ids")

        time.sleep(rng.uniform(0, 0.1))  # lands mid-round as often as between rounds
        told_complete = collections.defaultdict(int)
        for e in self.events_of("complete"):
            told_complete[e[2]] = max(told_complete[e[2]], e[3])
        before = len(e2e.read_events(self.events))
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        daemon = self.ws.start_daemon(self.config)

        def restores_after():
            return [e for e in e2e.read_events(self.events)[before:] if e[0] == "restore"]
        e2e.wait_until(lambda: {e[2] for e in restores_after()} >=
                       {f"p{i}" for i in range(PIPELINES)}, 60,
                       "every pipeline's workers to reconnect and be handed a restore point")
        after = e2e.read_events(self.events)[before:]
        for pipeline in (f"p{i}" for i in range(PIPELINES)):
            restore = next(e for e in after if e[0] == "restore" and e[2] == pipeline)
            # The last durable one: at least every id a worker was told complete, and no round
            # triggered after it completed before the crash (the next trigger is above it).
            self.assertGreaterEqual(restore[3], told_complete[pipeline], pipeline)
            first_trigger = next((e[3] for e in after if e[0] == "trigger" and e[2] == pipeline),
                                 None)
            if first_trigger is not None:
                self.assertLess(restore[3], first_trigger, pipeline)
        e2e.wait_until(lambda: len(self.events_of("complete")) >= target + 4 * PIPELINES, 60,
                       "checkpoints to complete after the restart")

        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))
        summary = json.loads(self.ws.read_log("ckpt-worker-sim.log").strip().splitlines()[-1])
        self.assertEqual(summary["restore_files_missing"], 0, "a restore point's file was deleted")
        self.assertGreaterEqual(summary["restores"], PIPELINES)
        self.assertGreater(summary["releases"], 0)
        self.assertEqual(self.events_of("restore_missing"), [])

        stored = self.stored()
        files = self.files_on_disk()
        released = collections.defaultdict(set)
        for e in self.events_of("release"):
            released[e[2]].add(e[3])
        for pipeline in (f"p{i}" for i in range(PIPELINES)):
            history = stored[pipeline]
            self.assertEqual(sum(1 for kind in history.values() if kind == 0), RETAINED, pipeline)
            on_disk = files[pipeline]
            for cid in history:
                self.assertEqual(on_disk.get(cid), {"0", "1"},
                                 f"{pipeline}: the files of retained checkpoint {cid}")
            self.assertFalse(released[pipeline] & set(on_disk),
                             f"{pipeline}: files of released checkpoints are left")
            self.assertFalse(released[pipeline] & set(history),
                             f"{pipeline}: a released id is still in the history")
            # Anything else on disk is a round that had not finished when the simulator stopped,
            # or one the last commit released after it left (a round with the store as it said
            # goodbye): that release is durable, for its next welcome.
            newest = max(history)
            with self.ws.db() as db:
                last_release = set(json.loads(db.execute(
                    "SELECT released_ids FROM pipelines WHERE job_id='rl' AND pipeline_id=?",
                    (pipeline,)).fetchone()[0]))
            leftovers = {cid for cid in on_disk
                         if cid not in history and cid <= newest and cid not in last_release}
            self.assertEqual(leftovers, set(), f"{pipeline}: state of ids no longer referenced; "
                             "what the worker saw of them: " + str(
                                 [e for e in e2e.read_events(self.events)
                                  if e[2] == pipeline and e[3] in leftovers]))
        self.assertIn(savepoint_ids[0], stored["p0"], "a savepoint is never released by retention")
        self.assertIn(savepoint_ids[0], files["p0"])


    def test_savepoints_are_capped_and_a_deleted_one_is_released(self):
        config = self.ws.write_config(
            "limits:\n  max_savepoints_per_pipeline: 2\n" +
            e2e.declared_pipelines("rl", 1, interval_ms=100, timeout_ms=5000, retained=2))
        daemon = self.ws.start_daemon(config)
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "rl", "--pipelines", "1", "--tasks-per-pipeline", "2",
                            "--event-log", self.events, "--state-dir", self.state_dir)
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 3, 60, "checkpoints to complete")
        for _ in range(2):
            out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("limits.max_savepoints_per_pipeline (2)", out.stdout + out.stderr)
        self.assertIn("ckptctl checkpoint delete rl p0", out.stdout + out.stderr)

        out = self.ctl("pipeline", "pause", "rl", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        e2e.wait_until(lambda: self.ctl("-o", "json", "pipeline", "get", "rl", "p0").stdout
                       .find('"pending_checkpoint_id": 0') >= 0, 30, "the pending round to end")
        newest = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl", "p0").stdout)[
            "last_completed_checkpoint_id"]
        out = self.ctl("checkpoint", "delete", "rl", "p0", str(newest))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("restore point", out.stderr)

        savepoints = sorted(e[3] for e in self.events_of("complete") if e[4] == "SAVEPOINT")
        self.assertEqual(len(savepoints), 2)
        self.assertIn(savepoints[0], self.files_on_disk()["p0"])
        out = self.ctl("-o", "json", "checkpoint", "delete", "rl", "p0", str(savepoints[0]))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(json.loads(out.stdout)["checkpoint_id"], savepoints[0])
        e2e.wait_until(lambda: savepoints[0] not in self.files_on_disk()["p0"], 30,
                       "the workers to delete the released savepoint's files")
        self.assertIn(savepoints[0], [e[3] for e in self.events_of("release")])
        self.assertNotIn(savepoints[0], self.stored()["p0"])
        out = self.ctl("checkpoint", "delete", "rl", "p0", str(savepoints[0]))
        self.assertEqual(out.returncode, 1, "gone already: " + out.stdout + out.stderr)

        out = self.ctl("pipeline", "resume", "rl", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
        self.assertEqual(out.returncode, 0, "room again: " + out.stdout + out.stderr)
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))


    def test_a_new_version_starts_from_a_savepoint_and_a_rollback_hands_it_out_again(self):
        config = self.ws.write_config(
            "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" +
            e2e.declared_pipelines("rl", 1, interval_ms=100, timeout_ms=5000, retained=2))
        daemon = self.ws.start_daemon(config)
        old = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "rl", "--pipelines", "1", "--tasks-per-pipeline", "2",
                            "--event-log", self.events, "--state-dir", self.state_dir, "--json")
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 3, 60, "checkpoints to complete")
        out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        savepoint = [e[3] for e in self.events_of("complete") if e[4] == "SAVEPOINT"][0]

        # A new job version with three tasks instead of two: rescaled, every state handed over.
        out = self.ctl("-o", "json", "pipeline", "create", "--job", "rl2", "--pipeline", "p0",
                       "--parallelism", "3", "--interval", "100ms",
                       "--restore-from", f"rl/p0@{savepoint}")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        restore = json.loads(out.stdout)["restore"]
        self.assertEqual((restore["source_job_id"], restore["source_pipeline_id"],
                          restore["checkpoint_id"], restore["rescaled"], restore["operator_set"]),
                         ("rl", "p0", savepoint, True, True))
        # While it is a restore point, it and its pipeline stay.
        out = self.ctl("checkpoint", "delete", "rl", "p0", str(savepoint))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("restore point", out.stderr)

        new_events = self.ws.path("events-v2.log")
        new = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "rl2", "--pipelines", "1", "--tasks-per-pipeline", "3",
                            "--event-log", new_events, "--state-dir", self.state_dir, "--json",
                            log="sim-v2.log")
        e2e.wait_until(lambda: [e for e in e2e.read_events(new_events) if e[0] == "complete"],
                       60, "the new version to complete a checkpoint")
        restores = [e for e in e2e.read_events(new_events) if e[0] == "restore"]
        self.assertEqual(restores[0][3], savepoint, "the new version starts from the savepoint")
        self.assertEqual([e for e in e2e.read_events(new_events) if e[0] == "restore_missing"], [])

        # A rollback of the old version to its savepoint: its workers come back to it.
        for args in (("pipeline", "pause", "rl", "p0"),):
            out = self.ctl(*args)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        e2e.wait_until(lambda: json.loads(self.ctl("-o", "json", "pipeline", "get", "rl", "p0")
                                          .stdout)["pending_checkpoint_id"] == 0,
                       30, "the pending round to end")
        before = len(self.events_of("restore"))
        out = self.ctl("pipeline", "restore", "rl", "p0", "--checkpoint", str(savepoint))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("PAUSED", out.stdout)
        e2e.wait_until(lambda: len(self.events_of("restore")) > before, 30,
                       "the old version's workers to come back")
        self.assertEqual(self.events_of("restore")[-1][3], savepoint)
        got = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl", "p0").stdout)
        self.assertEqual((got["restore"]["checkpoint_id"], got["restore"]["operator_set"],
                          got["state"]), (savepoint, True, "PAUSED"))
        self.assertGreater(got["last_completed_checkpoint_id"], savepoint)
        out = self.ctl("pipeline", "resume", "rl", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        seen = len(self.events_of("complete"))
        e2e.wait_until(lambda: len(self.events_of("complete")) > seen + 2, 30,
                       "checkpoints after the rollback")
        got = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl", "p0").stdout)
        self.assertFalse(got["restore"]["operator_set"], "a completion ends the rollback's point")
        # No pin holds the savepoint any more: it may go now, and its files with it.
        self.assertIn(savepoint, self.files_on_disk()["p0"], "a savepoint is never released")
        out = self.ctl("checkpoint", "delete", "rl", "p0", str(savepoint))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        e2e.wait_until(lambda: savepoint not in self.files_on_disk()["p0"], 30,
                       "the released savepoint's files to be deleted")

        for sim, log in ((old, "ckpt-worker-sim.log"), (new, "sim-v2.log")):
            self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log(log))
            summary = json.loads(self.ws.read_log(log).strip().splitlines()[-1])
            self.assertEqual(summary["restore_files_missing"], 0, log)
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))


    def test_a_deleted_pipeline_releases_everything_unless_another_restores_from_it(self):
        daemon = self.ws.start_daemon(self.ws.write_config("pipelines: []\n"))
        out = self.ctl("pipeline", "create", "--job", "del", "--pipeline", "p0",
                       "--parallelism", "2", "--interval", "100ms", "--retained", "2")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", "del", "--pipelines", "1", "--tasks-per-pipeline", "2",
                            "--event-log", self.events, "--state-dir", self.state_dir)
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 3, 60, "checkpoints to complete")
        out = self.ctl("savepoint", "--job", "del", "--pipeline", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        savepoint = [e[3] for e in self.events_of("complete") if e[4] == "SAVEPOINT"][0]
        out = self.ctl("pipeline", "create", "--job", "del2", "--pipeline", "p0",
                       "--parallelism", "2", "--restore-from", f"del/p0@{savepoint}")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

        # Another pipeline restores from its savepoint: it stays, and so does its state.
        out = self.ctl("pipeline", "delete", "del", "p0")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("restore point of other pipelines", out.stderr)
        self.assertIn("del2/p0", out.stderr)
        # Once that one is gone (it never ran), the first may go, with every file it had.
        out = self.ctl("pipeline", "delete", "del2", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        out = self.ctl("pipeline", "delete", "del", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        e2e.wait_until(lambda: not self.files_on_disk("del")["p0"], 30,
                       "the workers to delete every file of the deleted pipeline")
        released = {e[3] for e in self.events_of("release")}
        self.assertIn(savepoint, released, "its savepoints go with it")
        self.assertNotIn("p0", self.stored_of("del"))
        e2e.stop(sim, signal.SIGTERM)  # it waits for its pipeline to come back
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))


    def test_a_declared_pipeline_starts_from_the_checkpoint_its_file_names(self):
        base = e2e.declared_pipelines("rl", 1, interval_ms=100, timeout_ms=5000, retained=2)
        daemon = self.ws.start_daemon(self.ws.write_config(base))
        sim = self.start_sim_of(1)
        e2e.wait_until(lambda: len(self.events_of("complete")) >= 3, 60, "checkpoints to complete")
        out = self.ctl("savepoint", "--job", "rl", "--pipeline", "p0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        savepoint = [e[3] for e in self.events_of("complete") if e[4] == "SAVEPOINT"][0]

        def declared(job, restore_from):
            return (f"  - job_id: {job}\n    pipeline_id: p0\n    parallelism: 2\n"
                    f"    restore_from: {restore_from}\n")

        # On a reload: one created from the savepoint, one whose checkpoint does not exist is not.
        self.ws.write_config(
            base + declared("rl2", f"{{job_id: rl, pipeline_id: p0, checkpoint_id: {savepoint}}}")
            + declared("rl3", "{job_id: rl, pipeline_id: p0, checkpoint_id: 999999}"))
        daemon.send_signal(signal.SIGHUP)
        e2e.wait_until(lambda: "reload done" in self.ws.read_log("ckptd.log"), 30, "the reload")
        got = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl2", "p0").stdout)
        self.assertEqual((got["restore"]["checkpoint_id"], got["restore"]["source_job_id"],
                          got["restore"]["operator_set"]), (savepoint, "rl", True))
        out = self.ctl("pipeline", "get", "rl3", "p0")
        self.assertEqual(out.returncode, 1, "not created: " + out.stdout + out.stderr)
        self.assertIn("restore_from", self.ws.read_log("ckptd.log"))

        # At a start: one that names no id restores from the newest; the file's restore_from
        # applies only when a pipeline is created, so rl2 keeps what it has.
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))
        # The store's newest, not the workers': a round with the store when the simulator said
        # goodbye completes after it, unheard.
        newest = max(self.stored()["p0"])
        self.ws.write_config(
            base + declared("rl2", "{job_id: rl, pipeline_id: p0, checkpoint_id: 1}")
            + declared("rl4", "{job_id: rl, pipeline_id: p0}"))
        daemon = self.ws.start_daemon(self.ws.path("ckptd.yaml"))
        got = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl4", "p0").stdout)
        self.assertEqual((got["restore"]["checkpoint_id"], got["restore"]["operator_set"]),
                         (newest, True))
        got = json.loads(self.ctl("-o", "json", "pipeline", "get", "rl2", "p0").stdout)
        self.assertEqual(got["restore"]["checkpoint_id"], savepoint, "durable, and not redone")
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))

if __name__ == "__main__":
    e2e.main(globals())
