#!/usr/bin/env python3
"""End-to-end benchmark: a Release ckptd and ckpt-worker-sim as processes on loopback.

One run: ckptd with P pipelines of T tasks declared in its config (interval and timeout given
here), the simulator serving all of them (acks at once), a warm-up, then a measurement window read
from the daemon itself: its web API (`/api/v1/pipelines`, counters read without waiting on any
pipeline's loop, so a snapshot takes milliseconds even under load) before and after the window
gives every pipeline's completed/failed/expired counts, /proc/<pid>/stat the daemon's CPU.
With --time-listing, a `ckptctl pipeline list` is timed after the window, under the same load.
The simulator's JSON summary gives checkpoint duration (trigger to `complete` as the worker saw
it, rounds triggered after the warm-up), the daemon's totals log line at shutdown its trigger
delay (histogram bucket bounds, whole run).

  e2e_bench.py --build-dir B --pipelines 5000 --tasks 2            a scale run (interval 1 s)
  e2e_bench.py --build-dir B --pipelines 16 --tasks 500 --interval-ms 10 --label ingest
                                                                   ack ingest at saturation
  e2e_bench.py --build-dir B --pipelines 5000 --tasks 1 --group-size 5 --label groups
                                                                   1,000 alignment groups of 5
With --group-size K the pipelines are members of alignment groups of K (the interval and timeout
are the groups'), and the simulator reports the trigger skew within each group round.
With --transport connect the simulator opens a Connect stream per pipeline instead of one Session
call per connection (the default, docs/PROTOCOL.md "Worker sessions"); the run reports the frames
and envelopes the daemon wrote (envelopes over frames: the batching).
With --commit-timeout-ms N every pipeline has a commit phase (docs/PROTOCOL.md "Commit phase"): the
simulator sends each task's `committed` as its complete asks for it, and the daemon's commit
duration (its complete to the COMMITTED mark written, ckptd_commit_duration_seconds) is reported
beside the checkpoint's (trigger to complete).
Prints one JSON object on stdout; progress on stderr. Standard library only.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import shutil

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"  [e2e] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (fields 14 and 15 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def list_pipelines(ckptctl, port, job, flags=()):
    out = subprocess.run([ckptctl, "--server", f"127.0.0.1:{port}", *flags, "-o", "json",
                          "pipeline", "list", "--job", job],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return {p["pipeline_id"]: p for p in json.loads(out)}


def snapshot(metrics_port):
    """Every pipeline's counters from the web API, page by page (1,000 rows each)."""
    rows, offset = {}, 0
    while True:
        url = f"http://127.0.0.1:{metrics_port}/api/v1/pipelines?limit=1000&offset={offset}"
        with urllib.request.urlopen(url, timeout=60) as reply:
            page = json.loads(reply.read())
        for p in page["pipelines"]:
            rows[p["pipeline_id"]] = {"completed_count": p["completed_since_start"],
                                      "failed_count": p["failed_since_start"],
                                      "expired_count": p["expired_since_start"],
                                      "state": p["state"]}
        offset += len(page["pipelines"])
        if not page["pipelines"] or offset >= page["matching"]:
            return rows


METRICS_PORT = re.compile(r"metrics on port (\d+)")
BUCKET = re.compile(r'^(ckptd_round_fan_(?:out|in|in_own)_seconds|ckptd_store_commit_seconds|'
                    r'ckptd_checkpoint_duration_seconds|ckptd_trigger_delay_seconds|'
                    r'ckptd_trigger_held_seconds|ckptd_commit_duration_seconds)_bucket'
                    r'\{le="([^"]+)"\} (\d+)$')


def round_spans(metrics_port):
    """The cumulative buckets of the daemon's own share of a round, of its store commits (part
    of the fan-in), of its trigger delay and of whole checkpoints: {name: {le: count}}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=60) as r:
        return spans_of(r.read().decode())


SESSION_COUNTERS = ("ckptd_session_frames_written_total", "ckptd_session_envelopes_written_total")


def session_counters(metrics_port):
    """The daemon's frames and envelopes written to Session calls so far: {name: value}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=60) as r:
        page = r.read().decode()
    values = {}
    for line in page.splitlines():
        name, _, value = line.partition(" ")
        if name in SESSION_COUNTERS:
            values[name] = float(value)
    return values


def spans_of(page):
    """round_spans' buckets from a Prometheus page already read."""
    spans = {}
    for line in page.splitlines():
        m = BUCKET.match(line)
        if m:
            spans.setdefault(m.group(1), {})[float(m.group(2))] = int(m.group(3))
    return spans


def window_quantile(before, after, q):
    """The bucket bound (ms) under which fraction q of the window's observations fall."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0) for b in bounds]
    total = counts[-1] if counts else 0
    if total == 0:
        return None
    for bound, count in zip(bounds, counts):
        if count >= q * total:
            return bound * 1000 if bound != float("inf") else None
    return None


def make_tls(work):
    """Certificates for a TLS run (tests/e2e/certs.py): the daemon's YAML (mTLS, auth with a
    worker and an admin principal) and the client flags of the simulator and of ckptctl."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "e2e"))
    from certs import CertFactory
    directory = os.path.join(work, "tls")
    os.mkdir(directory)
    certs = CertFactory(directory)
    server = certs.server()
    worker = certs.client("worker", cn="bench-worker")
    admin = certs.client("admin", cn="bench-admin")
    yaml = ("tls:\n"
            f"  cert_file: {server.cert}\n  key_file: {server.key}\n"
            f"  client_ca_file: {certs.ca.cert}\n  client_auth: require\n"
            "auth:\n  principals:\n"
            "    - {name: worker, cert_identity: bench-worker, role: worker, jobs: ['*']}\n"
            "    - {name: admin, cert_identity: bench-admin, role: admin}\n")
    def flags(cred):
        return ["--ca-file", certs.ca.cert, "--cert-file", cred.cert, "--key-file", cred.key]
    return yaml, flags(worker), flags(admin)


def write_config(path, port, data_dir, job, pipelines, tasks, interval_ms, timeout_ms, extra="",
                 group_size=0, commit_timeout_ms=0):
    with open(path, "w") as f:
        f.write(extra)
        f.write(f"listen: 127.0.0.1:{port}\n")
        f.write("metrics_listen: 127.0.0.1:0\n")
        # The counters are read from the web view, also when auth is on (it is off by default
        # then); it is on loopback.
        f.write("metrics:\n  web_view: true\n")
        f.write(f"data_dir: {data_dir}\n")
        f.write(f"threads: {os.environ.get('CKPT_E2E_THREADS', '0')}\n")
        f.write("log:\n  level: info\n")
        f.write(f"defaults:\n  interval_ms: {interval_ms}\n  timeout_ms: {timeout_ms}\n")
        if group_size > 0:
            f.write("alignment_groups:\n")
            for g in range((pipelines + group_size - 1) // group_size):
                f.write(f"  - {{name: {job}-g{g}, interval_ms: {interval_ms}, "
                        f"timeout_ms: {timeout_ms}}}\n")
        f.write("pipelines:\n")
        for i in range(pipelines):
            group = f", alignment_group: {job}-g{i // group_size}" if group_size > 0 else ""
            commit = f", commit_timeout_ms: {commit_timeout_ms}" if commit_timeout_ms > 0 else ""
            f.write(f"  - {{job_id: {job}, pipeline_id: p{i}, parallelism: {tasks}{group}"
                    f"{commit}}}\n")


TOTALS = re.compile(r"totals: .*trigger delay p50 <= (\d+) us, p99 <= (\d+) us, max (\d+) us "
                    r"\(n=(\d+)\)")


def run(args):
    server = os.path.join(args.build_dir, "server", "ckptd")
    sim = os.path.join(args.build_dir, "client", "ckpt-worker-sim")
    ckptctl = os.path.join(args.build_dir, "client", "ckptctl")
    work = tempfile.mkdtemp(prefix="ckptd-bench-e2e-", dir=args.work_dir)
    job = "e2e"
    port = free_port()
    config = os.path.join(work, "ckptd.yaml")
    extra_yaml, sim_flags, ctl_flags = make_tls(work) if args.tls else ("", [], [])
    if args.writer_nice is not None:
        extra_yaml += f"store: {{writer_nice: {args.writer_nice}}}\n"
    write_config(config, port, os.path.join(work, "data"), job, args.pipelines, args.tasks,
                 args.interval_ms, args.timeout_ms, extra=extra_yaml, group_size=args.group_size,
                 commit_timeout_ms=args.commit_timeout_ms)
    daemon_log = open(os.path.join(work, "ckptd.log"), "w+")
    daemon = subprocess.Popen([server, "--config", config], stdout=daemon_log,
                              stderr=subprocess.STDOUT)
    sim_proc = None
    result = {"bench": "e2e", "label": args.label, "pipelines": args.pipelines,
              "tasks": args.tasks, "streams_per_pipeline": args.streams,
              "interval_ms": args.interval_ms, "tls": args.tls, "group_size": args.group_size,
              "commit_timeout_ms": args.commit_timeout_ms, "transport": args.transport}
    if args.writer_nice is not None:
        result["writer_nice"] = args.writer_nice
    try:
        deadline = time.monotonic() + 120
        while True:
            daemon_log.seek(0)
            started = METRICS_PORT.search(daemon_log.read())
            if started:
                metrics_port = int(started.group(1))
                break
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ckptd did not start; see its log")
            time.sleep(0.1)
        # The simulator runs until it is told to stop after the second listing: a listing of
        # tens of thousands of pipelines from a busy daemon can take many seconds, and a window
        # that outlived the simulator would measure an idle daemon.
        sim_out = open(os.path.join(work, "sim.json"), "w+")
        sim_proc = subprocess.Popen(
            [sim, "--server", f"127.0.0.1:{port}", *sim_flags, "--job", job, "--pipelines",
             str(args.pipelines), "--tasks-per-pipeline", str(args.tasks),
             "--streams-per-pipeline", str(args.streams),
             "--warmup", f"{int(args.warmup_s * 1000)}ms", "--json",
             "--threads", str(args.sim_threads), "--channels", str(args.sim_channels),
             "--transport", args.transport,
             *(["--group-size", str(args.group_size)] if args.group_size > 0 else [])],
            stdout=sim_out, stderr=subprocess.DEVNULL)
        log(f"{args.label}: {args.pipelines} x {args.tasks} tasks, interval {args.interval_ms} ms; "
            f"warm-up {args.warmup_s} s, window {args.window_s} s")
        time.sleep(args.warmup_s)
        before = snapshot(metrics_port)
        spans0 = round_spans(metrics_port)
        frames0 = session_counters(metrics_port)
        cpu0, sim_cpu0, t0 = cpu_seconds(daemon.pid), cpu_seconds(sim_proc.pid), time.monotonic()
        time.sleep(args.window_s)
        cpu1, sim_cpu1, t1 = cpu_seconds(daemon.pid), cpu_seconds(sim_proc.pid), time.monotonic()
        spans1 = round_spans(metrics_port)
        frames1 = session_counters(metrics_port)
        after = snapshot(metrics_port)
        ctl_list_s = None
        if args.time_listing:
            listed = time.monotonic()
            list_pipelines(ckptctl, port, job, ctl_flags)
            ctl_list_s = round(time.monotonic() - listed, 2)
        threads = proc_threads(daemon.pid)
        if sim_proc.poll() is not None:
            raise RuntimeError(f"the simulator ended (exit {sim_proc.returncode}) before the "
                               "window did")
        sim_proc.send_signal(signal.SIGTERM)
        sim_proc.wait(timeout=120)
        sim_out.seek(0)
        summary = json.loads(sim_out.read().strip().splitlines()[-1])
    finally:
        if sim_proc and sim_proc.poll() is None:
            sim_proc.kill()
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.kill()
    daemon_log.seek(0)
    totals = TOTALS.search(daemon_log.read())
    daemon_log.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)

    window = t1 - t0
    def delta(key):
        return {pid: after[pid][key] - before.get(pid, {}).get(key, 0) for pid in after}
    completed = delta("completed_count")
    failed = sum(delta("failed_count").values()) + sum(delta("expired_count").values())
    # At a fixed interval every pipeline completes at least this many rounds in the window.
    rounds_expected = max(0, int(window * 1000 // args.interval_ms) - 1)
    behind = sum(1 for pid in completed if completed[pid] < rounds_expected)
    total_completed = sum(completed.values())
    running = sum(1 for p in after.values() if p["state"] == "RUNNING")
    result.update({
        "window_s": round(window, 3),
        "running_pipelines": running,
        "completed_per_s": total_completed / window,
        "acks_per_s": total_completed * args.tasks / window,
        "failed_or_expired": failed,
        "rounds_expected_per_pipeline": rounds_expected,
        "min_rounds_per_pipeline": min(completed.values()) if completed else 0,
        "pipelines_behind": behind,
        "daemon_cpu_pct": 100 * (cpu1 - cpu0) / window,
        "sim_cpu_pct": 100 * (sim_cpu1 - sim_cpu0) / window,
        "daemon_threads": threads,
        # How long `ckptctl pipeline list` of every pipeline took, under the load.
        "ctl_list_s": ctl_list_s,
        "sim_acks_per_s": summary["acks"] / (summary["run_ms"] / 1000),
        "checkpoint_p50_ms": summary["duration_ms"]["p50"],
        "checkpoint_p99_ms": summary["duration_ms"]["p99"],
        "checkpoint_max_ms": summary["duration_ms"]["max"],
        # Aborts while the streams said goodbye (a member's goodbye ends its group's round for
        # the others) are not the run's.
        "sim_aborts": summary["aborts"] - summary.get("aborts_at_goodbye", 0),
        "trigger_delay_p50_le_us": int(totals.group(1)) if totals else None,
        "trigger_delay_p99_le_us": int(totals.group(2)) if totals else None,
        "trigger_delay_max_us": int(totals.group(3)) if totals else None,
    })
    # The daemon's own share of a round (bucket bounds; buckets are x2 apart).
    for name, key in (("ckptd_round_fan_out_seconds", "fan_out"),
                      ("ckptd_round_fan_in_seconds", "fan_in"),
                      ("ckptd_round_fan_in_own_seconds", "fan_in_own"),
                      ("ckptd_store_commit_seconds", "store_commit"),
                      ("ckptd_commit_duration_seconds", "commit_phase"),
                      # A round held past its due time by the one before it (its commit).
                      ("ckptd_trigger_held_seconds", "trigger_held")):
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            result[f"{key}_{label}_le_ms"] = window_quantile(spans0.get(name, {}),
                                                             spans1.get(name, {}), q)
    frames = frames1.get(SESSION_COUNTERS[0], 0) - frames0.get(SESSION_COUNTERS[0], 0)
    envelopes = frames1.get(SESSION_COUNTERS[1], 0) - frames0.get(SESSION_COUNTERS[1], 0)
    result.update({"session_frames_per_s": frames / window,
                   "envelopes_per_frame": envelopes / frames if frames else None})
    if args.commit_timeout_ms > 0:
        # Every complete asked for a commit and (but the rounds still committing at the end)
        # every one was marked COMMITTED.
        result.update({"sim_commits": summary.get("commits", 0),
                       "sim_all_committed": summary.get("all_committed", 0)})
    if "trigger_skew_ms" in summary:
        result.update({
            "group_skew_p50_ms": summary["trigger_skew_ms"]["p50"],
            "group_skew_p99_ms": summary["trigger_skew_ms"]["p99"],
            "group_skew_max_ms": summary["trigger_skew_ms"]["max"],
            "group_rounds_sampled": summary["trigger_skew_ms"]["rounds"],
        })
    every_round = (running == args.pipelines and behind == 0 and failed == 0)
    result["every_round"] = every_round
    result["sustained"] = every_round and summary["duration_ms"]["p99"] <= args.max_p99_ms
    result["status"] = "ok"
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--work-dir", default=None, help="where temp dirs go (default: system temp)")
    p.add_argument("--pipelines", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=2)
    p.add_argument("--streams", type=int, default=1,
                   help="worker streams each pipeline's tasks are spread over")
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--timeout-ms", type=int, default=10000)
    p.add_argument("--warmup-s", type=float, default=5)
    p.add_argument("--window-s", type=float, default=10)
    p.add_argument("--sim-threads", type=int, default=2)
    p.add_argument("--sim-channels", type=int, default=1, help="TCP connections of the simulator")
    p.add_argument("--max-p99-ms", type=float, default=100, help="checkpoint duration p99 target")
    p.add_argument("--label", default="scale")
    p.add_argument("--group-size", type=int, default=0,
                   help="members per alignment group (0: no groups)")
    p.add_argument("--transport", choices=("session", "connect"), default="session",
                   help="the simulator's: one Session call per connection, or a Connect stream "
                        "per pipeline")
    p.add_argument("--commit-timeout-ms", type=int, default=0,
                   help="every pipeline's commit_timeout_ms (0: no commit phase)")
    p.add_argument("--tls", action="store_true",
                   help="mTLS and auth on the gRPC port (certificates made with openssl)")
    p.add_argument("--time-listing", action="store_true",
                   help="after the window, time a `ckptctl pipeline list` of every pipeline under "
                        "the same load (the simulator's checkpoint figures then include it)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data)")
    p.add_argument("--writer-nice", type=int, default=None,
                   help="store.writer_nice of the daemon (default: the daemon's, -10)")
    args = p.parse_args()
    try:
        result = run(args)
    except Exception as e:  # one failed configuration must not end the whole suite
        result = {"bench": "e2e", "label": args.label, "pipelines": args.pipelines,
                  "tasks": args.tasks, "interval_ms": args.interval_ms, "status": "failed",
                  "error": str(e)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
