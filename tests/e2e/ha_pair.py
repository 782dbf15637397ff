"""Two ckptd daemons sharing one etcd prefix, and a simulator that knows both (`--server A,B`),
for the HA tests: HaPair is their setUp, tearDown and parts (a mixin: its user is also a
unittest.TestCase). The lease TTL is etcd's floor (election_ttl_ms 2000) so that takeovers are
quick, unless a test sets self.ttl_s before start_pair()."""
import json
import os
import subprocess

import e2e_util as e2e
import etcd_util

TTL_S = 2.0
PREFIX = "/ckptd-e2e"


class HaPair:
    def setUp(self):
        if not etcd_util.installed():
            self.fail("etcd is not installed (scripts/setup.sh installs etcd-server and "
                      "etcd-client)")
        self.a = e2e.Workspace(e2e.build_dir())
        self.b = e2e.Workspace(e2e.build_dir())
        self.etcd = None
        self.sim = None
        self.ttl_s = TTL_S
        self.events = None
        self.client_flags = []  # more flags for ckptctl and the simulator (--ca-file)

    def tearDown(self):
        if os.environ.get("CKPT_E2E_SHOW_LOG"):
            for ws in (self.a, self.b):
                print(ws.read_log("ckptd.log")[-4000:])
        self.a.close()  # the daemons and the simulator first, then etcd under them
        self.b.close()
        if self.etcd:
            self.etcd.close()

    # --- parts -------------------------------------------------------------------------------

    def start_etcd(self, members, extra_args=()):
        self.etcd = etcd_util.EtcdCluster(members, extra_args)

    def start_daemon(self, ws, **config):
        """`config`: write_config's keyword arguments."""
        ws.daemon = ws.start_daemon(self.write_config(ws, **config))
        return ws.daemon

    def write_config(self, ws, more_pipelines="", more_etcd="", more_top=""):
        """`more_top`: more top-level config (such as a `tls:` section)."""
        return ws.write_config(
            more_top + self.etcd.daemon_yaml(ws.port, PREFIX, int(self.ttl_s * 1000), more_etcd) +
            "pipelines:\n"
            "  - {job_id: etl, pipeline_id: p0, parallelism: 2, interval_ms: 200}\n" +
            more_pipelines)

    def servers(self):
        return f"127.0.0.1:{self.a.port},127.0.0.1:{self.b.port}"

    def start_sim(self, servers=None):
        self.events = self.a.path("events.log")
        self.sim = self.a.start("ckpt-worker-sim", "--server", servers or self.servers(),
                                "--job", "etl",
                                "--pipelines", "1", "--tasks-per-pipeline", "2",
                                "--event-log", self.events, "--json", *self.client_flags,
                                log="sim.log")

    def sim_report(self):
        """Ends the simulator (SIGTERM: a normal end) and returns its JSON summary."""
        self.assertIsNone(self.sim.poll(), "the simulator ended on its own:\n" +
                          self.a.read_log("sim.log")[-3000:])
        self.assertEqual(e2e.stop(self.sim), 0, self.a.read_log("sim.log")[-3000:])
        # Its stdout and stderr share the log: the summary is its last JSON line.
        lines = self.a.read_log("sim.log").strip().splitlines()
        return json.loads(next(line for line in reversed(lines) if line.startswith("{")))

    def ready(self, ws):
        return e2e.http_status(ws.metrics_url("/readyz"), timeout=2) == 200

    def leading(self, ws):
        return ws.daemon.poll() is None and ws.role() == "leader" and self.ready(ws)

    def ctl_run(self, ws, *args):
        """ckptctl told of `ws`'s daemon only, JSON output: the finished process."""
        return subprocess.run([ws.binary("ckptctl"), "--server", f"127.0.0.1:{ws.port}", *args,
                               "-o", "json", *self.client_flags], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)

    def ctl(self, ws, *args):
        """ckptctl told of `ws`'s daemon only; its JSON output (it must succeed)."""
        r = self.ctl_run(ws, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def pipeline(self, ws, pipeline="p0"):
        return self.ctl(ws, "pipeline", "get", "etl", pipeline)

    def writer_epochs(self):
        """The leadership (epoch) of every transaction etcd still holds, in commit order: each
        one rewrites P/writer with "<epoch>:<n>"."""
        return [int(v.split(":")[0]) for _, v in self.etcd.history(f"{PREFIX}/writer")]

    def events_of(self, kind):
        return [e[3] for e in e2e.read_events(self.events) if e[0] == kind]

    def wait_completions(self, n, after=0, timeout=30):
        e2e.wait_until(lambda: len([i for i in self.events_of("complete") if i > after]) >= n,
                       timeout, f"{n} completions after checkpoint {after}")

    def assert_ids_never_reused(self):
        triggers = self.events_of("trigger")
        self.assertEqual(triggers, sorted(set(triggers)),
                         "a checkpoint id was triggered twice, or went backwards")
        self.assertTrue(set(self.events_of("complete")) <= set(triggers))

    def stored_ids(self):
        """The ids of p0's checkpoints stored in etcd."""
        return self.etcd.checkpoint_ids(PREFIX, "etl").get("p0", set())

    def assert_etcd_holds_what_workers_saw(self):
        """A dump of etcd: the id counter is above every id a worker was sent (no id can be
        handed out again), and the newest stored checkpoint is at least the newest `complete`
        a worker heard (none lost)."""
        # What the workers saw first: anything they see later is newer still.
        sent, heard = max(self.events_of("trigger")), max(self.events_of("complete"))
        counter = int(self.etcd.value(f"{PREFIX}/counters/etl/p0"))
        self.assertGreaterEqual(counter, sent)
        self.assertGreaterEqual(max(self.stored_ids()), heard)

    def assert_tasks_never_stopped(self):
        states = [e[4] for e in e2e.read_events(self.events) if e[0] == "state"]
        self.assertNotIn("STOPPED", states)
        self.assertNotIn("FAILED", states)

    def start_pair(self, members=1, etcd_args=(), **config):
        """etcd (`members` members, started with `etcd_args`), then daemon A (which leads), then
        B (standby), then the simulator; `config`: write_config's keyword arguments."""
        self.start_etcd(members, etcd_args)
        self.start_daemon(self.a, **config)
        e2e.wait_until(lambda: self.leading(self.a), 20, "daemon A to lead")
        self.start_daemon(self.b, **config)
        e2e.wait_until(lambda: self.b.role() == "standby", 20, "daemon B to stand by")
        self.assertFalse(self.ready(self.b))
        self.start_sim()
        self.wait_completions(3)
