"""The commit phase with real processes (docs/PROTOCOL.md, "Commit phase"): ckptd, the simulator
committing each checkpoint a while after its `complete` (--commit-delay-ms) and ckptctl.

- no trigger of a pipeline comes between a checkpoint's complete and its all_committed; each
  checkpoint reads COMMITTED in ckptctl and in the store, and the commit is timed in
  ckptd_commit_duration_seconds;
- a commit slower than commit_timeout_ms is overdue: one warning naming the tasks, the metric,
  `pipeline why` says so, a manual trigger, a change of the task set, a delete of the checkpoint
  and a restore are refused naming the COMMITTING checkpoint, and nothing is aborted;
- an alignment group with a commit phase triggers no round before every member's checkpoint of
  the last one is COMMITTED;
- kill -9 of the daemon while a checkpoint is COMMITTING: after the restart the workers are
  welcomed with commit_pending, commit again, and the checkpoint becomes COMMITTED (the mark is
  durable in the store); the pipeline goes on.
"""
import json
import signal
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None


def config(commit_timeout_ms, pipelines=2):
    return "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" + e2e.declared_pipelines(
        "cp", pipelines, interval_ms=100, timeout_ms=5000, commit_timeout_ms=commit_timeout_ms)


class CommitPhaseTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.events = self.ws.path("events.log")

    def tearDown(self):
        self.ws.close()

    def start_sim(self, pipelines, commit_delay_ms):
        return self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                             "--job", "cp", "--pipelines", str(pipelines),
                             "--tasks-per-pipeline", "2", "--ack-delay-ms", "5",
                             "--commit-delay-ms", str(commit_delay_ms),
                             "--event-log", self.events)

    def ctl(self, *args):
        return subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                               *args], capture_output=True, text=True, timeout=60)

    def events_of(self, kind, pipeline=None):
        return [e for e in e2e.read_events(self.events)
                if e[0] == kind and (pipeline is None or e[2] == pipeline)]

    def test_no_round_starts_before_every_task_committed_and_each_reads_committed(self):
        daemon = self.ws.start_daemon(self.ws.write_config(config(commit_timeout_ms=5000)))
        sim = self.start_sim(2, commit_delay_ms=150)
        e2e.wait_until(lambda: len(self.events_of("all_committed", "p0")) >= 4, 60,
                       "four checkpoints of p0 to be COMMITTED")
        # The simulator's one stream per pipeline sees every message in order: after each
        # complete, the next trigger only once all_committed came.
        for pipeline in ("p0", "p1"):
            seen = [e for e in e2e.read_events(self.events)
                    if e[2] == pipeline and e[0] in ("trigger", "complete", "all_committed")]
            committing = None
            for event, _, _, cid, _ in seen:
                if event == "complete":
                    committing = cid
                elif event == "all_committed":
                    self.assertEqual(cid, committing, seen)
                    committing = None
                elif event == "trigger":
                    self.assertIsNone(committing,
                                      f"{pipeline}: trigger {cid} while {committing} COMMITTING")
        listed = self.ctl("checkpoint", "list", "cp", "p0", "-o", "json")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        finished = [c for c in json.loads(listed.stdout)
                    if c["status"] == "COMPLETED"]
        committed = self.events_of("all_committed", "p0")[-1][3]
        entry = next(c for c in finished if int(c["checkpoint_id"]) == committed)
        self.assertEqual(entry["commit_status"], "COMMITTED", entry)
        self.assertGreater(int(entry["committed_at_ms"]), 0, entry)
        table = self.ctl("checkpoint", "list", "cp", "p0")
        self.assertIn("COMMIT", table.stdout)
        self.assertIn("COMMITTED", table.stdout)
        page = e2e.http_get(self.ws.metrics_url())[2]
        self.assertGreaterEqual(e2e.sample(page, "ckptd_commit_duration_seconds_count"), 4)
        with self.ws.db() as db:
            (marked,) = db.execute(
                "SELECT last_committed_id FROM pipelines WHERE job_id='cp' AND pipeline_id='p0'"
            ).fetchone()
        self.assertGreaterEqual(marked, committed)
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon), 0, self.ws.read_log("ckptd.log"))

    def test_an_overdue_commit_is_warned_once_and_holds_every_new_round(self):
        daemon = self.ws.start_daemon(self.ws.write_config(config(commit_timeout_ms=300,
                                                                  pipelines=1)))
        sim = self.start_sim(1, commit_delay_ms=4000)
        e2e.wait_until(lambda: self.events_of("commit", "p0"), 30, "the first commit asked")
        committing = self.events_of("commit", "p0")[0][3]
        e2e.wait_until(lambda: (e2e.sample(e2e.http_get(self.ws.metrics_url())[2],
                                           "ckptd_commits_overdue_total") or 0) >= 1,
                       30, "the commit to be overdue")
        why = self.ctl("pipeline", "why", "cp", "p0")
        self.assertEqual(why.returncode, 0, why.stderr)
        self.assertIn("commit overdue", why.stdout)
        self.assertIn("COMMIT_OVERDUE", why.stdout)
        trigger = self.ctl("checkpoint", "trigger", "cp", "p0")
        self.assertNotEqual(trigger.returncode, 0)
        self.assertIn("COMMITTING", trigger.stderr)
        self.assertIn(f"checkpoint {committing}", trigger.stderr)
        # Neither the task set, nor the checkpoint, nor the restore point moves meanwhile.
        for refused in (("pipeline", "update", "cp", "p0", "--parallelism", "3"),
                        ("checkpoint", "delete", "cp", "p0", str(committing)),
                        ("pipeline", "restore", "cp", "p0", "--checkpoint", str(committing))):
            answer = self.ctl(*refused)
            self.assertNotEqual(answer.returncode, 0, refused)
            self.assertIn("COMMITTING", answer.stderr, refused)
        got = json.loads(self.ctl("pipeline", "get", "cp", "p0", "-o", "json").stdout)
        self.assertEqual(got["committing_checkpoint_id"], committing)
        self.assertEqual(got["expected_tasks"], 2, "the refused update changed nothing")
        e2e.wait_until(lambda: self.events_of("all_committed", "p0"), 30,
                       "the slow commit to land")
        seen = [e for e in e2e.read_events(self.events) if e[2] == "p0"]
        done_at = next(i for i, e in enumerate(seen) if e[0] == "all_committed")
        triggers = [e[3] for e in seen[:done_at] if e[0] == "trigger"]
        self.assertEqual(triggers, [committing], "no round while it was COMMITTING")
        self.assertEqual(self.events_of("abort", "p0"), [])
        log = self.ws.read_log("ckptd.log")
        warned = [line for line in log.splitlines()
                  if f"commit of checkpoint {committing} overdue" in line]
        self.assertEqual(len(warned), 1, log)
        self.assertIn("2 of 2 tasks have not committed", warned[0])
        self.assertEqual(e2e.stop(sim), 0)
        self.assertEqual(e2e.stop(daemon), 0)

    def test_an_alignment_group_commits_as_one(self):
        group = ("alignment_groups:\n  - name: ledger\n    interval_ms: 100\n"
                 "    timeout_ms: 5000\n    commit_timeout_ms: 5000\n")
        daemon = self.ws.start_daemon(self.ws.write_config(
            "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" + group +
            e2e.declared_pipelines("cp", 2, alignment_group="ledger")))
        sim = self.start_sim(2, commit_delay_ms=100)
        e2e.wait_until(lambda: all(len(self.events_of("all_committed", p)) >= 3
                                   for p in ("p0", "p1")), 60,
                       "three group rounds COMMITTED in both members")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("ckpt-worker-sim.log"))
        events = e2e.read_events(self.events)
        # One id for both members, each COMMITTED in both.
        done = {p: {e[3] for e in events if e[0] == "all_committed" and e[2] == p}
                for p in ("p0", "p1")}
        self.assertTrue(done["p0"] & done["p1"], done)
        # Within one member's stream the simulator's order is the daemon's: no trigger between
        # a complete and its all_committed.
        for member in ("p0", "p1"):
            committing = set()
            for event, _, pipeline, cid, _ in events:
                if pipeline != member:
                    continue
                if event == "complete":
                    committing.add(cid)
                elif event == "all_committed":
                    committing.discard(cid)
                elif event == "trigger":
                    self.assertFalse({c for c in committing if c < cid},
                                     f"{member}: round {cid} triggered while {committing} "
                                     "COMMITTING")
        # Across members the streams are independent (a trigger on one may be read before the
        # all_committed on the other), so the daemon's own clock decides: no member's round was
        # triggered before every member's round before it was marked COMMITTED.
        with self.ws.db() as db:
            rows = db.execute(
                "SELECT pipeline_id, checkpoint_id, triggered_at_ms, commit_status, "
                "committed_at_ms FROM checkpoints WHERE job_id='cp' ORDER BY checkpoint_id"
            ).fetchall()
        committed_at = {}
        for _, cid, _, status, at_ms in rows:
            if status == 2:
                committed_at[cid] = max(committed_at.get(cid, 0), at_ms)
        for pipeline, cid, triggered_ms, _, _ in rows:
            before = [c for c in committed_at if c < cid]
            if before:
                self.assertGreaterEqual(triggered_ms, committed_at[max(before)],
                                        f"{pipeline}'s round {cid} triggered before round "
                                        f"{max(before)} was COMMITTED in every member")
        self.assertGreaterEqual(len(committed_at), 3, rows)
        self.assertEqual(e2e.stop(daemon), 0, self.ws.read_log("ckptd.log"))

    def test_kill_dash_nine_while_committing_commits_again_after_the_restart(self):
        cfg = self.ws.write_config(config(commit_timeout_ms=60000, pipelines=2))
        daemon = self.ws.start_daemon(cfg)
        sim = self.start_sim(2, commit_delay_ms=1500)
        e2e.wait_until(lambda: len(self.events_of("commit", "p0")) >= 2, 60,
                       "p0's second commit to be asked")
        committing = self.events_of("commit", "p0")[-1][3]
        self.assertLess(len(self.events_of("all_committed", "p0")), 2)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        with self.ws.db() as db:
            (status,) = db.execute(
                "SELECT commit_status FROM checkpoints WHERE job_id='cp' AND pipeline_id='p0' "
                "AND checkpoint_id=?", (committing,)).fetchone()
        self.assertEqual(status, 1, "COMMITTING in the store when the daemon died")
        daemon = self.ws.start_daemon(cfg)
        # Welcomed again with commit_pending: the simulator commits again, and only then does
        # the pipeline go on.
        e2e.wait_until(
            lambda: any(e[3] == committing for e in self.events_of("all_committed", "p0")), 60,
            "the checkpoint COMMITTED after the restart")
        commits = [e[3] for e in self.events_of("commit", "p0")]
        self.assertGreaterEqual(commits.count(committing), 2, "asked to commit again")
        e2e.wait_until(lambda: any(e[3] > committing for e in self.events_of("complete", "p0")),
                       60, "p0 to complete a newer checkpoint")
        with self.ws.db() as db:
            (status,) = db.execute(
                "SELECT commit_status FROM checkpoints WHERE job_id='cp' AND pipeline_id='p0' "
                "AND checkpoint_id=?", (committing,)).fetchone()
        self.assertEqual(status, 2, "COMMITTED, durably")
        self.assertEqual(e2e.stop(sim), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(daemon), 0, self.ws.read_log("ckptd.log"))


if __name__ == "__main__":
    e2e.main(globals())
