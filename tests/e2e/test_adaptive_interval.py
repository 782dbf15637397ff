"""The adaptive interval on a real daemon (docs/PROTOCOL.md, "Adaptive interval"): with
max_overhead, slow rounds stretch the interval to their p95 / max_overhead; with max_interval_ms,
a worker's backlog (ckpt-worker-sim --backlog-after/--backlog-for, heartbeat.backlog) stretches it
to max_interval_ms and it comes back once caught up. The store's trigger times show it, and
GetPipeline (ckptctl pipeline get) and `pipeline why` say it and why. A max_interval_ms below the
interval is refused."""
import json
import subprocess
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None

CONFIG = ("lease_ttl_ms: 3000\nheartbeat_interval_ms: 200\nstart_spread_ms: 0\n"
          "pipelines:\n"
          "  - {job_id: slow, pipeline_id: p0, parallelism: 2, interval_ms: 200, timeout_ms: 10000,"
          " max_overhead: 0.25, retained: 1000}\n"
          "  - {job_id: behind, pipeline_id: p0, parallelism: 2, interval_ms: 300,"
          " timeout_ms: 10000, max_interval_ms: 2500, retained: 1000}\n")


class AdaptiveIntervalTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.ws.start_daemon(self.ws.write_config(CONFIG))

    def tearDown(self):
        self.ws.close()

    def ctl(self, *args):
        return subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}",
                               *args], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    def pipeline(self, job):
        r = self.ctl("pipeline", "get", job, "p0", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def triggers(self, job, since_ms=0):
        with self.ws.db() as db:
            return [t for (t,) in db.execute(
                "SELECT triggered_at_ms FROM checkpoints WHERE job_id = ? AND triggered_at_ms >= ? "
                "ORDER BY checkpoint_id", (job, since_ms)).fetchall()]

    def sim(self, job, *args):
        return self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}", "--job",
                             job, "--pipelines", "1", "--tasks-per-pipeline", "2",
                             "--worker-id", f"sim-{job}", *args, log=f"sim-{job}.log")

    def test_slow_rounds_stretch_the_interval_to_their_p95_over_max_overhead(self):
        self.sim("slow", "--ack-delay-ms", "200")
        # From the third completed round the p95 (~200 ms) / 0.25 sets it: about 800 ms.
        e2e.wait_until(lambda: self.pipeline("slow")["effective_interval_ms"] >= 800, 30,
                       "the effective interval to stretch to p95 / max_overhead")
        p = self.pipeline("slow")
        self.assertIn("p95", p["effective_interval_reason"])
        self.assertIn("max_overhead 0.25", p["effective_interval_reason"])
        self.assertLess(p["effective_interval_ms"], 2000, p)
        stretched_at = int(time.time() * 1000)
        e2e.wait_until(lambda: len(self.triggers("slow", stretched_at)) >= 3, 30,
                       "three rounds at the stretched interval")
        times = self.triggers("slow", stretched_at)
        gaps = [b - a for a, b in zip(times, times[1:])]
        self.assertTrue(all(g >= 750 for g in gaps), gaps)  # never the 200 ms of interval_ms
        why = self.ctl("pipeline", "why", "slow", "p0")
        self.assertEqual(why.returncode, 0, why.stderr)
        self.assertIn("Effective interval:", why.stdout)

    def test_a_backlog_stretches_the_interval_to_max_interval_ms_and_it_comes_back(self):
        self.sim("behind", "--backlog-after", "2s", "--backlog-for", "6s")
        e2e.wait_until(lambda: self.pipeline("behind")["effective_interval_ms"] == 2500, 30,
                       "the interval to stretch to max_interval_ms during the backlog")
        self.assertIn("backlog", self.pipeline("behind")["effective_interval_reason"])
        during = int(time.time() * 1000)
        e2e.wait_until(lambda: self.pipeline("behind")["effective_interval_ms"] == 300, 30,
                       "the interval to come back to interval_ms once caught up")
        self.assertIn("interval_ms", self.pipeline("behind")["effective_interval_reason"])
        after = int(time.time() * 1000)
        times = [t for t in self.triggers("behind", during) if t < after]
        gaps = [b - a for a, b in zip(times, times[1:])]
        self.assertTrue(gaps and max(gaps) >= 2400, gaps)  # the stretched rounds
        e2e.wait_until(lambda: len(self.triggers("behind", after)) >= 4, 30,
                       "rounds at the interval again")
        times = self.triggers("behind", after)
        gaps = [b - a for a, b in zip(times[1:], times[2:])]  # after the first, fixed at its end
        self.assertTrue(all(g < 1500 for g in gaps), gaps)

    def test_a_max_interval_below_the_interval_is_refused(self):
        r = self.ctl("pipeline", "create", "--job", "bad", "--pipeline", "p0", "--parallelism",
                     "1", "--interval", "10s", "--max-interval", "5s")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", r.stderr)
        self.assertIn("max_interval_ms 5000 is below interval_ms 10000", r.stderr)
        r = self.ctl("pipeline", "create", "--job", "bad", "--pipeline", "p1", "--parallelism",
                     "1", "--max-overhead", "1.5")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--max-overhead", r.stderr)
        # Through the API too (ckptctl checks first): an update to a bad max_overhead.
        r = self.ctl("pipeline", "create", "--job", "ok", "--pipeline", "p0", "--parallelism",
                     "1", "--interval", "1s", "--max-interval", "1m", "--max-overhead", "0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = json.loads(self.ctl("pipeline", "get", "ok", "p0", "-o", "json").stdout)
        self.assertEqual((p["max_overhead"], p["max_interval_ms"]), (0.1, 60000), p)


if __name__ == "__main__":
    e2e.main(globals())
