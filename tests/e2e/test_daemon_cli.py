"""ckptd's command line as a user meets it: --version, --check-config, bad configs, SIGTERM."""
import os
import signal
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None


class DaemonCliTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)

    def tearDown(self):
        self.ws.close()

    def run_ckptd(self, *args):
        return subprocess.run([self.ws.binary("ckptd"), *args], capture_output=True, text=True,
                              timeout=30)

    def test_version(self):
        r = self.run_ckptd("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^ckptd \d+\.\d+\.\d+")

    def test_check_config_accepts_a_valid_file(self):
        config = self.ws.write_config("pipelines:\n  - {job_id: j, pipeline_id: p, parallelism: 2}\n")
        r = self.run_ckptd("--check-config", config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("valid", r.stdout)

    def test_check_config_names_file_line_and_column(self):
        config = self.ws.write_config("pipelines:\n  - job_id: j\n    pipeline_id: p\n"
                                      "    parallelism: 2\n    interval_ms: 5\n")
        r = self.run_ckptd("--check-config", config)
        self.assertEqual(r.returncode, 78, "EX_CONFIG, which the unit does not restart on")
        self.assertIn(config + ":", r.stderr)
        self.assertIn("interval_ms", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_bad_config_at_start_exits_non_zero(self):
        config = self.ws.write_config("threads: lots\n")
        r = self.run_ckptd("--config", config)
        self.assertEqual(r.returncode, 78, r.stderr)
        # The fourth line of the file (after listen, metrics_listen and data_dir).
        self.assertIn(":4:", r.stderr)

    def test_corrupt_database_is_refused_not_reset(self):
        config = self.ws.write_config("")
        os.makedirs(self.ws.path("data"))
        garbage = b"this is not a database, and it must survive ckptd's start\n" * 100
        with open(self.ws.path("data/ckptd.db"), "wb") as f:
            f.write(garbage)
        r = self.run_ckptd("--config", config)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ckptd.db", r.stderr + r.stdout)
        with open(self.ws.path("data/ckptd.db"), "rb") as f:
            self.assertEqual(f.read(), garbage, "the file was changed")

    def test_second_daemon_on_the_same_data_dir_is_refused(self):
        config = self.ws.write_config("")
        daemon = self.ws.start_daemon(config)
        with open(self.ws.path("other.yaml"), "w") as f:
            f.write(f"listen: 127.0.0.1:{e2e.free_port()}\ndata_dir: {self.ws.path('data')}\n")
        r = self.run_ckptd("--config", self.ws.path("other.yaml"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"in use by another ckptd (pid {daemon.pid})", r.stderr + r.stdout)
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0)

    def test_sigterm_shuts_down_cleanly(self):
        config = self.ws.write_config("")
        daemon = self.ws.start_daemon(config)
        self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0)
        self.assertIn("shutdown complete", self.ws.read_log("ckptd.log"))

    def test_the_store_writer_thread_runs_at_store_writer_nice(self):
        # Every durable completion passes the writer: it runs at store.writer_nice (-10 by
        # default), the daemon's other threads at the daemon's own value.
        allowed = e2e.may_lower_nice(-10)
        warning = "the writer thread keeps its priority"
        for body, wanted in (("", -10), ("store: {writer_nice: 0}\n", 0)):
            daemon = self.ws.start_daemon(self.ws.write_config(body))
            own = os.getpriority(os.PRIO_PROCESS, daemon.pid)  # the main thread's
            refused = wanted != 0 and not allowed  # no CAP_SYS_NICE: a warning, not an error
            expected = own if refused or wanted == 0 else wanted
            # The writer names itself and sets its priority as it starts, which may be just
            # after the port accepts.
            e2e.wait_until(lambda: writer_nice(daemon.pid) == expected, 10,
                           f"the store writer at nice {expected}")
            others = set(n for name, n in e2e.threads_of(daemon.pid).values()
                         if name != "ckpt-store")
            self.assertEqual(others, {own}, "only the writer's priority moves")
            log = self.ws.read_log("ckptd.log")
            if refused:
                self.assertIn(warning, log)
            else:
                self.assertNotIn(warning, log)
            self.assertEqual(e2e.stop(daemon, signal.SIGTERM), 0)


def writer_nice(pid):
    """The nice value of the one store writer thread, or None while there is not exactly one."""
    writers = [n for name, n in e2e.threads_of(pid).values() if name == "ckpt-store"]
    return writers[0] if len(writers) == 1 else None


if __name__ == "__main__":
    e2e.main(globals())
