"""High availability on etcd with real processes: etcd members, two ckptd daemons sharing one
prefix, and a simulator that knows both (`--server A,B`). The lease TTL is etcd's floor here
(election_ttl_ms 2000) so that takeovers are quick, except where a test says.

Checked: a kill -9 of the leader is survived (the standby serves within TTL + 2 s, the workers
keep running and reconnect, ids are never reused, nothing completed is lost); a leader paused
past its lease exits non-zero when it resumes, sends nothing, and etcd holds none of its
transactions after the new leader's first; a standby answers status itself and sends ckptctl and
workers told only of it to the leader; etcd unreachable at start leaves the daemon standing by
until it answers; one etcd member of three lost changes nothing, nor one that hangs (the one the
leader asks, with the default lease); a quorum lost makes the leader not ready, and it resumes
once it is back."""
import signal
import threading
import time
import unittest

import e2e_util as e2e
from ha_pair import TTL_S, HaPair

BUILD_DIR = None


class HaTest(HaPair, unittest.TestCase):
    # --- tests -------------------------------------------------------------------------------

    def test_kill9_of_the_leader_the_standby_serves_within_the_lease(self):
        self.start_pair()
        epoch_a = self.a.metric("ckptd_leader_epoch")
        # A reload on the standby is kept for its takeover (it has no pipelines to change).
        self.write_config(self.b, "  - {job_id: etl, pipeline_id: p1, parallelism: 1}\n")
        self.b.daemon.send_signal(signal.SIGHUP)
        e2e.wait_until(lambda: "kept for the takeover" in self.b.read_log("ckptd.log"), 10,
                       "the standby to keep the reloaded pipelines")
        killed_at = time.monotonic()
        self.a.daemon.kill()
        self.a.daemon.wait()
        last_before = max(self.events_of("complete"))  # A completes nothing from here on
        e2e.wait_until(lambda: self.leading(self.b), TTL_S + 10, "daemon B to take over")
        takeover_s = time.monotonic() - killed_at
        print(f"takeover after kill -9: {takeover_s:.2f} s (lease TTL {TTL_S} s)")
        self.assertLess(takeover_s, TTL_S + 2)
        # It took over from the copy it kept warm by watching etcd, not by reading it all again.
        self.assertIn("the standby's watched copy", self.b.read_log("ckptd.log"))
        self.assertGreater(self.b.metric("ckptd_leader_epoch"), epoch_a)
        self.assertEqual(self.pipeline(self.b, "p1")["pipeline_id"], "p1")
        # The workers followed to B with their tasks, and checkpoints go on from where A left.
        self.wait_completions(3, after=last_before)
        self.assertGreaterEqual(self.pipeline(self.b)["last_completed_checkpoint_id"],
                                last_before)
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()
        self.assert_etcd_holds_what_workers_saw()
        report = self.sim_report()
        self.assertEqual(report["stale_messages"], 0, report)

    def test_a_daemon_set_for_larger_txns_than_etcd_takes_exits_78_and_another_leads(self):
        # etcd's members take 128 operations a txn (their default): a leader set for 1,024
        # would have its first full batch refused mid-leadership. It says so at takeover
        # instead, before it serves, and exits as a configuration error (no systemd restart);
        # a daemon set right leads in its place.
        self.start_etcd(1)
        # Not start_daemon: it may be gone before its ports are seen open.
        self.a.daemon = self.a.start(
            "ckptd", "--config", self.write_config(self.a, more_etcd="    max_txn_ops: 1024\n"))
        code = self.a.daemon.wait(timeout=30)
        log = self.a.read_log("ckptd.log")
        self.assertEqual(code, 78, log[-3000:])
        self.assertIn("store.etcd.max_txn_ops", log)
        self.assertIn("--max-txn-ops 1024", log)
        self.assertNotIn("leading as epoch", log)
        self.start_daemon(self.b)
        e2e.wait_until(lambda: self.leading(self.b), TTL_S + 10, "daemon B to lead")
        self.start_sim()  # told of both daemons, as the others are: it follows B
        self.wait_completions(2)
        self.assert_ids_never_reused()

    def test_a_leader_paused_past_its_lease_exits_when_it_resumes(self):
        self.start_pair()
        epoch_a = self.a.metric("ckptd_leader_epoch")
        self.a.daemon.send_signal(signal.SIGSTOP)
        try:
            e2e.wait_until(lambda: self.leading(self.b), TTL_S + 10, "daemon B to take over")
            last_b = max(self.events_of("complete"))
        finally:
            self.a.daemon.send_signal(signal.SIGCONT)
        # It wakes believing it leads; its keepalive finds the lease gone, and it exits.
        code = self.a.daemon.wait(timeout=TTL_S + 10)
        self.assertEqual(code, 75, self.a.read_log("ckptd.log")[-3000:])
        self.assertIn("leadership", self.a.read_log("ckptd.log"))
        self.wait_completions(3, after=last_b)
        # etcd's own record: once B's first transaction landed, none of A's did.
        epochs = self.writer_epochs()
        epoch_b = self.b.metric("ckptd_leader_epoch")
        self.assertGreater(epoch_b, epoch_a)
        self.assertIn(epoch_b, epochs)
        first_b = epochs.index(epoch_b)
        self.assertEqual(set(epochs[:first_b]), {epoch_a}, epochs)
        self.assertEqual(set(epochs[first_b:]), {epoch_b}, epochs)
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()
        self.assertEqual(self.sim_report()["stale_messages"], 0)

    def test_a_standby_answers_status_and_sends_every_other_call_to_the_leader(self):
        self.start_etcd(1)
        self.start_daemon(self.a)
        e2e.wait_until(lambda: self.leading(self.a), 20, "daemon A to lead")
        self.start_daemon(self.b)
        e2e.wait_until(lambda: self.b.role() == "standby", 20, "daemon B to stand by")
        epoch = self.a.metric("ckptd_leader_epoch")
        self.assertGreater(epoch, 0)
        # GetDaemonStatus is the one call a standby answers itself.
        status = self.ctl(self.b, "status")
        daemon = status["daemon"]
        self.assertEqual(daemon["role"], "standby", status)
        self.assertEqual(daemon["leader_address"], f"127.0.0.1:{self.a.port}", status)
        self.assertEqual(int(daemon["leader_epoch"]), epoch, status)
        self.assertEqual(daemon["pipelines"], 0, status)  # it serves none: the leader does
        self.assertEqual(e2e.http_status(self.b.metrics_url("/healthz"), timeout=2), 200)
        self.assertEqual(e2e.http_status(self.b.metrics_url("/readyz"), timeout=2), 503)
        # Everything else gets UNAVAILABLE with ckpt-leader; clients told of the standby alone
        # (which holds no pipeline) can only have reached the leader through that trailer.
        self.assertEqual(self.pipeline(self.b)["pipeline_id"], "p0")
        self.start_sim(servers=f"127.0.0.1:{self.b.port}")
        self.wait_completions(3)
        self.assertEqual(self.b.role(), "standby")
        self.assertEqual(self.a.metric("ckptd_leader_epoch"), epoch)
        self.assert_ids_never_reused()
        self.assertEqual(self.sim_report()["stale_messages"], 0)

    def test_etcd_unreachable_at_start_the_daemon_stands_by_until_it_answers(self):
        self.start_etcd(1)
        self.etcd.kill(0)
        self.start_daemon(self.a)
        e2e.wait_until(lambda: "not reachable within dial_timeout_ms" in
                       self.a.read_log("ckptd.log"), 20, "the daemon to say etcd is unreachable")
        self.assertIn(self.etcd.endpoints[0], self.a.read_log("ckptd.log"))
        self.assertIsNone(self.a.daemon.poll())
        self.assertEqual(self.a.role(), "standby")
        self.assertFalse(self.ready(self.a))
        self.etcd.restart(0)
        e2e.wait_until(lambda: self.leading(self.a), 30, "daemon A to lead once etcd answers")
        self.start_sim()
        self.wait_completions(2)
        self.assert_ids_never_reused()

    def test_one_etcd_member_of_three_lost_changes_nothing_a_quorum_lost_pauses(self):
        self.start_pair(members=3)
        epoch = self.a.metric("ckptd_leader_epoch")
        txns = self.a.metric("ckptd_etcd_transactions_total")
        self.assertGreater(txns, 0)
        # The worst member to lose: etcd's raft leader (writes wait for the next one, ~1 s).
        raft_leader = self.etcd.raft_leader()
        self.assertIsNotNone(raft_leader)
        self.etcd.kill(raft_leader)
        last = max(self.events_of("complete"))
        self.wait_completions(3, after=last)
        e2e.wait_until(lambda: self.leading(self.a), 10, "daemon A to go on leading")
        self.assertEqual(self.a.metric("ckptd_leader_epoch"), epoch)
        self.assertGreater(self.a.metric("ckptd_etcd_transactions_total"), txns)
        self.assertIsNotNone(self.a.metric("ckptd_etcd_transactions_resent_total"))
        self.assertEqual(self.b.role(), "standby")
        # Two of three gone: no quorum, so no lease can be confirmed and nothing written.
        second = next(i for i in range(3) if i != raft_leader)
        self.etcd.kill(second)
        durable = max(self.events_of("complete"))  # told to the workers: durable before
        e2e.wait_until(lambda: not self.ready(self.a) or self.a.daemon.poll() is not None,
                       TTL_S + 5, "daemon A to stop being ready without a quorum")
        self.etcd.restart(raft_leader)
        self.etcd.restart(second)
        e2e.wait_until(self.etcd.healthy, 30, "etcd to have its quorum back")
        # Whoever leads now (A again if its lease outlived the outage, else B), checkpoints go on.
        e2e.wait_until(lambda: self.leading(self.a) or self.leading(self.b), TTL_S + 20,
                       "a daemon to lead again")
        last = max(self.events_of("complete"))
        self.wait_completions(3, after=last)
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()
        self.assert_etcd_holds_what_workers_saw()
        # The outage failed nothing already durable: the last checkpoint the workers were told
        # of before it is still stored (a few rounds later, well inside the retained history).
        self.assertIn(durable, self.stored_ids())

    def test_an_etcd_member_that_hangs_changes_nothing(self):
        # A member that stops answering and keeps its connections (a hung process, a paused
        # host): the one the leader asks. The default lease (5 s), as long as the default
        # request timeout: a keepalive left to hang for that would cost the lease.
        self.ttl_s = 5.0
        self.start_pair(members=3)
        epoch = self.a.metric("ckptd_leader_epoch")
        used = self.etcd.members_used_by(self.a.daemon.pid)
        self.assertEqual(len(used), 1, f"the leader is connected to members {used}")
        self.etcd.pause(used[0])
        paused_at = time.monotonic()
        # The leader stays ready throughout: its lease confirmed in time (/readyz says 503 past
        # the local deadline), the store taking writes.
        readiness, sampling = [], threading.Event()

        def sample():
            while not sampling.is_set():
                readiness.append(e2e.http_status(self.a.metrics_url("/readyz")))
                time.sleep(0.1)
        sampler = threading.Thread(target=sample)
        sampler.start()
        self.addCleanup(sampler.join)
        self.addCleanup(sampling.set)
        last = max(self.events_of("complete"))
        # Checkpoints go on through the other members while it hangs (a write sent to it waits
        # for its request timeout, then is resolved through another).
        self.wait_completions(3, after=last, timeout=self.ttl_s + 10)
        # Two TTLs: past them, a lease that no keepalive renewed would have expired in etcd.
        time.sleep(max(0.0, paused_at + 2 * self.ttl_s - time.monotonic()))
        self.assertLess(time.monotonic() - paused_at, 4 * self.ttl_s, "the completions came late")
        last = max(self.events_of("complete"))
        self.wait_completions(3, after=last, timeout=10)
        sampling.set()
        sampler.join()
        self.assertGreater(readiness.count(200), 20, readiness)
        self.assertEqual(readiness.count(503), 0, f"the leader said not ready: {readiness}")
        now_used = self.etcd.members_used_by(self.a.daemon.pid)
        self.assertTrue(set(now_used) - {used[0]}, f"the leader asks only members {now_used}")
        self.etcd.resume(used[0])
        self.assertIsNone(self.a.daemon.poll(), self.a.read_log("ckptd.log")[-3000:])
        self.assertTrue(self.leading(self.a))
        self.assertEqual(self.a.metric("ckptd_leader_epoch"), epoch)
        self.assertEqual(self.b.role(), "standby")
        # Nothing withheld from the workers (the local lease deadline never passed), so none had
        # to connect again.
        self.assertEqual(self.a.metric("ckptd_worker_messages_withheld_total"), 0)
        report = self.sim_report()
        self.assertEqual((report["disconnects"], report["reconnects"]), (0, 0), report)
        self.assert_ids_never_reused()
        self.assert_tasks_never_stopped()


if __name__ == "__main__":
    e2e.main(globals())
