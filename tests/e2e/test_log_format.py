"""ckptd's log formats as a log shipper and journald see them: log.format json writes one JSON
object per line (time, level, message; job and pipeline for a pipeline's lines); text under
journald (JOURNAL_STREAM naming stderr) drops the timestamp and adds a syslog priority prefix."""
import json
import os
import re
import signal
import socket
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None


class LogFormatTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.addCleanup(self.ws.close)

    def run_daemon(self, config, env=None):
        """Starts ckptd with stderr to its own file; returns (process, path of that file)."""
        log_path = self.ws.path("stderr.log")
        with open(log_path, "ab") as err:
            proc = subprocess.Popen([self.ws.binary("ckptd"), "--config", config],
                                    stdout=subprocess.DEVNULL, stderr=err,
                                    stdin=subprocess.DEVNULL, env=env or os.environ.copy())
        self.ws.procs.append(proc)
        e2e.wait_until(lambda: e2e.listens(proc.pid, self.ws.port) or proc.poll() is not None, 30,
                       "ckptd")
        self.assertIsNone(proc.poll(), self.ws.read_log("stderr.log"))
        return proc, log_path

    def test_json_lines_parse(self):
        config = self.ws.write_config(
            "log:\n  format: json\n  level: debug\n"
            "pipelines:\n  - {job_id: 'j \"quoted\"', pipeline_id: p0, parallelism: 1,"
            " interval_ms: 100}\n")
        # gRPC's own lines too: verbose gRPC logging, and a client that is not speaking HTTP/2.
        proc, log_path = self.run_daemon(config, dict(os.environ, GRPC_VERBOSITY="info"))
        with socket.create_connection(("127.0.0.1", self.ws.port), timeout=5) as garbage:
            garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                garbage.recv(1024)
            except OSError:
                pass
        sim = self.ws.start("ckpt-worker-sim", "--server", f"127.0.0.1:{self.ws.port}",
                            "--job", 'j "quoted"', "--pipelines", "1", "--tasks-per-pipeline",
                            "1", "--duration", "1500ms")
        self.assertEqual(sim.wait(timeout=60), 0, self.ws.read_log("ckpt-worker-sim.log"))
        self.assertEqual(e2e.stop(proc, signal.SIGTERM), 0)

        with open(log_path) as f:
            lines = f.read().splitlines()
        self.assertGreater(len(lines), 5)
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError as e:
                self.fail(f"not a JSON line ({e}): {line!r}")
        for r in records:
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertIn(r["level"], ("trace", "debug", "info", "warning", "error", "critical"))
            self.assertIsInstance(r["message"], str)
        about_pipeline = [r for r in records if "pipeline" in r]
        self.assertTrue(about_pipeline, "no line carried job and pipeline fields")
        for r in about_pipeline:
            self.assertEqual((r["job"], r["pipeline"]), ('j "quoted"', "p0"))
            self.assertFalse(r["message"].startswith("["), r["message"])
        self.assertTrue(any("registered" in r["message"] for r in about_pipeline))
        self.assertTrue(any(r["message"] == "shutdown complete" for r in records))
        self.assertTrue(any(r["message"].startswith("grpc: ") for r in records),
                        "gRPC's own lines did not go through the JSON format")

    def test_text_under_journald_has_no_timestamp(self):
        config = self.ws.write_config("")
        log_path = self.ws.path("stderr.log")
        open(log_path, "w").close()
        st = os.stat(log_path)
        env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
        proc, _ = self.run_daemon(config, env)
        self.assertEqual(e2e.stop(proc, signal.SIGTERM), 0)
        with open(log_path) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^<[2-7]>(debug|info|warning|error|critical) ")
            self.assertIsNone(re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", line), line)
        self.assertIn("<6>info log format: text for journald", lines)

    def test_text_elsewhere_has_a_timestamp(self):
        config = self.ws.write_config("")
        # JOURNAL_STREAM inherited from a parent whose stderr went to the journal, not ours.
        env = dict(os.environ, JOURNAL_STREAM="1:1")
        proc, log_path = self.run_daemon(config, env)
        self.assertEqual(e2e.stop(proc, signal.SIGTERM), 0)
        with open(log_path) as f:
            first = f.readline()
        self.assertRegex(first, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} info ")


if __name__ == "__main__":
    e2e.main(globals())
