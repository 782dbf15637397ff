"""The TLS files as an unlucky operator and an attacker meet them, with real openssl-made files
and a real daemon: a certificate or key that does not load at a refresh (the empty moment of a
`cp`, garbage, a key of another certificate, a CRL that does not parse) is refused, said once
and counted, and the last good set stays in use (new connections keep succeeding); the same files
at start are a configuration error (78). CRLs in DER revoke as PEM ones do. Failed handshakes are
counted and logged at most once per 10 s per reason."""
import os
import pty
import re
import select
import signal
import shutil
import socket
import ssl
import subprocess
import time
import unittest

import e2e_util as e2e
from certs import CertFactory

BUILD_DIR = None


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def run_on_a_terminal(args, timeout):
    """Runs `args` with a pseudo-terminal as its controlling terminal: (exit code, output), the
    code None when it had not ended within `timeout` seconds (it is killed then)."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execv(args[0], args)
        finally:
            os._exit(127)
    output = b""
    deadline = time.monotonic() + timeout
    code = None
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    output += os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                while select.select([master], [], [], 0.1)[0]:  # what it wrote last
                    try:
                        chunk = os.read(master, 4096)
                    except OSError:
                        break
                    if not chunk:
                        break
                    output += chunk
                break
    finally:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    return code, output.decode(errors="replace")


class TlsFilesTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        os.mkdir(self.ws.path("tls"))
        self.certs = CertFactory(self.ws.path("tls"))
        self.srv = self.certs.server()
        self.ops = self.certs.client("ops", cn="ops")
        self.viewer = self.certs.client("viewer", cn="viewer")
        self.crl_dir = self.ws.path("crls")
        os.mkdir(self.crl_dir)

    def tearDown(self):
        if os.environ.get("CKPT_E2E_SHOW_LOG"):
            print(self.ws.read_log("ckptd.log")[-6000:])
        self.ws.close()

    def config(self, crl=False, client_auth="request"):
        return self.ws.write_config(
            "tls:\n"
            f"  cert_file: {self.srv.cert}\n"
            f"  key_file: {self.srv.key}\n"
            f"  client_ca_file: {self.certs.ca.cert}\n"
            f"  client_auth: {client_auth}\n"
            "  refresh_interval_s: 1\n"
            + (f"  crl_dir: {self.crl_dir}\n" if crl else ""))

    def served_cn(self, client=None):
        """The CN of the certificate a new connection is served now (raises if the handshake
        fails)."""
        context = ssl.create_default_context(cafile=self.certs.ca.cert)
        if client:
            context.load_cert_chain(client.cert, client.key)
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", self.ws.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                subject = dict(item[0] for item in tls.getpeercert()["subject"])
                return subject.get("commonName")

    def status_as(self, client):
        """ckptctl status over TLS with `client`'s certificate: (exit code, output)."""
        r = subprocess.run(
            [self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.ws.port}", "--ca-file",
             self.certs.ca.cert, "--cert-file", client.cert, "--key-file", client.key, "status"],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout + r.stderr

    def refusals(self):
        return self.ws.metric("ckptd_tls_reload_failures_total") or 0

    def error_lines(self, needle):
        return [line for line in self.ws.read_log("ckptd.log").splitlines()
                if "tls:" in line and needle in line and "refused" in line]

    def replace(self, path, data):
        """Rewrites `path` in place (as `cp` or an editor does), not atomically."""
        with open(path, "wb") as f:
            f.write(data)

    def test_a_file_that_does_not_load_at_a_refresh_leaves_the_last_good_set_in_use(self):
        daemon = self.ws.start_daemon(self.config())
        self.assertEqual(self.served_cn(), "server")
        good_cert = read_bytes(self.srv.cert)
        good_key = read_bytes(self.srv.key)
        other = self.certs.server("other-server")
        cases = [
            ("an empty certificate", self.srv.cert, b"", "empty"),
            ("garbage as the key", self.srv.key, b"not a key at all\n", "not a PEM file"),
            ("another certificate's key", self.srv.key, read_bytes(other.key),
             "is not the key of the certificate"),
        ]
        for n, (what, path, data, reason) in enumerate(cases, start=1):
            with self.subTest(what):
                self.replace(path, data)
                e2e.wait_until(lambda: len(self.error_lines(reason)) >= 1, 15,
                               f"the refusal of {what} in the log")
                self.assertIsNone(daemon.poll(), "the daemon must not end")
                self.assertEqual(self.served_cn(), "server",
                                 "new connections succeed with the last good set")
                self.assertEqual(self.status_as(self.ops)[0], 0)
                e2e.wait_until(lambda: self.refusals() >= n, 10, "the refusal counted")
                time.sleep(2.5)  # two more refreshes of the same files
                self.assertEqual(len(self.error_lines(reason)), 1,
                                 "said once, not at every refresh")
                self.assertEqual(self.refusals(), n, "counted once per state of the files")
                self.assertIn(path, self.error_lines(reason)[0], "the line names the file")
                self.replace(self.srv.cert, good_cert)
                self.replace(self.srv.key, good_key)
        # A good new pair is taken in as before.
        self.certs.rotate_server("server-rotated")
        e2e.wait_until(lambda: self.served_cn() == "server-rotated", 15,
                       "the rotated certificate to be served")
        self.assertIsNone(daemon.poll())

    def test_the_same_files_at_start_are_a_configuration_error(self):
        other = self.certs.server("other-server")
        good_cert = read_bytes(self.srv.cert)
        good_key = read_bytes(self.srv.key)
        cases = [
            (self.srv.cert, b"", "empty", False),
            (self.srv.key, b"garbage\n", "not a PEM file", False),
            (self.srv.key, read_bytes(other.key), "is not the key", False),
            (os.path.join(self.crl_dir, "bad.crl"), b"\x30\x03garbage", "crl_dir file", True),
        ]
        for path, data, reason, crl in cases:
            with self.subTest(reason):
                self.replace(path, data)
                config = self.config(crl=crl)
                r = subprocess.run([self.ws.binary("ckptd"), "--check-config", config],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 78, r.stdout + r.stderr)
                self.assertIn(reason, r.stdout + r.stderr)
                self.assertIn(path, r.stdout + r.stderr)
                r = subprocess.run([self.ws.binary("ckptd"), "--config", config],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 78, r.stdout + r.stderr)
                self.replace(self.srv.cert, good_cert)
                self.replace(self.srv.key, good_key)
                if crl:
                    os.remove(path)

    def test_an_encrypted_key_is_refused_without_asking_the_terminal(self):
        # Run from a terminal (as an operator does), OpenSSL's default passphrase prompt would
        # wait on it for ever; the daemon gives no prompt and says what is wrong.
        encrypted = subprocess.run(
            ["openssl", "pkey", "-in", self.srv.key, "-aes256", "-passout", "pass:secret"],
            check=True, capture_output=True).stdout
        self.replace(self.srv.key, encrypted)
        code, output = run_on_a_terminal(
            [self.ws.binary("ckptd"), "--check-config", self.config()], timeout=20)
        self.assertIsNotNone(code, "ckptd waited on the terminal: " + output)
        self.assertEqual(code, 78, output)
        self.assertIn("encrypted keys are not supported", output)
        self.assertNotIn("pass phrase", output)

    def der_crl(self, name):
        """The CA's current CRL, as DER, written to crl_dir as `name`."""
        path = os.path.join(self.crl_dir, name)
        subprocess.run(["openssl", "crl", "-in", self.certs.crl(), "-outform", "DER", "-out",
                        path], check=True, capture_output=True)
        return path

    def test_a_der_crl_revokes_and_one_that_does_not_parse_changes_nothing(self):
        self.certs.revoke("viewer")
        self.der_crl("ca-1.crl")
        daemon = self.ws.start_daemon(self.config(crl=True, client_auth="require"))
        self.assertEqual(self.status_as(self.ops)[0], 0)
        code, out = self.status_as(self.viewer)
        self.assertNotEqual(code, 0, "a certificate a DER CRL revokes is refused: " + out)
        # A garbage file among the CRLs at a refresh: refused, said, counted; the revocation
        # stands and the rest goes on.
        self.replace(os.path.join(self.crl_dir, "zz-broken.crl"), b"-----BEGIN X509 CRL-----\nx\n")
        e2e.wait_until(lambda: len(self.error_lines("zz-broken.crl")) >= 1, 15,
                       "the broken CRL refused in the log")
        e2e.wait_until(lambda: self.refusals() >= 1, 10, "the refusal counted")
        self.assertNotEqual(self.status_as(self.viewer)[0], 0)
        self.assertEqual(self.status_as(self.ops)[0], 0)
        os.remove(os.path.join(self.crl_dir, "zz-broken.crl"))
        # A newer DER CRL that also revokes ops, added while the daemon runs.
        self.certs.revoke("ops")
        self.der_crl("ca-2.crl")
        e2e.wait_until(lambda: self.status_as(self.ops)[0] != 0, 20,
                       "ops refused once the new DER CRL is read")
        self.assertIsNone(daemon.poll())

    def test_failed_handshakes_are_counted_and_logged_once_per_reason_per_10_s(self):
        self.ws.start_daemon(self.config())
        attempts = 300
        for _ in range(attempts):
            with socket.create_connection(("127.0.0.1", self.ws.port), timeout=5) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # no TLS hello: a handshake failure
                try:
                    s.recv(100)
                except OSError:
                    pass
        e2e.wait_until(lambda: (self.ws.metric("ckptd_tls_handshake_failures_total") or 0)
                       >= attempts, 20, "every failed handshake counted")
        lines = [line for line in self.ws.read_log("ckptd.log").splitlines()
                 if "TLS handshake failed" in line]
        self.assertGreaterEqual(len(lines), 1)
        self.assertLessEqual(len(lines), 3, "at most once per 10 s per reason:\n" + "\n".join(lines))
        self.assertEqual(self.served_cn(), "server")


if __name__ == "__main__":
    e2e.main(globals())
