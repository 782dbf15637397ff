"""The data_dir as a failing disk or a hostile user leaves it, against the daemon as a process:
a database emptied, deleted or damaged is refused with exit code 65 (which the unit does not
restart on), never taken for a new store; damage met while running stops the daemon with the
same code instead of an abort; files are never opened through symbolic links, and a fresh
data_dir is private to the daemon's user and group."""
import os
import sqlite3
import stat
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None


class DataDirTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.config = self.ws.write_config(e2e.declared_pipelines("d", 2, interval_ms=100))
        self.data = self.ws.path("data")
        self.server = f"127.0.0.1:{self.ws.port}"

    def tearDown(self):
        self.ws.close()

    def run_ckptd(self, timeout=60):
        return subprocess.run([self.ws.binary("ckptd"), "--config", self.config],
                              capture_output=True, text=True, timeout=timeout)

    def make_history(self):
        """A store with completed checkpoints, closed cleanly."""
        daemon = self.ws.start_daemon(self.config)
        events = self.ws.path("events.log")
        sim = self.ws.start("ckpt-worker-sim", "--server", self.server, "--job", "d",
                            "--pipelines", "2", "--tasks-per-pipeline", "2",
                            "--event-log", events)
        e2e.wait_until(lambda: sum(1 for e in e2e.read_events(events) if e[0] == "complete") >= 4,
                       30, "checkpoints to complete")
        sim.kill()
        sim.wait()
        self.assertEqual(e2e.stop(daemon), 0)

    def test_a_fresh_data_dir_is_private_and_names_its_store(self):
        self.make_history()
        self.assertEqual(stat.S_IMODE(os.stat(self.data).st_mode), 0o750)
        for name in ("ckptd.db", "STORE_ID", "LOCK"):
            mode = stat.S_IMODE(os.stat(os.path.join(self.data, name)).st_mode)
            self.assertEqual(mode, 0o640, f"{name}: {oct(mode)}")
        with open(os.path.join(self.data, "STORE_ID")) as f:
            self.assertRegex(f.read().strip(), r"^[0-9a-f]{32}$")

    def test_an_emptied_or_deleted_database_is_refused_with_65(self):
        self.make_history()
        db = os.path.join(self.data, "ckptd.db")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        open(db, "w").close()  # truncated to 0 bytes
        r = self.run_ckptd()
        self.assertEqual(r.returncode, 65, r.stdout + r.stderr)
        self.assertIn("is empty", r.stdout + r.stderr)
        self.assertEqual(os.path.getsize(db), 0, "nothing may be created over it")
        os.remove(db)
        r = self.run_ckptd()
        self.assertEqual(r.returncode, 65, r.stdout + r.stderr)
        self.assertIn("is missing", r.stdout + r.stderr)
        self.assertFalse(os.path.exists(db))

    def test_damage_met_while_running_stops_the_daemon_with_65_not_an_abort(self):
        self.make_history()
        db = os.path.join(self.data, "ckptd.db")
        with sqlite3.connect(db) as c:
            root = c.execute(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'checkpoints'").fetchone()[0]
            page = c.execute("PRAGMA page_size").fetchone()[0]
        # The start loads every history (a damaged file then stops it at once, exit 65). Damage
        # the checkpoints table's root page after the load: the first commit meets it.
        daemon = self.ws.start_daemon(self.config)
        with open(db, "r+b") as f:
            f.seek((root - 1) * page)
            f.write(b"\x5a" * page)
        self.ws.start("ckpt-worker-sim", "--server", self.server, "--job", "d", "--pipelines", "2",
                      "--tasks-per-pipeline", "2")
        code = daemon.wait(timeout=60)
        log = self.ws.read_log("ckptd.log")
        self.assertEqual(code, 65, log[-2000:])
        self.assertIn("DATA_LOSS", log)
        self.assertIn("damaged", log)

    def test_symbolic_links_in_the_data_dir_are_refused(self):
        self.make_history()
        victim = self.ws.path("victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        lock = os.path.join(self.data, "LOCK")
        os.remove(lock)
        os.symlink(victim, lock)
        r = self.run_ckptd()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("symbolic link", r.stdout + r.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n", "the lock truncated the link's target")
        os.remove(lock)

        db = os.path.join(self.data, "ckptd.db")
        os.rename(db, self.ws.path("real.db"))
        os.symlink(self.ws.path("real.db"), db)
        r = self.run_ckptd()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("symbolic link", r.stdout + r.stderr)


if __name__ == "__main__":
    e2e.main(globals())
