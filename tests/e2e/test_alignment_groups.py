"""Alignment groups with real processes (docs/PROTOCOL.md, "Aligned checkpoints";
docs/ALIGNMENT.md): three pipelines of one group, served by the simulator, checkpoint with one id
per round at one position; kill -9 while group rounds are being committed never leaves a round in
one member's store and not another's; a member without its worker holds the group and `pipeline why`
of the others names it.
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
KILLS = int(os.environ.get("CKPT_GROUP_KILLS", "3"))
POSITION_INTERVAL = 100


def config(interval_ms, position_interval=0):
    group = (f"alignment_groups:\n  - name: ledger\n    interval_ms: {interval_ms}\n"
             f"    timeout_ms: 5000\n    position_interval: {position_interval}\n")
    return ("threads: 3\nlease_ttl_ms: 2000\nheartbeat_interval_ms: 100\n" + group +
            e2e.declared_pipelines("grp", 3, alignment_group="ledger", retained=100000,
                                   tolerable_failures=1000))


class AlignmentGroupsTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.events = self.ws.path("events.log")

    def tearDown(self):
        self.ws.close()

    def ctl(self, *args):
        return subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                               *args], capture_output=True, text=True, timeout=60)

    def sim(self, *extra, pipelines=3):
        return self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                             "--job", "grp", "--pipelines", str(pipelines),
                             "--tasks-per-pipeline", "2", "--event-log", self.events, *extra)

    def stored(self):
        """pipeline -> {checkpoint id: (position, alignment_group)} from the daemon's SQLite."""
        rows = collections.defaultdict(dict)
        with self.ws.db() as db:
            for pipeline, cid, position, group in db.execute(
                    "SELECT pipeline_id, checkpoint_id, position, alignment_group FROM checkpoints "
                    "WHERE job_id='grp'"):
                rows[pipeline][cid] = (position, group)
        return rows

    def completes(self):
        return [e for e in e2e.read_events(self.events) if e[0] == "complete"]

    def test_members_checkpoint_with_one_id_and_one_position_per_round(self):
        self.ws.start_daemon(self.ws.write_config(config(200, POSITION_INTERVAL)))
        sim = self.sim("--positions", "200")
        e2e.wait_until(lambda: min(len(self.stored()[f"p{i}"]) for i in range(3)) >= 3, 60,
                       "three group rounds in every member's history")
        e2e.stop(sim, signal.SIGTERM)
        # A round acked just before the simulator stopped may still be committing: the store
        # and the group's progress agree once it is done.
        def group():
            got = self.ctl("-o", "json", "group", "get", "ledger")
            self.assertEqual(got.returncode, 0, got.stderr)
            return json.loads(got.stdout)
        e2e.wait_until(lambda: group()["pending_checkpoint_id"] == 0 and
                       group()["last_round_id"] == max(self.stored()["p0"]), 10,
                       "the group's last round to be the newest stored")
        stored = self.stored()
        ids = [set(stored[f"p{i}"]) for i in range(3)]
        self.assertEqual(ids[0], ids[1], stored)
        self.assertEqual(ids[0], ids[2], stored)
        for cid in ids[0]:
            rounds = {stored[f"p{i}"][cid] for i in range(3)}
            self.assertEqual(len(rounds), 1, f"round {cid} differs between members: {rounds}")
            position, group_name = rounds.pop()
            self.assertEqual(group_name, "ledger")
            self.assertGreater(position, 0)
            self.assertEqual(position % POSITION_INTERVAL, 0)

        shown = group()
        self.assertEqual(len(shown["members"]), 3, shown)
        self.assertEqual(shown["last_round_id"], max(ids[0]), shown)
        self.assertEqual(shown["last_position"], stored["p0"][max(ids[0])][0], shown)
        metrics = self.ws.metric('ckptd_group_rounds_total{result="completed"}')
        self.assertGreaterEqual(metrics, 3)

    def test_kill_dash_nine_during_group_commits_leaves_a_round_in_every_member_or_none(self):
        rng = random.Random(os.getpid())
        cfg = self.ws.write_config(config(50))
        daemon = self.ws.start_daemon(cfg)
        sim = self.sim("--ack-delay-ms", "2")
        for kill in range(KILLS):
            target = len(self.completes()) + rng.randint(6, 30)
            e2e.wait_until(lambda: len(self.completes()) >= target, 60,
                           f"group rounds to complete (kill {kill})")
            time.sleep(rng.uniform(0, 0.05))  # mid-round as often as between rounds
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            daemon = self.ws.start_daemon(cfg)
        seen = len(self.completes())
        e2e.wait_until(lambda: {e[2] for e in self.completes()[seen:]} >= {"p0", "p1", "p2"}, 60,
                       "every member to complete a round after the last restart")
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))

        stored = self.stored()
        ids = [set(stored[f"p{i}"]) for i in range(3)]
        self.assertEqual(ids[0] ^ ids[1], set(), "a round in p0 or p1 and not the other")
        self.assertEqual(ids[0] ^ ids[2], set(), "a round in p0 or p2 and not the other")
        events = e2e.read_events(self.events)
        heard = [(e[2], e[3]) for e in events if e[0] == "complete"]
        missing = [c for c in heard if c[1] not in stored[c[0]]]
        self.assertEqual(missing, [], "a worker heard complete of a round not in the store")
        triggers = e2e.trigger_ids_by_pipeline(events)
        self.assertEqual(e2e.ids_out_of_order(triggers), [],
                         "trigger ids reused or reordered (pipeline, id, the id after it)")
        print(f"e2e alignment groups: {KILLS} kill -9 rounds, {len(ids[0])} group rounds in "
              f"every member's store, {len(heard)} completes verified")

    def test_a_member_without_its_worker_holds_the_group_and_why_names_it(self):
        self.ws.start_daemon(self.ws.write_config(config(100)))
        sim = self.sim(pipelines=2)  # p2 has no worker
        e2e.wait_until(lambda: self.ctl("pipeline", "get", "grp", "p1").stdout.find(
            "RUNNING") >= 0, 30, "the simulator to register p1")

        def why(pipeline):
            got = self.ctl("-o", "json", "pipeline", "why", "grp", pipeline)
            self.assertEqual(got.returncode, 0, got.stderr)
            return json.loads(got.stdout)
        e2e.wait_until(lambda: why("p0")["holdup"] == "WAITING_FOR_GROUP", 10,
                       "p0 to wait for its group")
        explanation = why("p0")
        self.assertEqual(explanation["alignment_group"], "ledger")
        holding = [(h["pipeline_id"], h["reason"]) for h in explanation["group_holding"]]
        self.assertEqual([p for p, _ in holding], ["p2"], explanation)
        self.assertIn("waiting for 2 of 2 tasks", holding[0][1])
        self.assertIn("grp/p2", explanation["summary"])
        self.assertEqual(self.completes(), [], "a round without every member")
        e2e.stop(sim)


if __name__ == "__main__":
    e2e.main(globals())
