"""Security with real certificates and real processes: TLS on the gRPC port (mTLS, rotation,
revocation), identities and the access policy (roles, job globs, takeovers within a principal),
bearer tokens, SIGHUP policy changes, limits, the audit log, and the refusal to serve off loopback
without TLS and auth. Certificates come from certs.py (the openssl command line)."""
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import unittest

import e2e_util as e2e
from certs import CertFactory

BUILD_DIR = None


class SecurityTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        self.server = f"127.0.0.1:{self.ws.port}"
        os.mkdir(self.ws.path("tls"))
        self.certs = CertFactory(self.ws.path("tls"))
        self.srv = self.certs.server()
        self.ops = self.certs.client("ops", spiffe="spiffe://example.org/ops")
        self.viewer = self.certs.client("viewer", cn="viewer")
        self.etl = self.certs.client("etl", dns="etl-worker.example.org")
        self.etl_other = self.certs.client("etl-other", cn="etl-other-team")
        self.token, self.token_sha = self.certs.token()
        self.token_path = self.certs.token_file(self.token, "robot.token")
        self.wrong_token_path = self.certs.token_file("not-the-token", "wrong.token")
        self.daemon = None

    def tearDown(self):
        if os.environ.get("CKPT_E2E_SHOW_LOG"):
            print(self.ws.read_log("ckptd.log")[-6000:])
        self.ws.close()

    # --- the daemon --------------------------------------------------------------------------

    def tls_yaml(self, client_auth="request", crl=False):
        return (
            "tls:\n"
            f"  cert_file: {self.srv.cert}\n"
            f"  key_file: {self.srv.key}\n"
            f"  client_ca_file: {self.certs.ca.cert}\n"
            f"  client_auth: {client_auth}\n"
            "  refresh_interval_s: 1\n"
            + (f"  crl_dir: {self.certs.crl_dir()}\n" if crl else ""))

    def auth_yaml(self, viewer_role="viewer"):
        return (
            "auth:\n"
            "  principals:\n"
            "    - {name: ops, cert_identity: 'spiffe://example.org/ops', role: admin}\n"
            f"    - {{name: viewer, cert_identity: viewer, role: {viewer_role}}}\n"
            "    - {name: etl, cert_identity: etl-worker.example.org, role: worker, "
            "jobs: [etl]}\n"
            "    - {name: etl-other, cert_identity: etl-other-team, role: worker, "
            "jobs: ['etl*']}\n"
            f"    - {{name: robot, token_sha256: {self.token_sha}, role: admin}}\n")

    PIPELINES = (
        "lease_ttl_ms: 3000\nheartbeat_interval_ms: 500\n"
        "pipelines:\n"
        "  - {job_id: etl, pipeline_id: p0, parallelism: 2, interval_ms: 200}\n"
        "  - {job_id: billing, pipeline_id: p0, parallelism: 2, interval_ms: 200}\n")

    def start(self, extra="", client_auth="request", crl=False, viewer_role="viewer",
              pipelines=""):
        self.config = self.ws.write_config(
            self.tls_yaml(client_auth, crl) + self.auth_yaml(viewer_role) + extra +
            self.PIPELINES + pipelines)
        self.daemon = self.ws.start_daemon(self.config)

    # --- clients -----------------------------------------------------------------------------

    @staticmethod
    def cert_flags(cred, ca=None):
        flags = ["--ca-file", ca or cred.ca if cred else ca]
        if cred:
            flags += ["--cert-file", cred.cert, "--key-file", cred.key]
        return flags

    def ctl(self, *args, flags=(), timeout=60):
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", self.server, *flags, *args],
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return r

    def ctl_as(self, cred, *args):
        return self.ctl(*args, flags=self.cert_flags(cred))

    def hostile(self, *args, flags=(), timeout=120):
        r = subprocess.run([self.ws.binary("ckpt-hostile"), "--server", self.server, *flags,
                            *args], capture_output=True, text=True, timeout=timeout)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        return json.loads(r.stdout.strip().splitlines()[-1])

    def start_sim(self, cred, job, *extra, log="sim.log"):
        return self.ws.start(
            "ckpt-worker-sim", "--server", self.server, *self.cert_flags(cred), "--job", job,
            "--pipelines", "1", "--tasks-per-pipeline", "2", "--ack-delay-ms", "1", *extra,
            log=log)

    def pipeline(self, job, pipeline="p0"):
        r = self.ctl_as(self.ops, "pipeline", "get", job, pipeline, "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def served_certificate_cn(self):
        """The CN of the certificate the daemon serves a new connection now."""
        context = ssl.create_default_context(cafile=self.certs.ca.cert)
        context.load_cert_chain(self.ops.cert, self.ops.key)
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", self.ws.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                subject = dict(item[0] for item in tls.getpeercert()["subject"])
                return subject.get("commonName")

    def accepts_client(self, cred):
        """Whether the daemon accepts a TLS connection with this client certificate: the
        handshake's end, then gRPC's SETTINGS frame (a refused certificate ends it with an alert,
        after the handshake in TLS 1.3). Raw TLS, so that no client-side check gets in the way."""
        context = ssl.create_default_context(cafile=self.certs.ca.cert)
        if cred:
            context.load_cert_chain(cred.cert, cred.key)
        context.set_alpn_protocols(["h2"])
        try:
            with socket.create_connection(("127.0.0.1", self.ws.port), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                    return len(tls.recv(9)) > 0
        except (ssl.SSLError, ConnectionError, socket.timeout):
            return False

    def audit_lines(self):
        return [line for line in self.ws.read_log("ckptd.log").splitlines() if "audit:" in line]

    # --- TLS ---------------------------------------------------------------------------------

    def test_plaintext_and_untrusted_clients_are_refused(self):
        self.start(client_auth="require", crl=True)
        self.assertEqual(self.ctl_as(self.ops, "status").returncode, 0,
                         self.ctl_as(self.ops, "status").stderr)
        plaintext = self.ctl("status")
        self.assertNotEqual(plaintext.returncode, 0)
        self.assertIn("--ca-file", plaintext.stderr)
        # A client that does not trust the daemon's CA is told what to pass.
        untrusted = self.ctl("status", flags=["--ca-file", self.certs.other_ca.cert,
                                              "--cert-file", self.ops.cert,
                                              "--key-file", self.ops.key])
        self.assertNotEqual(untrusted.returncode, 0)
        self.assertIn("not trusted", untrusted.stderr)
        # The daemon itself refuses these (a raw handshake: ckptctl would refuse to send an
        # expired certificate before connecting).
        self.assertTrue(self.accepts_client(self.ops), "the probe itself works")
        refused = {
            "no client certificate": None,
            "another CA": self.certs.client("alien", cn="ops", ca="other_ca"),
            "expired": self.certs.client("old", cn="viewer", expired=True),
            "not yet valid": self.certs.client("early", cn="viewer", not_yet_valid=True),
        }
        for what, cred in refused.items():
            with self.subTest(what):
                self.assertFalse(self.accepts_client(cred), what)
        alien = self.ctl("status", flags=self.cert_flags(
            self.certs.client("alien", cn="ops", ca="other_ca"), ca=self.certs.ca.cert))
        self.assertNotEqual(alien.returncode, 0, alien.stdout)
        # Revocation: the viewer works until its certificate is on the CRL.
        self.assertEqual(self.ctl_as(self.viewer, "pipeline", "list").returncode, 0)
        self.certs.revoke("viewer")  # a new CRL file beside the old one (certs.py says why)
        e2e.wait_until(lambda: not self.accepts_client(self.viewer), 15,
                       "a revoked certificate to be refused")
        self.assertNotEqual(self.ctl_as(self.viewer, "pipeline", "list").returncode, 0)
        self.assertEqual(self.ctl_as(self.ops, "pipeline", "list").returncode, 0)

    def test_a_rotated_certificate_serves_new_connections_and_old_streams_stay(self):
        self.start()
        self.assertEqual(self.served_certificate_cn(), "server")
        sim = self.start_sim(self.etl, "etl", "--duration", "60s", "--json")
        e2e.wait_until(lambda: self.pipeline("etl")["completed_count"] >= 3, 30,
                       "checkpoints over TLS")
        self.certs.rotate_server("server-rotated")
        rotated_at = time.monotonic()
        e2e.wait_until(lambda: self.served_certificate_cn() == "server-rotated", 15,
                       "the rotated certificate to be served")
        self.assertLess(time.monotonic() - rotated_at, 10, "within a few refresh intervals")
        completed = self.pipeline("etl")["completed_count"]
        e2e.wait_until(lambda: self.pipeline("etl")["completed_count"] >= completed + 5, 30,
                       "the old stream to keep checkpointing")
        self.assertEqual(self.ctl_as(self.ops, "status").returncode, 0, "new connections work")
        sim.send_signal(signal.SIGINT)
        sim.wait(30)
        report = json.loads(self.ws.read_log("sim.log").strip().splitlines()[-1])
        self.assertEqual(report["reconnects"], 0, report)

    # --- identities and the policy -----------------------------------------------------------

    def test_the_viewer_lists_but_cannot_change_anything(self):
        self.start()
        self.assertEqual(self.ctl_as(self.viewer, "pipeline", "list").returncode, 0)
        for args in (["pipeline", "delete", "etl", "p0"], ["pipeline", "pause", "etl", "p0"],
                     ["savepoint", "--job", "etl", "--pipeline", "p0"]):
            with self.subTest(" ".join(args)):
                r = self.ctl_as(self.viewer, *args)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn("PERMISSION_DENIED", r.stderr)
        self.assertEqual(self.pipeline("etl")["job_id"], "etl", "still there")
        self.assertTrue(any("principal=viewer method=DeletePipeline job=etl pipeline=p0 "
                            "outcome=PERMISSION_DENIED" in line for line in self.audit_lines()),
                        self.audit_lines())
        self.assertEqual(self.ctl_as(self.ops, "pipeline", "pause", "etl", "p0").returncode, 0)
        self.assertTrue(any("principal=ops method=PausePipeline job=etl pipeline=p0 outcome=OK"
                            in line for line in self.audit_lines()), self.audit_lines())
        # Workers may not use the operator API at all.
        r = self.ctl_as(self.etl, "pipeline", "list")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("PERMISSION_DENIED", r.stderr)
        page = e2e.http_get(self.ws.metrics_url())[2]
        self.assertGreaterEqual(e2e.sample(page, 'ckptd_auth_denied_total{reason="role"}'), 4)

    def test_a_worker_serves_only_its_jobs_and_takes_over_only_its_own_tasks(self):
        self.start()
        other_job = self.hostile("hello", "--job", "billing", "--pipeline", "p0", "--task", "0",
                                 flags=self.cert_flags(self.etl))
        self.assertEqual(list(other_job["codes"]), ["PERMISSION_DENIED"], other_job)
        self.assertIn("billing", other_job["example_error"])
        # The etl principal holds etl/p0's tasks; another principal allowed the job may not take
        # them over, and the holder keeps them.
        self.start_sim(self.etl, "etl", "--duration", "60s")
        e2e.wait_until(lambda: self.pipeline("etl")["registered_tasks"] == 2, 30, "etl's tasks")
        generation = self.pipeline("etl")["generation"]
        takeover = self.hostile("hello", "--job", "etl", "--pipeline", "p0", "--task", "0",
                                "--takeover", flags=self.cert_flags(self.etl_other))
        self.assertEqual(list(takeover["codes"]), ["PERMISSION_DENIED"], takeover)
        self.assertIn("may take over only tasks held by itself", takeover["example_error"])
        self.assertEqual(self.pipeline("etl")["generation"], generation, "nothing was lost")
        # No credentials at all: UNAUTHENTICATED.
        anonymous = self.hostile("hello", "--job", "etl", "--pipeline", "p0", "--task", "0",
                                 flags=["--ca-file", self.certs.ca.cert])
        self.assertEqual(list(anonymous["codes"]), ["UNAUTHENTICATED"], anonymous)
        page = e2e.http_get(self.ws.metrics_url())[2]
        for reason in ("job", "takeover", "no_credentials"):
            self.assertGreaterEqual(
                e2e.sample(page, f'ckptd_auth_denied_total{{reason="{reason}"}}'), 1, reason)

    def test_bearer_tokens_over_tls(self):
        self.start()
        ca = ["--ca-file", self.certs.ca.cert]
        ok = self.ctl("pipeline", "pause", "etl", "p0",
                      flags=ca + ["--token-file", self.token_path])
        self.assertEqual(ok.returncode, 0, ok.stderr)
        wrong = self.ctl("pipeline", "list", flags=ca + ["--token-file", self.wrong_token_path])
        self.assertNotEqual(wrong.returncode, 0)
        self.assertIn("UNAUTHENTICATED", wrong.stderr)
        self.assertIn("token refused", wrong.stderr)
        self.assertNotIn("not-the-token", self.ws.read_log("ckptd.log"), "never the secret")
        # The same through the environment.
        env_run = subprocess.run(
            [self.ws.binary("ckptctl"), "--server", self.server, "status"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
            env=dict(os.environ, CKPTCTL_CA_FILE=self.certs.ca.cert,
                     CKPTCTL_TOKEN_FILE=self.token_path))
        self.assertEqual(env_run.returncode, 0, env_run.stderr)

    def test_sighup_changes_the_policy(self):
        self.start()
        sim = self.start_sim(self.etl, "etl", "--duration", "60s")
        e2e.wait_until(lambda: self.pipeline("etl")["registered_tasks"] == 2, 30, "etl's tasks")
        self.assertNotEqual(self.ctl_as(self.viewer, "pipeline", "pause", "etl", "p0").returncode,
                            0)
        # The viewer becomes an admin; the etl principal loses job etl: its live stream ends.
        narrowed = self.auth_yaml(viewer_role="admin").replace("jobs: [etl]", "jobs: [other]")
        self.ws.write_config(self.tls_yaml() + narrowed + self.PIPELINES)
        self.daemon.send_signal(signal.SIGHUP)
        e2e.wait_until(lambda: "auth policy replaced" in self.ws.read_log("ckptd.log"), 15,
                       "the reload")
        r = self.ctl_as(self.viewer, "pipeline", "pause", "etl", "p0")
        self.assertEqual(r.returncode, 0, r.stderr)
        e2e.wait_until(lambda: self.pipeline("etl")["registered_tasks"] == 0, 15,
                       "the narrowed principal's stream to end")
        self.assertIn("the reloaded policy refuses it", self.ws.read_log("ckptd.log"))
        self.assertEqual(sim.wait(30), sim.returncode)  # the worker stops: PERMISSION_DENIED
        # A broken auth section (a worker principal without jobs) keeps the policy in force.
        broken = narrowed.replace(", jobs: [other]", "")
        self.ws.write_config(self.tls_yaml() + broken + self.PIPELINES)
        self.daemon.send_signal(signal.SIGHUP)
        e2e.wait_until(lambda: "reload refused" in self.ws.read_log("ckptd.log"), 15,
                       "the refused reload")
        self.assertIn("needs 'jobs'", self.ws.read_log("ckptd.log"))
        self.assertEqual(self.ctl_as(self.viewer, "pipeline", "resume", "etl", "p0").returncode, 0)

    def test_a_token_in_clear_counts_only_from_loopback(self):
        address = self.non_loopback_address()
        if not address:
            self.skipTest("this machine has no address but loopback")
        config = self.ws.write_config(
            "insecure: true\n"
            "auth:\n  principals:\n"
            f"    - {{name: robot, token_sha256: {self.token_sha}, role: admin}}\n")
        with open(config) as f:
            text = f.read().replace(f"listen: 127.0.0.1:{self.ws.port}",
                                    f"listen: 0.0.0.0:{self.ws.port}")
        with open(config, "w") as f:
            f.write(text)
        self.daemon = self.ws.start_daemon(config)
        token = ["--token-file", self.token_path]
        local = self.hostile("create-pipeline", "--job", "j", "--pipeline", "local", "--tasks",
                             "1", "--task-bytes", "4", flags=token)
        self.assertEqual(local["code"], "OK", local)
        self.server = f"{address}:{self.ws.port}"
        remote = self.hostile("create-pipeline", "--job", "j", "--pipeline", "remote", "--tasks",
                              "1", "--task-bytes", "4", flags=token)
        self.assertEqual(remote["code"], "UNAUTHENTICATED", remote)
        self.assertIn("plaintext only from loopback", remote["message"])
        page = e2e.http_get(self.ws.metrics_url())[2]
        self.assertEqual(e2e.sample(page, 'ckptd_auth_denied_total{reason="plaintext_token"}'), 1)

    @staticmethod
    def non_loopback_address():
        """An IPv4 address of this machine that is not loopback, or None."""
        try:
            out = subprocess.run(["hostname", "-I"], capture_output=True, text=True,
                                 timeout=10).stdout.split()
        except (OSError, subprocess.SubprocessError):
            return None
        for address in out:
            if "." in address and not address.startswith("127."):
                return address
        return None

    # --- limits ------------------------------------------------------------------------------

    def test_each_limit_is_answered_with_its_code(self):
        self.start("limits:\n"
                   "  max_pipelines: 3\n"
                   "  max_tasks_per_pipeline: 4\n"
                   "  max_id_length: 16\n"
                   "  max_streams_per_peer: 4\n"
                   "  max_message_bytes: 65536\n")
        ops = self.cert_flags(self.ops)

        def create(pipeline, parallelism=2):
            return self.ctl("pipeline", "create", "--job", "etl", "--pipeline", pipeline,
                            "--parallelism", str(parallelism), flags=ops)
        self.assertEqual(create("p1").returncode, 0)
        r = create("p2")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("RESOURCE_EXHAUSTED", r.stderr)
        self.assertIn("limits.max_pipelines (3)", r.stderr)
        self.ctl("pipeline", "delete", "etl", "p1", flags=ops)
        r = create("p3", parallelism=5)
        self.assertIn("INVALID_ARGUMENT", r.stderr)
        self.assertIn("limits.max_tasks_per_pipeline (4)", r.stderr)
        r = create("a-very-long-pipeline-id")
        self.assertIn("INVALID_ARGUMENT", r.stderr)
        self.assertIn("limits.max_id_length (16)", r.stderr)
        etl = self.cert_flags(self.etl)
        long_task = self.hostile("hello", "--job", "etl", "--pipeline", "p0", "--task", "x",
                                 "--task-bytes", "17", flags=etl)
        self.assertEqual(list(long_task["codes"]), ["INVALID_ARGUMENT"], long_task)
        self.assertIn("limits.max_id_length (16)", long_task["example_error"])
        big = self.hostile("hello", "--job", "etl", "--pipeline", "p0", "--task", "x",
                           "--task-bytes", "100000", flags=etl)
        self.assertEqual(list(big["codes"]), ["RESOURCE_EXHAUSTED"], big)
        streams = self.hostile("no-hello", "--streams", "10", flags=etl)
        # At least 6 of 10 (more while the streams of the calls above are still ending).
        self.assertGreaterEqual(streams["codes"].get("RESOURCE_EXHAUSTED", 0), 6, streams)
        self.assertEqual(sum(streams["codes"].values()), 10, streams)
        self.assertIn("limits.max_streams_per_peer (4)", json.dumps(streams))

    def test_a_worker_that_stops_reading_is_ended_at_the_queue_bound(self):
        # Task 0's stream never reads; task 1's stream declines every round with a 1000-byte
        # reason, so that every round sends task 0 an abort of about a kilobyte.
        self.start("limits:\n  max_session_queue_bytes: 65536\n"
                   "defaults: {tolerable_failures: 1000000}\n",
                   pipelines="  - {job_id: etl, pipeline_id: q, parallelism: 2, interval_ms: 10}\n")
        baseline = e2e.rss_kb(self.daemon.pid)
        for attempt in range(3):
            result = self.hostile("no-read", "--job", "etl", "--pipeline", "q",
                                  flags=["--wait-ms", "15000", *self.cert_flags(self.etl)])
            self.assertTrue(result["ended"], result)
            # Ended at the bound, not later: ~1 KiB a round, 64 KiB queued past gRPC's own
            # flow-control window. (The old bound of 10,000 messages took some 5,000 rounds.)
            self.assertLess(result["declines"], 1500, result)
            e2e.wait_until(lambda: self.pipeline("etl", "q")["registered_tasks"] == 0, 15,
                           "the non-reader's and the decliner's tasks to be released")
        log = self.ws.read_log("ckptd.log")
        self.assertIn("limits.max_session_queue_bytes", log)
        page = e2e.http_get(self.ws.metrics_url())[2]
        self.assertEqual(
            e2e.sample(page, 'ckptd_limit_refusals_total{limit="max_session_queue_bytes"}'), 3)
        # A sanitizer build's allocator keeps freed memory in quarantine: no bound holds there.
        if not e2e.is_sanitized_build(self.ws.binary("ckptd")):
            self.assertLess(e2e.rss_kb(self.daemon.pid), baseline + 40 * 1024)

    # --- refusal by default ------------------------------------------------------------------

    def test_serving_off_loopback_needs_tls_and_auth(self):
        config = self.ws.path("open.yaml")
        with open(config, "w") as f:
            f.write(f"listen: 0.0.0.0:{self.ws.port}\ndata_dir: {self.ws.path('data')}\n")
        for argv in (["--config", config], ["--check-config", config]):
            r = subprocess.run([self.ws.binary("ckptd"), *argv], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 78, r.stderr)
            self.assertIn("needs 'tls' and 'auth'", r.stderr)
        # A TLS file that is not usable is a config error too, naming the file.
        bad = self.ws.write_config(
            self.tls_yaml().replace(self.srv.key, self.etl.key) + self.auth_yaml())
        r = subprocess.run([self.ws.binary("ckptd"), "--config", bad], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 78, r.stderr)
        self.assertIn("is not the key of the certificate", r.stderr)
        # insecure: true serves anyway, with a warning.
        with open(config, "a") as f:
            f.write(f"insecure: true\nmetrics_listen: 127.0.0.1:{self.ws.metrics_port}\n")
        self.daemon = self.ws.start_daemon(config)
        self.assertIn("insecure: true", self.ws.read_log("ckptd.log"))


if __name__ == "__main__":
    e2e.main(globals())
