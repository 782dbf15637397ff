"""Exactly-once under kill -9 (examples/exactly-once, run by scripts/demo-exactly-once.sh): Redis
streams copied into PostgreSQL by Python workers, one prepared transaction per task and
checkpoint, committed in ckptd's commit phase.

- SQLite store: at least 20 kill -9s within two minutes, half of them the daemon, some right as a
  worker starts a commit (the daemon COMMITTING); every entry is committed exactly once, and some
  welcome found its restore point still COMMITTING and had it committed again;
- etcd store: two daemons, the leader killed once mid-run and the workers a few times; every entry
  exactly once.

Needs redis-server, PostgreSQL 15 (/usr/lib/postgresql/15/bin), curl, Debian's /usr/bin/python3
with python3-grpcio, python3-redis and python3-psycopg2, the Python SDK's stubs in the build
(<build>/python), and etcd for the second test. In CI a missing one fails the test; elsewhere the
test is skipped, saying so.
"""
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
import unittest

import e2e_util as e2e
import etcd_util

BUILD_DIR = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "demo-exactly-once.sh")
PYTHON = "/usr/bin/python3"
PG_BIN = "/usr/lib/postgresql/15/bin"
VERDICT = re.compile(r"^(exactly-once|NOT exactly-once): (\d+) entries, (\d+) duplicates, "
                     r"(\d+) missing, (\d+) kills \((\d+) worker, (\d+) daemon\)$", re.M)
COMMITTING_AGAIN = re.compile(r"(\d+) welcomes found their restore point still COMMITTING")
# After the script's own bound: time for its cleanup, then it is stopped.
GRACE_S = 30


def python_has_modules():
    return subprocess.run([PYTHON, "-c", "import grpc, google.protobuf, redis, psycopg2"],
                          capture_output=True, timeout=60).returncode == 0 \
        if os.access(PYTHON, os.X_OK) else False


def postgres_runnable():
    """PostgreSQL's binaries, and, for root (whom PostgreSQL refuses), a postgres user."""
    if not all(os.access(os.path.join(PG_BIN, b), os.X_OK) for b in ("initdb", "pg_ctl",
                                                                      "postgres")):
        return False
    if os.geteuid() != 0:
        return True
    try:
        pwd.getpwnam("postgres")
        return True
    except KeyError:
        return False


class ExactlyOnceTest(unittest.TestCase):
    def setUp(self):
        e2e.need_tool(self, shutil.which("redis-server") and shutil.which("redis-cli"),
                      "redis-server (Debian: redis-server)")
        e2e.need_tool(self, postgres_runnable(),
                      f"PostgreSQL 15 in {PG_BIN} (Debian: postgresql-15)")
        e2e.need_tool(self, shutil.which("curl"), "curl")
        e2e.need_tool(self, python_has_modules(),
                      f"{PYTHON} with grpc, redis and psycopg2 (Debian: python3-grpcio, "
                      "python3-redis, python3-psycopg2)")
        e2e.need_tool(self, os.path.exists(os.path.join(BUILD_DIR, "python", "ckpt", "v1",
                                                        "worker_pb2.py")),
                      "the Python SDK's stubs in the build (target ckpt_python_sdk)")

    def run_demo(self, bound_s, *args):
        """Runs the demo with --seconds bound_s; returns (its output, the verdict's numbers,
        seconds taken). The demo stops everything it started however it ends; if it outlives its
        own bound, it is told to (SIGTERM, which runs its cleanup), then killed."""
        started = time.monotonic()
        proc = subprocess.Popen([SCRIPT, "--build-dir", BUILD_DIR, "--seconds", str(bound_s),
                                 *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                                env={**os.environ, "PYTHON": PYTHON, "PG_BIN": PG_BIN})
        try:
            output, _ = proc.communicate(timeout=bound_s + GRACE_S)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                output, _ = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
                self.remove_what_the_demo_left(output)
            self.fail(f"the demo outlived its own bound of {bound_s}s:\n{output[-6000:]}")
        took = time.monotonic() - started
        print(output[-3000:])
        self.assertEqual(proc.returncode, 0, output[-6000:])
        verdicts = VERDICT.findall(output)
        self.assertEqual(len(verdicts), 1, output[-6000:])
        word, entries, duplicates, missing, kills, worker_kills, daemon_kills = verdicts[0]
        return output, dict(ok=word == "exactly-once", entries=int(entries),
                            duplicates=int(duplicates), missing=int(missing), kills=int(kills),
                            worker_kills=int(worker_kills),
                            daemon_kills=int(daemon_kills)), took

    def remove_what_the_demo_left(self, output):
        """After a demo killed before its cleanup: PostgreSQL runs in a session of its own (the
        process group's kill missed it), and the temp dir is still there."""
        found = re.search(r"temp dir (\S+)", output)
        if not found or not os.path.isdir(found.group(1)):
            return
        work = found.group(1)
        as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_pg, os.path.join(PG_BIN, "pg_ctl"), "-D",
                        os.path.join(work, "pg", "data"), "stop", "-m", "immediate", "-w"],
                       capture_output=True, timeout=60, cwd="/")
        shutil.rmtree(work, ignore_errors=True)

    def test_sqlite_twenty_kills_of_workers_and_daemon_lose_and_repeat_nothing(self):
        # A sanitized ckptd starts and answers slower: the two-minute bound is the plain build's.
        sanitized = e2e.is_sanitized_build(os.path.join(BUILD_DIR, "server", "ckptd"))
        output, v, took = self.run_demo(180 if sanitized else 115,
                                        "--entries", "20000", "--kills", "20")
        self.assertTrue(v["ok"], output[-6000:])
        self.assertEqual((v["entries"], v["duplicates"], v["missing"]), (20000, 0, 0))
        self.assertGreaterEqual(v["kills"], 20)
        self.assertGreaterEqual(v["worker_kills"], 5)
        self.assertGreaterEqual(v["daemon_kills"], 5)
        if not sanitized:
            self.assertLess(took, 120, "twenty kills and the check within two minutes")
        # Kills landed while a checkpoint was COMMITTING, and its commit was driven again.
        again = COMMITTING_AGAIN.search(output)
        self.assertIsNotNone(again, output[-3000:])
        self.assertGreaterEqual(int(again.group(1)), 1, output[-6000:])

    def test_etcd_leader_killed_mid_run_loses_and_repeats_nothing(self):
        e2e.need_tool(self, etcd_util.installed(), "etcd (Debian: etcd-server, etcd-client)")
        output, v, took = self.run_demo(90, "--store", "etcd", "--entries", "5000",
                                        "--kills", "6")
        self.assertTrue(v["ok"], output[-6000:])
        self.assertEqual((v["entries"], v["duplicates"], v["missing"]), (5000, 0, 0))
        self.assertEqual((v["kills"], v["daemon_kills"]), (6, 1), "the leader once")
        self.assertRegex(output, r"ckptd \d leads now")


if __name__ == "__main__":
    e2e.main(globals())
