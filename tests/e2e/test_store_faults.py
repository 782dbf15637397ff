"""Store faults on a real file system: ckptd's data_dir on a small tmpfs of its own, filled up
(disk full) or remounted read-only while simulated workers keep acking. Checked: the daemon stays
up and keeps serving operators, a round that meets the fault fails with a reason that names it,
no pipeline goes FAILED for it (a full disk is the daemon's failure, not the pipelines'), the
daemon holds new triggers and reports not ready while the store fails, nothing is reported
complete that is not durable, and checkpoints complete again by themselves once space returns.

Needs root and permission to mount a tmpfs; elsewhere the tests are skipped with the reason
(the same properties are covered through an injected store in the integration tests)."""
import contextlib
import errno
import json
import os
import subprocess
import tempfile
import time
import unittest

import e2e_util as e2e

BUILD_DIR = None
PIPELINES = 4
TMPFS_SIZE = "8m"


def mount_error():
    """Why a tmpfs cannot be mounted here, or None if it can."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    probe = tempfile.mkdtemp(prefix="ckptd-mount-probe-")
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "cannot mount a tmpfs: " + r.stderr.strip()
        subprocess.run(["umount", probe], check=True)
        return None
    except FileNotFoundError:
        return "no mount(8) on this machine"
    finally:
        os.rmdir(probe)


MOUNT_ERROR = mount_error()


def config():
    # tolerable_failures 0, the default: one counted failure would put a pipeline in FAILED.
    return "lease_ttl_ms: 2000\nheartbeat_interval_ms: 500\n" + e2e.declared_pipelines(
        "faults", PIPELINES, interval_ms=100, timeout_ms=5000, tolerable_failures=0,
        retained=100000)


@unittest.skipIf(MOUNT_ERROR, MOUNT_ERROR or "")
class StoreFaultTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.data = self.ws.path("data")
        os.mkdir(self.data)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", self.data],
                       check=True)
        self.addCleanup(self.unmount)  # runs even if the rest of setUp fails
        self.addCleanup(self.stop_processes)
        self.server = f"127.0.0.1:{self.ws.port}"
        self.events = self.ws.path("events.log")
        self.daemon = self.ws.start_daemon(self.ws.write_config(config()))
        self.sim = self.ws.start("ckpt-worker-sim", "--server", self.server, "--job", "faults",
                                 "--pipelines", str(PIPELINES), "--tasks-per-pipeline", "2",
                                 "--event-log", self.events)

    def tearDown(self):
        if os.environ.get("CKPT_E2E_SHOW_LOG"):
            print(self.ws.read_log("ckptd.log")[-4000:])

    def stop_processes(self):
        for p in self.ws.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def unmount(self):
        subprocess.run(["mount", "-o", "remount,rw", self.data], capture_output=True)
        subprocess.run(["umount", "-l", self.data], capture_output=True)
        self.ws.close()

    # --- helpers -------------------------------------------------------------------------------

    def pipelines(self):
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", self.server, "pipeline", "list",
                            "--job", "faults", "-o", "json"],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, "ckptctl must keep working during a store fault:\n"
                         + r.stderr)
        return {p["pipeline_id"]: p for p in json.loads(r.stdout)}

    def query(self, sql):
        """Rows of `sql` on the daemon's SQLite file; the connection is closed again, so that
        nothing keeps the tmpfs busy."""
        with contextlib.closing(self.ws.db()) as db:
            return db.execute(sql).fetchall()

    def completes(self):
        return [e for e in e2e.read_events(self.events) if e[0] == "complete"]

    def max_completed_id(self):
        """Per pipeline, the highest checkpoint id a worker was told is complete."""
        out = {}
        for _, _, pipeline, cid, _ in self.completes():
            out[pipeline] = max(out.get(pipeline, 0), cid)
        return out

    def wait_all_complete_above(self, floor, timeout, what):
        def check():
            seen = self.max_completed_id()
            return all(seen.get(f"p{i}", 0) > floor.get(f"p{i}", 0) for i in range(PIPELINES))
        e2e.wait_until(check, timeout, what)

    def failed_total(self):
        return sum(p["failed_count"] for p in self.pipelines().values())

    def assert_every_complete_is_durable(self):
        """Stops the daemon cleanly and compares the simulator's `complete`s with the SQLite file."""
        self.assertEqual(e2e.stop(self.daemon), 0, self.ws.read_log("ckptd.log")[-3000:])
        stored = set(self.query(
            "SELECT pipeline_id, checkpoint_id FROM checkpoints WHERE job_id='faults'"))
        told = {(pipeline, cid) for _, _, pipeline, cid, _ in self.completes()}
        self.assertTrue(told, "the simulator saw no complete at all")
        self.assertEqual(told - stored, set(),
                         "workers were told these checkpoints are complete, the store lacks them")
        aborted = {(e[2], e[3]) for e in e2e.read_events(self.events) if e[0] == "abort"}
        self.assertEqual(aborted & stored, set(),
                         "workers were told these rounds failed, yet the store has them")
        return len(told)

    def triggers(self):
        return sum(1 for e in e2e.read_events(self.events) if e[0] == "trigger")

    def run_fault(self, inject, clear, reason_fragment):
        self.wait_all_complete_above({}, 30, "every pipeline to complete a checkpoint")
        self.assertEqual(e2e.http_status(self.ws.metrics_url("/readyz")), 200)
        failed_before = self.failed_total()
        inject()
        e2e.wait_until(lambda: self.failed_total() > failed_before, 30,
                       "a round to fail while the store cannot write")
        e2e.wait_until(lambda: self.ws.metric("ckptd_store_writable") == 0, 10,
                       "the daemon to see the store failing")
        during = self.max_completed_id()
        # The daemon must still be up and serving, report not ready, and say why rounds failed.
        self.assertIsNone(self.daemon.poll(), self.ws.read_log("ckptd.log")[-3000:])
        self.assertEqual(e2e.http_status(self.ws.metrics_url("/readyz")), 503)
        self.assertEqual(e2e.http_status(self.ws.metrics_url("/healthz")), 200,
                         "alive: a liveness probe must not restart it for a full disk")
        reasons = [c["failure_reason"] for p in range(PIPELINES) for c in self.history(f"p{p}")
                   if c["status"] == "FAILED"]
        self.assertTrue(any(reason_fragment in x for x in reasons),
                        f"no failed round names the fault ({reason_fragment!r}): {reasons}")
        # Triggers are held: within two seconds at most the rounds already in flight end.
        triggers = self.triggers()
        time.sleep(2)  # a span of time is the property here: nothing may happen in it
        self.assertLessEqual(self.triggers() - triggers, PIPELINES,
                             "pipelines keep triggering rounds that can only fail")
        for pipeline in self.pipelines().values():
            self.assertNotEqual(pipeline["state"], "FAILED",
                                f"{pipeline['pipeline_id']} went FAILED for a full disk")
            self.assertEqual(pipeline["consecutive_failures"], 0)
        self.failed_total_at_end = self.failed_total()
        clear()
        e2e.wait_until(lambda: e2e.http_status(self.ws.metrics_url("/readyz")) == 200, 10,
                       "the daemon to be ready again once the store takes writes")
        self.wait_all_complete_above(during, 30, "checkpoints to complete again after the fault")
        self.assertIsNone(self.daemon.poll())
        for pipeline in self.pipelines().values():
            self.assertEqual(pipeline["state"], "RUNNING")
        verified = self.assert_every_complete_is_durable()
        print(f"\n{self.id()}: {verified} completes verified durable; "
              f"{self.failed_total_at_end} rounds failed during the fault", flush=True)

    def history(self, pipeline):
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", self.server, "checkpoint",
                            "list", "faults", pipeline, "--limit", "50", "-o", "json"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    # --- tests ---------------------------------------------------------------------------------

    def test_disk_full_fails_rounds_and_recovers_when_space_returns(self):
        self.failed_total_at_end = 0
        filler = os.path.join(self.data, "filler")

        def fill():
            # Unbuffered: a short write at the end must not be retried by a buffer's close.
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                chunk = b"\0" * 65536
                while True:
                    os.write(fd, chunk)
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOSPC)
            finally:
                os.close(fd)

        def free():
            os.remove(filler)

        self.run_fault(fill, free, "full")

    def test_read_only_data_dir_at_start_is_a_clear_error_and_history_survives(self):
        # A file system cannot be remounted read-only while ckptd holds files open for writing
        # (EBUSY), so this is the restart after such a remount, e.g. by errors=remount-ro.
        self.wait_all_complete_above({}, 30, "every pipeline to complete a checkpoint")
        self.assertEqual(e2e.stop(self.daemon), 0)
        before = self.query("SELECT COUNT(*) FROM checkpoints")[0][0]
        subprocess.run(["mount", "-o", "remount,ro", self.data], check=True)
        refused = subprocess.run([self.ws.binary("ckptd"), "--config", self.ws.path("ckptd.yaml")],
                                 capture_output=True, text=True, timeout=30)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("Read-only file system", refused.stderr + refused.stdout)
        self.assertIn(self.data, refused.stderr + refused.stdout)
        subprocess.run(["mount", "-o", "remount,rw", self.data], check=True)

        during = self.max_completed_id()
        self.daemon = self.ws.start_daemon(self.ws.path("ckptd.yaml"))
        self.wait_all_complete_above(during, 30, "checkpoints to complete after the restart")
        after = self.query("SELECT COUNT(*) FROM checkpoints")[0][0]
        self.assertGreater(after, before, "history was kept and grows again")
        verified = self.assert_every_complete_is_durable()
        print(f"\n{self.id()}: refused at start with: "
              f"{(refused.stderr + refused.stdout).strip().splitlines()[-1]}; "
              f"{verified} completes verified durable", flush=True)

if __name__ == "__main__":
    e2e.main(globals())
