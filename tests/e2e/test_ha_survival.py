"""The whole HA group survives what once took every daemon down one after another, with real
etcd, real daemons and a simulator that knows both (`--server A,B`):

- garbage in etcd (a pipeline's spec that does not parse, a key no ckptd knows): the standby
  reports it as its watch brings it, the takeover after a kill -9 quarantines that pipeline alone
  (UNREADABLE, the key named) and runs the others, and a daemon restarted beside it stands by;
- a full etcd (`database space exceeded` under a small --quota-backend-bytes): rounds fail as
  "store not writable", the leader stays leader and RUNNING and says why on /readyz, the standby
  stays standby, and checkpoints resume by themselves once the operator frees space;
- election keys no ckptd wrote (no lease, a value with a newline, a non-ASCII host), older than
  every daemon's: ignored by each (said once), so one leads, and a standby's redirects work;
- an empty certificate at a TLS refresh, seen by both daemons at once: both stay up with the last
  good set, the leader leads, workers and ckptctl go on over TLS, and a failover still works.

A damaged layout record, which no daemon can trust, is a clean exit 65 for each daemon that loads
it, never 75 (which systemd would restart into the same end)."""
import json
import os
import time
import unittest

import e2e_util as e2e
from certs import CertFactory
from ha_pair import PREFIX, TTL_S, HaPair

BUILD_DIR = None
P1 = "  - {job_id: etl, pipeline_id: p1, parallelism: 1, interval_ms: 200}\n"


class HaSurvivalTest(HaPair, unittest.TestCase):
    def leader_address(self, ws):
        return self.ctl(ws, "status")["daemon"]["leader_address"]

    def take_over_from_a(self):
        """kill -9 of daemon A (the leader); waits for B to lead. Returns the newest checkpoint
        the workers heard of before."""
        self.a.daemon.kill()
        self.a.daemon.wait()
        last = max(self.events_of("complete"))
        e2e.wait_until(lambda: self.leading(self.b), TTL_S + 10, "daemon B to take over")
        return last

    def log_lines(self, ws, needle):
        return [line for line in ws.read_log("ckptd.log").splitlines() if needle in line]

    def test_garbage_in_etcd_quarantines_its_pipeline_alone_and_every_daemon_goes_on(self):
        self.start_pair(more_pipelines=P1)
        spec_key = f"{PREFIX}/pipelines/etl/p1/spec"
        self.assertTrue(self.etcd.value(spec_key), "the leader stored p1's spec")
        self.etcd.etcdctl("put", spec_key, value=b"{not json")
        self.etcd.etcdctl("put", f"{PREFIX}/junk", value=b"left by someone")
        # The standby checks what its watch brings: both reported before any failover.
        e2e.wait_until(lambda: self.b.metric("ckptd_store_unreadable_records") == 2, 10,
                       "the standby to count the unreadable spec and the unknown key")
        self.assertEqual(len(self.log_lines(self.b, spec_key)), 1, "said once")
        self.assertIsNone(self.a.daemon.poll())
        self.assertTrue(self.leading(self.a))

        last = self.take_over_from_a()
        p1 = self.ctl(self.b, "pipeline", "get", "etl", "p1")
        self.assertEqual(p1["state"], "UNREADABLE", p1)
        self.assertIn(spec_key, p1["state_reason"], p1)
        self.wait_completions(3, after=last)  # p0 runs on B
        self.assertEqual(self.pipeline(self.b)["state"], "RUNNING")
        self.assertEqual(self.b.metric("ckptd_store_unreadable_records"), 2)
        self.assertEqual(self.b.metric('ckptd_pipelines{state="UNREADABLE"}'), 1)
        self.assertTrue(self.log_lines(self.b, f"{PREFIX}/junk"), "the unknown key is named")

        # A restarted (as its unit would) stands by beside B: nothing in etcd ends it.
        self.start_daemon(self.a, more_pipelines=P1)
        e2e.wait_until(lambda: self.a.role() == "standby", 20, "daemon A to stand by")
        e2e.wait_until(lambda: self.a.metric("ckptd_store_unreadable_records") == 2, 10,
                       "the restarted standby to report both keys")

        # The operator's way out: delete the quarantined pipeline.
        self.ctl(self.b, "pipeline", "delete", "etl", "p1")
        gone = self.ctl_run(self.b, "pipeline", "get", "etl", "p1")
        self.assertNotEqual(gone.returncode, 0)
        self.assertIn("NOT_FOUND", gone.stderr)
        self.assertEqual(self.etcd.keys(f"{PREFIX}/pipelines/etl/p1/"), [])
        e2e.wait_until(lambda: self.b.metric("ckptd_store_unreadable_records") == 1, 10,
                       "the count to drop to the unknown key alone")
        self.assertIsNone(self.a.daemon.poll())
        self.assertTrue(self.leading(self.b))
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()

    def test_a_damaged_layout_record_is_exit_65_for_every_daemon_that_loads_it(self):
        self.start_pair()
        self.etcd.etcdctl("put", f"{PREFIX}/layout", value=b"not a version")
        self.a.daemon.kill()
        self.a.daemon.wait()
        code = self.b.daemon.wait(timeout=TTL_S + 20)
        self.assertEqual(code, 65, self.b.read_log("ckptd.log")[-3000:])
        # A started again meets the same record: 65 again, not 75 (systemd would loop on it).
        self.a.daemon = self.a.start("ckptd", "--config", self.a.path("ckptd.yaml"))
        code = self.a.daemon.wait(timeout=TTL_S + 20)
        self.assertEqual(code, 65, self.a.read_log("ckptd.log")[-3000:])
        self.assertIn(f"{PREFIX}/layout", self.a.read_log("ckptd.log"))

    def test_a_full_etcd_fails_rounds_as_not_writable_and_writes_resume_once_freed(self):
        self.start_pair(etcd_args=["--quota-backend-bytes", str(16 << 20)])
        big = b"x" * (1 << 20)
        for i in range(200):
            r = self.etcd.etcdctl("put", f"/filler/{i}", value=big, check=False)
            if r.returncode != 0:
                self.assertIn(b"database space exceeded", r.stderr)
                break
        else:
            self.fail("etcd took 200 MiB under a 16 MiB quota")

        def store_refused():
            status, _, body = e2e.http_get(self.a.metrics_url("/readyz"), timeout=2)
            return status == 503 and "database space exceeded" in body
        e2e.wait_until(store_refused, 15, "/readyz to say the store refuses writes, and why")
        self.assertEqual(self.a.metric("ckptd_store_writable"), 0)
        # Two lease TTLs: the leader keeps its lease (keepalives are not writes), stays leader
        # with its pipelines RUNNING, and the standby never takes over.
        until = time.monotonic() + 2 * TTL_S
        while time.monotonic() < until:
            self.assertIsNone(self.a.daemon.poll(), self.a.read_log("ckptd.log")[-3000:])
            self.assertIsNone(self.b.daemon.poll(), self.b.read_log("ckptd.log")[-3000:])
            self.assertEqual(self.a.role(), "leader")
            self.assertEqual(self.b.role(), "standby")
            time.sleep(0.2)
        self.assertEqual(self.pipeline(self.a)["state"], "RUNNING")
        self.assertTrue(store_refused())

        # What the operator does: delete, compact, defragment, disarm the alarm.
        self.etcd.etcdctl("del", "--prefix", "/filler/")
        status = json.loads(self.etcd.etcdctl("endpoint", "status", "-w", "json").stdout)
        self.etcd.etcdctl("compact", str(status[0]["Status"]["header"]["revision"]))
        self.etcd.etcdctl("defrag")
        self.etcd.etcdctl("alarm", "disarm")
        last = max(self.events_of("complete"))
        e2e.wait_until(lambda: self.ready(self.a), 20, "the leader to be ready again")
        self.wait_completions(3, after=last)
        self.assertEqual(self.a.metric("ckptd_store_writable"), 1)
        self.assertEqual(self.b.role(), "standby")
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()
        self.assert_etcd_holds_what_workers_saw()

    def test_election_keys_no_ckptd_wrote_are_ignored_and_one_daemon_leads(self):
        self.start_etcd(1)
        election = f"{PREFIX}/election/"

        def lease():
            out = self.etcd.etcdctl("lease", "grant", "600").stdout.decode()
            return out.split()[1]  # "lease 694d... granted with TTL(600s)"
        # Older than every daemon's key, so each would be "the leader" if taken as a candidate.
        self.etcd.etcdctl("put", election + "0000000000000001", value=b"127.0.0.1:1")
        newline = lease()
        self.etcd.etcdctl("put", f"--lease={newline}", election + f"{int(newline, 16):016x}",
                          value=b"evil.example:1\r\nx-injected: 1")
        non_ascii = lease()
        self.etcd.etcdctl("put", f"--lease={non_ascii}", election + f"{int(non_ascii, 16):016x}",
                          value="bücher.example:7070".encode())
        self.start_daemon(self.a)
        e2e.wait_until(lambda: self.leading(self.a), 20, "daemon A to lead")
        self.start_daemon(self.b)
        e2e.wait_until(lambda: self.b.role() == "standby", 20, "daemon B to stand by")
        self.assertEqual(self.leader_address(self.b), f"127.0.0.1:{self.a.port}")
        # Clients told of the standby alone reach the leader through its redirect.
        self.assertEqual(self.pipeline(self.b)["pipeline_id"], "p0")
        self.start_sim(servers=f"127.0.0.1:{self.b.port}")
        self.wait_completions(3)
        for ws in (self.a, self.b):
            ignored = self.log_lines(ws, "is no election candidate and is ignored")
            self.assertEqual(len(ignored), 3, "each foreign key said once:\n" + "\n".join(ignored))
            self.assertIsNone(ws.daemon.poll())
        # And the standby takes over past them.
        last = self.take_over_from_a()
        self.wait_completions(3, after=last)
        self.assert_ids_never_reused()

    def test_an_empty_certificate_at_a_refresh_leaves_both_daemons_up_and_one_leading(self):
        certs = CertFactory(self.a.path("tls"))
        server = certs.server()
        tls = ("tls:\n"
               f"  cert_file: {server.cert}\n"
               f"  key_file: {server.key}\n"
               "  refresh_interval_s: 1\n")
        self.client_flags = ["--ca-file", certs.ca.cert]
        self.start_pair(more_top=tls)
        with open(server.cert, "rb") as f:
            good = f.read()
        open(server.cert, "wb").close()  # the empty moment of `cp new.crt server.crt`
        for ws in (self.a, self.b):
            e2e.wait_until(lambda: (ws.metric("ckptd_tls_reload_failures_total") or 0) >= 1, 15,
                           "the refresh to refuse the empty certificate")
            self.assertIsNone(ws.daemon.poll(), ws.read_log("ckptd.log")[-3000:])
            # New connections get the last good set: ckptctl over TLS to each daemon.
            self.assertEqual(self.pipeline(ws)["pipeline_id"], "p0")
        self.assertTrue(self.leading(self.a))
        self.assertEqual(self.b.role(), "standby")
        last = max(self.events_of("complete"))
        self.wait_completions(3, after=last)
        with open(server.cert, "wb") as f:
            f.write(good)
        last = self.take_over_from_a()
        self.wait_completions(3, after=last)  # the workers followed to B over TLS
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()


if __name__ == "__main__":
    e2e.main(globals())
