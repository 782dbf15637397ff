"""An etcd cluster of real members on loopback for the end-to-end tests (Debian's etcd-server).

Each member is a child process that dies with the test (PR_SET_PDEATHSIG) even when the test
itself is killed; its data dir is under the workspace."""
import base64
import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from e2e_util import Workspace, connected_ports, free_port, http_status, wait_until

ETCD = "/usr/bin/etcd"
ETCDCTL = "/usr/bin/etcdctl"
_PR_SET_PDEATHSIG = 1


def installed():
    return os.access(ETCD, os.X_OK) and os.access(ETCDCTL, os.X_OK)


def _die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class EtcdCluster:
    """`members` etcd members on loopback, their data and logs in a temp dir of their own
    (removed by close())."""

    def __init__(self, members=1, extra_args=(), extra_env=None, nice=0):
        self.extra_args = list(extra_args)  # more etcd flags for every member
        self.extra_env = dict(extra_env or {})  # more environment for every member (GOGC)
        self.nice = nice  # every member's (and so every one of its threads') nice increment
        self.base_dir = tempfile.mkdtemp(prefix="ckptd-etcd-")
        self.client_ports = [free_port() for _ in range(members)]
        self.peer_ports = [free_port() for _ in range(members)]
        self.procs = [None] * members
        self.token = f"ckptd-e2e-{os.getpid()}-{time.monotonic_ns()}"
        try:
            for i in range(members):
                self._start(i, "new")
            wait_until(self.healthy, 30, f"etcd ({members} members) to answer")
        except BaseException:
            self.close()
            raise

    @property
    def endpoints(self):
        return [f"http://127.0.0.1:{p}" for p in self.client_ports]

    def yaml_endpoints(self):
        return "[" + ", ".join(self.endpoints) + "]"

    def daemon_yaml(self, port, prefix, election_ttl_ms, more_etcd=""):
        """The store and `advertise` of a ckptd config on this cluster: a daemon on loopback
        `port` sharing `prefix` with the others (`more_etcd`: more store.etcd lines)."""
        return ("store:\n"
                "  backend: etcd\n"
                "  etcd:\n"
                f"    endpoints: {self.yaml_endpoints()}\n"
                f"    prefix: {prefix}\n"
                f"    election_ttl_ms: {election_ttl_ms}\n"
                "    dial_timeout_ms: 1000\n" + more_etcd +
                f"advertise: 127.0.0.1:{port}\n")

    def _name(self, i):
        return f"m{i}"

    def _start(self, i, state):
        cluster = ",".join(f"{self._name(j)}=http://127.0.0.1:{p}"
                           for j, p in enumerate(self.peer_ports))
        data = os.path.join(self.base_dir, f"etcd-{i}")
        log = open(os.path.join(self.base_dir, f"etcd-{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(
            [ETCD, "--name", self._name(i), "--data-dir", data,
             "--listen-client-urls", self.endpoints[i], "--advertise-client-urls",
             self.endpoints[i], "--listen-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
             "--initial-cluster", cluster, "--initial-cluster-state", state,
             "--initial-cluster-token", self.token, "--heartbeat-interval", "50",
             "--election-timeout", "500", "--log-level", "error",
             # As README asks of a production cluster: etcd keeps every revision until compacted.
             "--auto-compaction-mode", "periodic", "--auto-compaction-retention", "5m",
             *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **self.extra_env}, preexec_fn=self._preexec)
        log.close()

    def _preexec(self):
        _die_with_parent()
        if self.nice:
            # Before exec, so that every thread the Go runtime starts inherits it.
            os.nice(self.nice)

    def healthy(self, member=None):
        """True when a write through `member` (default: any) is committed by a quorum."""
        endpoints = [self.endpoints[member]] if member is not None else self.endpoints
        live = [e for e, p in zip(self.endpoints, self.procs) if p and p.poll() is None]
        endpoints = [e for e in endpoints if e in live]
        if not endpoints:
            return False
        r = subprocess.run([ETCDCTL, "--endpoints", ",".join(endpoints), "--command-timeout=1s",
                            "put", "/e2e-probe", "1"], capture_output=True, timeout=10,
                           env={**os.environ, "ETCDCTL_API": "3"})
        return r.returncode == 0

    def raft_leader(self):
        """The index of the member that is etcd's raft leader now (None if none answers)."""
        live = [e for e, p in zip(self.endpoints, self.procs) if p and p.poll() is None]
        r = subprocess.run([ETCDCTL, "--endpoints", ",".join(live), "--command-timeout=2s",
                            "endpoint", "status", "-w", "json"], capture_output=True, text=True,
                           timeout=10, env={**os.environ, "ETCDCTL_API": "3"})
        try:
            statuses = json.loads(r.stdout)
        except ValueError:
            return None
        for status in statuses:
            if status["Status"]["header"]["member_id"] == status["Status"]["leader"]:
                return self.endpoints.index(status["Endpoint"])
        return None

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()

    def restart(self, i):
        self._start(i, "existing")

    def members_used_by(self, pid):
        """The members process `pid` has a connection to now (indices, ascending)."""
        ports = connected_ports(pid)
        return [i for i, port in enumerate(self.client_ports) if port in ports]

    def pause(self, i):
        """SIGSTOPs member `i`: it keeps its connections (the kernel even takes new ones) and
        answers nothing, like a hung process or a paused host."""
        self.procs[i].send_signal(signal.SIGSTOP)

    def resume(self, i):
        if self.procs[i].poll() is None:
            self.procs[i].send_signal(signal.SIGCONT)

    def _get(self, *args):
        r = subprocess.run([ETCDCTL, "--endpoints", ",".join(self.endpoints),
                            "--command-timeout=3s", "get", *args],
                           capture_output=True, text=True, timeout=10,
                           env={**os.environ, "ETCDCTL_API": "3"})
        if r.returncode != 0:
            raise AssertionError(f"etcdctl get {' '.join(args)}: {r.stderr}")
        return r.stdout

    def etcdctl(self, *args, value=None, check=True):
        """Runs `etcdctl args` against every member (`value`: its standard input, as `put KEY`
        reads it); the finished process. `check`: fail unless it succeeds."""
        r = subprocess.run([ETCDCTL, "--endpoints", ",".join(self.endpoints),
                            "--command-timeout=5s", *args], input=value, capture_output=True,
                           timeout=20, env={**os.environ, "ETCDCTL_API": "3"})
        if check and r.returncode != 0:
            raise AssertionError(f"etcdctl {' '.join(args)}: {r.stderr.decode(errors='replace')}")
        return r

    def keys(self, prefix):
        """The keys under `prefix`, as etcdctl lists them."""
        return [k for k in self._get("--prefix", "--keys-only", prefix).splitlines() if k]

    def get_prefix(self, prefix):
        """Keys and values under `prefix`, alternating, as etcdctl prints them."""
        return self._get("--prefix", prefix).splitlines()

    def checkpoint_ids(self, prefix, job):
        """pipeline -> the ids of the checkpoints stored for it under ckptd's `prefix`
        (P/checkpoints/<job>/<pipeline>/<id>-<kind>, server/etcd/etcd_layout.h)."""
        ids = {}
        for key in self.keys(f"{prefix}/checkpoints/{job}/"):
            pipeline, name = key.rsplit("/", 2)[1:]
            ids.setdefault(pipeline, set()).add(int(name.split("-")[0]))
        return ids

    def value(self, key):
        """The value of `key` ("" when absent)."""
        return self._get("--print-value-only", key).strip()

    def history(self, key, timeout=20):
        """Every version of `key` etcd still holds (none is compacted this soon in a test),
        oldest first, as (mod revision, value): a watch from revision 1, read up to the version
        a read just saw."""
        now = json.loads(self._get("-w", "json", key))
        if not now.get("kvs"):
            return []
        newest = int(now["kvs"][0]["mod_revision"])
        proc = subprocess.Popen([ETCDCTL, "--endpoints", ",".join(self.endpoints), "watch",
                                 "--rev=1", "-w", "json", key], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                                env={**os.environ, "ETCDCTL_API": "3"})
        watchdog = threading.Timer(timeout, proc.kill)  # a watch that stalls ends the read
        watchdog.start()
        versions = []
        try:
            for line in proc.stdout:
                try:
                    response = json.loads(line)
                except ValueError:
                    break  # cut short by the watchdog: said below
                for event in response.get("Events") or []:
                    kv = event["kv"]
                    value = base64.b64decode(kv.get("value", "")).decode()
                    versions.append((int(kv["mod_revision"]), value))
                if response.get("Canceled") or (versions and versions[-1][0] >= newest):
                    break
        finally:
            watchdog.cancel()
            proc.kill()
            proc.wait()
            proc.stdout.close()
        if not versions or versions[-1][0] < newest:
            raise AssertionError(f"the watch of {key} ended at {versions[-1:]} before revision "
                                 f"{newest}")
        return versions

    def close(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.base_dir, ignore_errors=True)


def start_pair(test, build_dir, prefix, election_ttl_ms, pipelines_yaml, members=1):
    """For an SDK's HA test: etcd (`members` members), then daemon A, which leads, then daemon
    B, standing by, each in a Workspace of its own declaring `pipelines_yaml` and sharing
    `prefix`. `test`'s cleanups stop them (the daemons before etcd). Returns (etcd, a, b), each
    workspace's daemon process as its `daemon`."""
    if not installed():
        test.fail("etcd is not installed (scripts/setup.sh installs etcd-server and etcd-client)")
    etcd = EtcdCluster(members)
    test.addCleanup(etcd.close)  # cleanups run last-added first: this one after the daemons
    daemons = []
    for name in ("A", "B"):
        ws = Workspace(build_dir)
        test.addCleanup(ws.close)
        ws.daemon = ws.start_daemon(ws.write_config(
            etcd.daemon_yaml(ws.port, prefix, election_ttl_ms) + pipelines_yaml))
        if name == "A":
            wait_until(lambda: ws.role() == "leader" and http_status(
                ws.metrics_url("/readyz"), timeout=2) == 200, 20, "daemon A to lead")
        else:
            wait_until(lambda: ws.role() == "standby", 20, "daemon B to stand by")
        daemons.append(ws)
    return (etcd, *daemons)
