"""The start spread on a real daemon: pipelines whose workers connect together (a fleet starting;
a daemon restarted after a kill -9, its workers with it; an HA standby taking over from a leader
killed with kill -9) do not checkpoint together. Their first triggers, read from the store, leave
no tenth of the interval with more than a fifth of them, and still cover most of it
(docs/PROTOCOL.md, the paragraph on the start offset)."""
import json
import signal
import time
import unittest

import e2e_util as e2e
import ha_pair

BUILD_DIR = None
JOB = "spread"
PIPELINES = 200
INTERVAL_MS = 2000

# No start_spread_ms: the default spreads over the whole interval.
CONFIG = "lease_ttl_ms: 3000\nheartbeat_interval_ms: 500\n" + e2e.declared_pipelines(
    JOB, PIPELINES, interval_ms=INTERVAL_MS, timeout_ms=10000, retained=50)


def most_in_a_window(times_ms, width_ms):
    """The most of `times_ms` inside any window [t, t + width_ms)."""
    times = sorted(times_ms)
    most, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= width_ms:
            first += 1
        most = max(most, last - first + 1)
    return most


class StartSpreadTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(CONFIG)

    def tearDown(self):
        self.ws.close()

    def first_triggers_after(self, since_ms):
        """Per pipeline, the trigger time of its first stored checkpoint triggered at or after
        `since_ms`."""
        with self.ws.db() as db:
            rows = db.execute(
                "SELECT pipeline_id, MIN(triggered_at_ms) FROM checkpoints "
                "WHERE job_id = ? AND triggered_at_ms >= ? GROUP BY pipeline_id",
                (JOB, since_ms)).fetchall()
        return dict(rows)

    def wait_for_every_first_trigger(self, since_ms, what):
        # A pipeline's first round is stored once complete; two intervals and the reconnects'
        # backoff bound it, the deadline leaves room for a slow machine.
        e2e.wait_until(lambda: len(self.first_triggers_after(since_ms)) == PIPELINES, 60,
                       f"every pipeline to complete a checkpoint {what}")
        return self.first_triggers_after(since_ms)

    def assert_spread(self, firsts, what):
        assert_spread(self, firsts, what)

    def test_first_triggers_are_spread_after_a_start_and_after_a_restart(self):
        started_ms = int(time.time() * 1000)
        daemon = self.ws.start_daemon(self.config)
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", JOB, "--pipelines", str(PIPELINES),
                            "--tasks-per-pipeline", "2")
        self.assert_spread(self.wait_for_every_first_trigger(started_ms, "after the start"),
                           "after the start")

        # Down for more than an interval: every pipeline is overdue when the daemon is back. The
        # workers are started again with it, so that they all connect at once (a simulator left
        # running would come back over seconds, each stream at its own backoff, spread already).
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.ws.read_log("ckpt-worker-sim.log"))
        time.sleep(INTERVAL_MS * 1.5 / 1000)
        restarted_ms = int(time.time() * 1000)
        daemon = self.ws.start_daemon(self.config)
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", JOB, "--pipelines", str(PIPELINES),
                            "--tasks-per-pipeline", "2", log="ckpt-worker-sim-2.log")
        self.assert_spread(self.wait_for_every_first_trigger(restarted_ms, "after the restart"),
                           "after the restart")
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0,
                         self.ws.read_log("ckpt-worker-sim-2.log"))
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0, self.ws.read_log("ckptd.log"))


def assert_spread(test, firsts, what):
    """At most a fifth of the pipelines' first triggers in any tenth of the interval, and the
    first triggers cover most of it."""
    times = list(firsts.values())
    most = most_in_a_window(times, INTERVAL_MS // 10)
    span = max(times) - min(times)
    print(f"e2e start spread {what}: {len(times)} pipelines' first triggers over {span} ms; "
          f"the most in any {INTERVAL_MS // 10} ms: {most}")
    test.assertLessEqual(most, PIPELINES // 5,
                         f"{what}: more than a fifth in a tenth of the interval")
    # A spread of the first second only (start_spread_ms 1000, the old default) covers about
    # half of this interval.
    test.assertGreaterEqual(span, INTERVAL_MS * 7 // 10,
                            f"{what}: the first triggers cover under 70 % of the interval")


class StartSpreadAfterATakeoverTest(ha_pair.HaPair, unittest.TestCase):
    def first_triggers_after(self, since_ms):
        """Per pipeline, the trigger time of its first checkpoint stored in etcd that was
        triggered at or after `since_ms` (P/checkpoints/<job>/<pipeline>/<id>-<kind>)."""
        lines = self.etcd.get_prefix(f"{ha_pair.PREFIX}/checkpoints/{JOB}/")
        firsts = {}
        for key, value in zip(lines[::2], lines[1::2]):
            pipeline = key.rsplit("/", 2)[1]
            at = json.loads(value)["triggered_at_ms"]
            if at >= since_ms:
                firsts[pipeline] = min(at, firsts.get(pipeline, at))
        return firsts

    def test_first_triggers_are_spread_after_a_takeover(self):
        more = "".join(f"  - {{job_id: {JOB}, pipeline_id: p{i}, parallelism: 2, "
                       f"interval_ms: {INTERVAL_MS}, timeout_ms: 10000, retained: 50}}\n"
                       for i in range(PIPELINES))
        self.start_etcd(1)
        self.start_daemon(self.a, more_pipelines=more)
        e2e.wait_until(lambda: self.leading(self.a), 20, "daemon A to lead")
        self.start_daemon(self.b, more_pipelines=more)
        e2e.wait_until(lambda: self.b.role() == "standby", 20, "daemon B to stand by")
        sim = self.a.start("ckpt-worker-sim", "--server", self.servers(), "--job", JOB,
                           "--pipelines", str(PIPELINES), "--tasks-per-pipeline", "2",
                           log="spread-sim.log")
        started_ms = int(time.time() * 1000)
        e2e.wait_until(lambda: len(self.first_triggers_after(started_ms)) == PIPELINES, 60,
                       "every pipeline to complete a checkpoint under daemon A")
        # The standby takes over with every pipeline overdue (the lease outlives an interval),
        # and every worker reconnects to it within about a second (the SDK's standby pace).
        self.a.daemon.kill()
        self.a.daemon.wait()
        killed_ms = int(time.time() * 1000)
        e2e.wait_until(lambda: self.leading(self.b), ha_pair.TTL_S + 20, "daemon B to take over")
        e2e.wait_until(lambda: len(self.first_triggers_after(killed_ms)) == PIPELINES, 60,
                       "every pipeline to complete a checkpoint under daemon B")
        assert_spread(self, self.first_triggers_after(killed_ms), "after a takeover")
        self.assertIsNone(sim.poll(), "the simulator kept running")
        self.assertEqual(e2e.stop(sim, signal.SIGTERM), 0, self.a.read_log("spread-sim.log"))


if __name__ == "__main__":
    e2e.main(globals())
