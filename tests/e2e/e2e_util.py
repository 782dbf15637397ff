"""Helpers for the end-to-end tests: real ckptd and ckpt-worker-sim processes on loopback.

Every process started here is killed and every temp dir removed when the test ends.
"""
import argparse
import collections
import types
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request


def running_in_ci():
    """CI sets CI in the environment (to anything but "false" or "0")."""
    return os.environ.get("CI", "") not in ("", "false", "0")


def need_tool(test, present, what):
    """A test that needs a program from outside the tree: where it is missing, the test fails in
    CI, so that a green run cannot hide a skipped test; on a developer's machine it is skipped,
    saying so on stderr."""
    if present:
        return
    if running_in_ci():
        test.fail(f"{what} is not installed, and CI must have it")
    print(f"SKIPPED: {what} is not installed (in CI this test fails)", file=sys.stderr)
    test.skipTest(f"{what} is not installed")


def free_port():
    """A loopback port free now, for a process started later to listen on. Picked below the
    kernel's ephemeral range, where a port asked of bind(0) would come from: there every
    outgoing connection of every process on the machine takes its local port, so one of them
    (another test's client) may hold it by the time the process binds it. Never the same port
    twice in one test process: a port picked for a daemon not started yet is still free, and
    would otherwise be picked again for (say) an etcd member started before it."""
    for _ in range(100):
        port = _pick_free_port()
        if port not in _ports_given:
            _ports_given.add(port)
            return port
    raise AssertionError("no free loopback port found in 100 tries")


# Every port free_port() handed out in this process.
_ports_given = set()


def _pick_free_port():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    if ephemeral_low > _FIXED_PORTS_LOW + 1000:
        for _ in range(100):
            port = random.randrange(_FIXED_PORTS_LOW, ephemeral_low)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The lowest port free_port() picks: above the well-known and most registered services' ports.
_FIXED_PORTS_LOW = 20000


def _tcp_sockets(state=None):
    """{socket inode: (local port, remote port)} of every TCP socket in `state` (hex, as
    /proc/net/tcp writes it: 0A listening, 01 established; None: any), IPv4 and IPv6."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)  # the header
                for line in f:
                    # sl, local HEX_IP:HEX_PORT, remote HEX_IP:HEX_PORT, state, ..., inode
                    fields = line.split()
                    if state is None or fields[3] == state:
                        found[f"socket:[{fields[9]}]"] = (int(fields[1].rsplit(":", 1)[1], 16),
                                                          int(fields[2].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            continue
    return found


def _sockets_of(pid, sockets):
    """The values of `sockets` (from _tcp_sockets) that process `pid` holds."""
    held = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # exited meanwhile
        return held
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if link in sockets:
            held.append(sockets[link])
    return held


def listens(pid, port):
    """Whether process `pid` holds a socket listening on TCP `port` (any address), from /proc."""
    return any(local == port for local, _ in _sockets_of(pid, _tcp_sockets("0A")))


def connected_ports(pid):
    """The remote ports of the TCP connections process `pid` holds open now, from /proc."""
    return {remote for _, remote in _sockets_of(pid, _tcp_sockets("01"))}


def peer_ports(pid):
    """The remote ports of every TCP socket process `pid` holds, whatever its state (one whose
    peer has closed stays until the process closes it too)."""
    return {remote for _, remote in _sockets_of(pid, _tcp_sockets())}


def rss_kb(pid):
    """The resident set size of process `pid`, in kB (0 if /proc does not say)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def threads_of(pid):
    """Each live thread of a process: {tid: (name, nice value)} (field 19 of
    /proc/PID/task/TID/stat, counted after the name's ')'); a thread that ends meanwhile is left
    out."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        found[int(tid)] = (name, int(fields[16]))
    return found


def may_lower_nice(nice):
    """Whether a process started from here may lower its nice value to `nice` (CAP_SYS_NICE or
    RLIMIT_NICE), asked of a child so that this process keeps its own."""
    return subprocess.run(
        [sys.executable, "-c", f"import os; os.setpriority(os.PRIO_PROCESS, 0, {nice})"],
        capture_output=True, timeout=30).returncode == 0


def is_sanitized_build(ckptd_binary):
    """True when `ckptd --version` says it was built with sanitizers, whose allocator keeps freed
    memory in quarantine by design: resident-memory bounds do not hold there."""
    version = subprocess.run([ckptd_binary, "--version"], capture_output=True, text=True).stdout
    return "sanitizers" in version


def wait_until(cond, timeout, what):
    """Polls cond() until it is true; fails with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    if not cond():
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def http_get(url, timeout=5):
    """(status, content type, body) of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode(errors="replace")


def http_status(url, timeout=5):
    """The status of a GET, or None when no answer came (refused, reset, timed out)."""
    try:
        return http_get(url, timeout)[0]
    except (OSError, urllib.error.URLError):
        return None


def sample(page, series):
    """The value of the sample line `series value` of a Prometheus page, or None."""
    for line in page.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def declared_pipelines(job, count, **fields):
    """YAML for a `pipelines:` list declaring p0..p<count-1> of `job`, 2 tasks each, with the
    given per-pipeline keys (e.g. interval_ms=100)."""
    keys = "".join(f"    {k}: {v}\n" for k, v in fields.items())
    return "pipelines:\n" + "".join(
        f"  - job_id: {job}\n    pipeline_id: p{i}\n    parallelism: 2\n{keys}"
        for i in range(count))


class Workspace:
    """A temp dir with a config, and the processes started in it."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.dir = tempfile.mkdtemp(prefix="ckptd-e2e-")
        self.port = free_port()
        self.metrics_port = free_port()
        self.procs = []

    def metrics_url(self, path="/metrics"):
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    def metric(self, series):
        """The value of one sample of the daemon's /metrics page, or None."""
        return sample(http_get(self.metrics_url())[2], series)

    def role(self):
        """The daemon's HA role from /metrics (leader, standby or single), or None when it does
        not answer."""
        try:
            page = http_get(self.metrics_url(), timeout=2)[2]
        except OSError:
            return None
        for role in ("leader", "standby", "single"):
            if sample(page, f'ckptd_role{{role="{role}"}}') == 1:
                return role
        return None

    def path(self, name):
        return os.path.join(self.dir, name)

    def binary(self, name):
        for sub in ("server", "client", "tests"):
            p = os.path.join(self.build_dir, sub, name)
            if os.path.exists(p):
                return p
        raise FileNotFoundError(name)

    def write_config(self, body):
        config = self.path("ckptd.yaml")
        with open(config, "w") as f:
            f.write(f"listen: 127.0.0.1:{self.port}\n")
            f.write(f"metrics_listen: 127.0.0.1:{self.metrics_port}\n")
            f.write(f"data_dir: {self.path('data')}\n")
            f.write(body)
        return config

    def start(self, name, *args, log=None):
        with open(self.path(log or (name + ".log")), "ab") as out:  # the child keeps its own fd
            proc = subprocess.Popen([self.binary(name), *args], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def start_daemon(self, config):
        """Starts ckptd and waits until it listens on its gRPC port, and on its HTTP port too when
        the config is this workspace's (the HTTP port opens a moment later, once it is ready).
        The listening sockets must be ckptd's own: another process that took a port picked by
        free_port() answers a connect just as well, while ckptd exits failing to bind it."""
        for attempt in range(3):
            log_start = len(self.read_log("ckptd.log"))
            proc = self.start("ckptd", "--config", config)
            with open(config) as f:
                ports = [self.port]
                if f"metrics_listen: 127.0.0.1:{self.metrics_port}" in f.read():
                    ports.append(self.metrics_port)
            wait_until(lambda: all(listens(proc.pid, p) for p in ports) or
                       proc.poll() is not None, 30, "ckptd to listen")
            if proc.poll() is None:
                return proc
            log = self.read_log("ckptd.log")[log_start:]
            if "address already in use" not in log or attempt == 2:
                raise AssertionError("ckptd exited at start:\n" + log)
            # Another process on the machine took a port between free_port() and the bind:
            # the same daemon on fresh ports (the config names this workspace's ports only).
            self._move_ports(config)
        raise AssertionError("unreachable")

    def _move_ports(self, config):
        with open(config) as f:
            text = f.read()
        for attr in ("port", "metrics_port"):
            old, new = getattr(self, attr), free_port()
            text = text.replace(f"127.0.0.1:{old}\n", f"127.0.0.1:{new}\n")
            setattr(self, attr, new)
        with open(config, "w") as f:
            f.write(text)

    def read_log(self, name):
        try:
            with open(self.path(name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def db(self):
        return sqlite3.connect(self.path("data/ckptd.db"))

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_tls_auth_daemon(ws, job, name, body):
    """Starts ckptd in `ws` with TLS on its gRPC port (client certificates requested, not
    required) and auth on, `job` open to two worker principals: <name>-token (a bearer token)
    and <name>-cert (the client certificate of <name>-worker), then the config `body`. Returns
    what the workers of a test use: certs (a CertFactory; certs.ca.cert is the CA), client (that
    certificate and key), token_path, wrong_token_path (a token no principal holds), and the
    daemon's config and process."""
    from certs import CertFactory
    os.mkdir(ws.path("tls"))
    certs = CertFactory(ws.path("tls"))
    srv = certs.server()
    client = certs.client(name + "w", cn=name + "-worker")
    token, digest = certs.token()
    config = ws.write_config(
        "tls:\n"
        f"  cert_file: {srv.cert}\n"
        f"  key_file: {srv.key}\n"
        f"  client_ca_file: {certs.ca.cert}\n"
        "  client_auth: request\n"
        "auth:\n"
        "  principals:\n"
        f"    - {{name: {name}-token, token_sha256: {digest}, role: worker, jobs: [{job}]}}\n"
        f"    - {{name: {name}-cert, cert_identity: {name}-worker, role: worker, jobs: [{job}]}}\n"
        + body)
    return types.SimpleNamespace(
        certs=certs, client=client, token_path=certs.token_file(token, "worker"),
        wrong_token_path=certs.token_file("not-the-token", "wrong"), config=config,
        daemon=ws.start_daemon(config))


def stop(proc, sig=signal.SIGTERM, timeout=20):
    """Sends `sig` and waits; returns the exit code."""
    proc.send_signal(sig)
    return proc.wait(timeout=timeout)


def trigger_ids_by_pipeline(events):
    """pipeline -> the ids of its triggers, in the order the simulator logged them."""
    triggers = collections.defaultdict(list)
    for e in events:
        if e[0] == "trigger":
            triggers[e[2]].append(e[3])
    return triggers


def newest_id_by_pipeline(events, kind):
    """pipeline -> the highest checkpoint id of its `kind` events ("trigger", "complete")."""
    newest = {}
    for e in events:
        if e[0] == kind:
            newest[e[2]] = max(newest.get(e[2], 0), e[3])
    return newest


def ids_out_of_order(triggers):
    """(pipeline, earlier id, later id) for each trigger id not above the one before it."""
    return [(p, a, b) for p, seq in triggers.items() for a, b in zip(seq, seq[1:]) if a >= b]


def read_events(path, limit_bytes=None):
    """The simulator's --event-log: a list of (event, job, pipeline, checkpoint_id, kind); with
    `limit_bytes`, only what the file held when it was that long."""
    events = []
    if not os.path.exists(path):
        return events
    with open(path) as f:
        lines = f if limit_bytes is None else f.read(limit_bytes).splitlines()
        for line in lines:
            parts = line.split()
            if len(parts) >= 4 and parts[-1] != "":
                kind = parts[4] if len(parts) > 4 else ""
                try:
                    events.append((parts[0], parts[1], parts[2], int(parts[3]), kind))
                except ValueError:
                    pass  # a line cut short by SIGKILL
    return events


_build_dir = None  # set by main()


def build_dir():
    """The --build-dir the running test module was given (for helpers shared by modules)."""
    return _build_dir


def main(module_globals):
    """Runs a test module's unittest tests; sets its BUILD_DIR from --build-dir."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    args, rest = parser.parse_known_args()
    module_globals["BUILD_DIR"] = args.build_dir
    global _build_dir
    _build_dir = args.build_dir
    unittest.main(module=module_globals["__name__"], argv=[sys.argv[0]] + rest)
