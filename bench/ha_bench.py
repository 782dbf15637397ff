#!/usr/bin/env python3
"""High-availability benchmark: real etcd members, two Release ckptd daemons sharing one prefix,
the simulator serving every pipeline with `--server A,B`.

  1. etcd's own floor: sequential single-put round trips through one connection (etcd's JSON
     gateway, measurement only), in ops/s. A daemon that wrote each completion alone could not
     complete more checkpoints per second than this.
  2. Steady state on etcd: P pipelines of T tasks at the interval, a warm-up then a window; the
     simulator's checkpoint duration (trigger to `complete`, as the worker saw it) p50/p99 and
     the durable completions per second over the window. Then capacity: the same with more
     pipelines (8,000 x 2 at 1 s) than the machine completes, so that the completions per second
     are what daemon, simulator and etcd together do on it.
  3. Failover: K times, kill -9 of the leader; the time until the standby is ready, and until
     every pipeline has completed a checkpoint after the kill. The killed daemon is started again
     as the next standby.
  4. The store alone (ckpt-bench-store --etcd: no daemon, simulator or standby beside it), last
     because what it writes slows etcd for what follows: 2,000 pipelines each keeping one commit
     in flight. What etcd and the store complete when the machine's cores are theirs.
  5. With --check-perf-load, last for the same reason: etcd's own `etcdctl check perf`,
     single-put txns from many clients at once, what etcd does unbatched.

  ha_bench.py --build-dir B [--pipelines 1000] [--tasks 2] [--kills 10] [--members 3]
              [--max-txn-ops 128] [--writer-nice -10] [--etcd-arg=FLAG ...] [--keep-etcd-logs DIR]
              [--etcd-gogc PERCENT] [--etcd-nice INCREMENT] [--sim-nice INCREMENT]
              [--check-perf-load s|m|l|xl]
--max-txn-ops runs every member with etcd's --max-txn-ops and the daemons (and the store alone)
with store.etcd.max_txn_ops at it: a larger transaction per raft round. --etcd-nice and
--sim-nice choose who waits for a core when the machine is full (the members, or the steady
phase's simulator; recorded as etcd_nice and sim_nice).
Prints one JSON object on stdout; progress on stderr. Not part of CI (minutes per run).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import e2e_util as e2e  # noqa: E402
import etcd_util  # noqa: E402
from e2e_bench import spans_of, window_quantile  # noqa: E402


def log(msg):
    print(f"  [ha] {msg}", file=sys.stderr, flush=True)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def etcd_sequential_puts(endpoint, count):
    host, port = endpoint.replace("http://", "").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps({"key": "YmVuY2g=", "value": "eA=="})  # "bench" = "x"
    start = time.monotonic()
    for _ in range(count):
        conn.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
        if reply.status != 200:
            raise RuntimeError(f"etcd put answered {reply.status}")
    return count / (time.monotonic() - start)


def etcd_check_perf(endpoints, load):
    """`etcdctl check perf --load LOAD` against the cluster (60 s of single-put txns from many
    clients at once: l is 500 clients asking 8,000 writes/s, xl 1,000 asking 15,000): the writes
    a second etcd did, or None if it printed none. Compacts and defragments after."""
    try:
        r = subprocess.run([etcd_util.ETCDCTL, "--endpoints", ",".join(endpoints), "check",
                            "perf", "--load", load, "--auto-compact", "--auto-defrag"],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "ETCDCTL_API": "3"})
    except subprocess.TimeoutExpired:
        log("etcdctl check perf did not end within 300 s")
        return None
    # e.g. "FAIL: Throughput too low: 3042 writes/s" or "PASS: Throughput is 151 writes/s"
    found = re.search(r"Throughput[^0-9]*([0-9]+) writes/s", r.stdout + r.stderr)
    if not found:
        log(f"etcdctl check perf printed no throughput (exit {r.returncode}): "
            f"{(r.stdout + r.stderr)[-600:]}")
    return int(found.group(1)) if found else None


def store_phase(args, etcd, inflight, runs=3):
    """ckpt-bench-store against the cluster: the store alone, in durable completions per second."""
    binary = os.path.join(args.build_dir, "bench", "ckpt-bench-store")
    endpoints = ",".join(etcd.endpoints)
    # Not counted: a fresh cluster is much faster for its first seconds of load than after.
    limit = ["--etcd-max-txn-ops", str(args.max_txn_ops)]
    subprocess.run([binary, "--etcd", endpoints, "--inflight", str(inflight), "--warmup-s", "1",
                    "--measure-s", "8", *limit], capture_output=True, text=True, timeout=300,
                   check=True)
    rows = []
    for _ in range(runs):
        out = subprocess.run([binary, "--etcd", endpoints, "--inflight", str(inflight),
                              "--warmup-s", "3", "--measure-s", "15", *limit],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"ckpt-bench-store failed: {out.stderr.strip()[-500:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    rates = [r["completions_per_s"] for r in rows]
    return {
        "inflight": inflight,
        "completions_per_s": [round(r) for r in rates],
        "completions_per_s_median": round(statistics.median(rates)),
        "latency_p99_ms": [round(r["latency_p99_us"] / 1000) for r in rows],
        "store_cpu_us_per_completion": [round(r["cpu_us_per_completion"], 1) for r in rows],
        "failed": sum(r["failed"] for r in rows),
    }


class Daemon:
    def __init__(self, ws, name, etcd, args, job, pipelines):
        self.ws, self.name, self.job = ws, name, job
        self.config = ws.path(f"{name}-{job}.yaml")
        declared = "".join(
            f"  - {{job_id: {job}, pipeline_id: p{i}, parallelism: {args.tasks}, "
            f"interval_ms: {args.interval_ms}}}\n" for i in range(pipelines))
        self.port, self.metrics_port = e2e.free_port(), e2e.free_port()
        with open(self.config, "w") as f:
            f.write(f"listen: 127.0.0.1:{self.port}\nmetrics_listen: 127.0.0.1:{self.metrics_port}\n"
                    f"data_dir: {ws.path(name + '-' + job)}\nadvertise: 127.0.0.1:{self.port}\n"
                    "log: {level: info}\nlimits: {max_streams_per_peer: 100000}\n"
                    f"store:\n  backend: etcd\n  writer_nice: {args.writer_nice}\n"
                    f"  etcd: {{endpoints: {etcd.yaml_endpoints()}, "
                    f"prefix: /ckptd-{job}, election_ttl_ms: {args.ttl_ms}, "
                    f"max_txn_ops: {args.max_txn_ops}}}\n"
                    f"pipelines:\n{declared}")
        self.proc = None

    def start(self):
        self.proc = self.ws.start("ckptd", "--config", self.config,
                                  log=f"{self.name}-{self.job}.log")

    def url(self, path):
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    def last_load(self):
        """(source, ms) of this daemon's last load of the store, from its log: "read from etcd"
        or "the standby's watched copy"."""
        found = None
        try:
            with open(self.ws.path(f"{self.name}-{self.job}.log"), errors="replace") as f:
                for line in f:
                    m = re.search(r"store: loaded .* \((read from etcd|the standby's watched copy), "
                                  r"(\d+) ms\)", line)
                    if m:
                        found = (m.group(1), int(m.group(2)))
        except OSError:
            pass
        return found

    def ready(self):
        return self.proc.poll() is None and e2e.http_status(self.url("/readyz"), 2) == 200

    def role(self):
        try:
            page = e2e.http_get(self.url("/metrics"), 5)[2]
        except OSError:
            return None
        for role in ("leader", "standby"):
            if e2e.sample(page, f'ckptd_role{{role="{role}"}}') == 1:
                return role
        return None

    def pipelines(self):
        r = subprocess.run([self.ws.binary("ckptctl"), "--server", f"127.0.0.1:{self.port}",
                            "pipeline", "list", "--job", self.job, "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 else None


def start_pair(ws, etcd, args, job, pipelines):
    """Daemon a (which leads), then b (standby), on the prefix /ckptd-<job>."""
    daemons = [Daemon(ws, "a", etcd, args, job, pipelines),
               Daemon(ws, "b", etcd, args, job, pipelines)]
    daemons[0].start()
    e2e.wait_until(daemons[0].ready, 120, f"daemon a to lead ({job})")
    daemons[1].start()
    e2e.wait_until(lambda: daemons[1].role() == "standby", 60, f"daemon b to stand by ({job})")
    return daemons


def sim_command(ws, daemons, job, pipelines, args):
    servers = ",".join(f"127.0.0.1:{d.port}" for d in daemons)
    return [ws.binary("ckpt-worker-sim"), "--server", servers, "--job", job, "--pipelines",
            str(pipelines), "--tasks-per-pipeline", str(args.tasks), "--channels", "8", "--json"]


def stop_pair(daemons):
    for d in daemons:
        if d.proc.poll() is None:
            e2e.stop(d.proc, timeout=60)


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (Linux /proc), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def leader_counters(daemon):
    """The daemon's durable completions (ckptd_checkpoints_completed_total), etcd transactions
    and round span buckets (e2e_bench.spans_of) so far, or None."""
    try:
        status, _, page = e2e.http_get(daemon.url("/metrics"), 10)
    except OSError:
        return None
    counters = {"completed": e2e.sample(page, "ckptd_checkpoints_completed_total"),
                "txns": e2e.sample(page, "ckptd_etcd_transactions_total"),
                "resent": e2e.sample(page, "ckptd_etcd_transactions_resent_total")}
    if status != 200 or None in counters.values():
        return None
    counters["spans"] = spans_of(page)
    return counters


ETCD_BUCKET = re.compile(r'^etcd_disk_(wal_fsync|backend_commit)_duration_seconds_bucket'
                         r'\{le="([^"]+)"\} (\d+)$')


def etcd_member_counters(etcd):
    """The members' disk latencies so far, their buckets summed over the members ({"wal_fsync":
    {le: count}, "backend_commit": ...}), and their applies etcd itself calls slow
    (etcd_server_slow_apply_total, over 100 ms), and which member leads raft (its index), or None
    if a member did not answer."""
    buckets, slow, leader = {}, 0, None
    for i, endpoint in enumerate(etcd.endpoints):
        try:
            status, _, page = e2e.http_get(endpoint + "/metrics", 10)
        except OSError:
            return None
        if status != 200:
            return None
        for line in page.splitlines():
            m = ETCD_BUCKET.match(line)
            if m:
                series = buckets.setdefault(m.group(1), {})
                bound = float(m.group(2))
                series[bound] = series.get(bound, 0) + int(m.group(3))
        slow += e2e.sample(page, "etcd_server_slow_apply_total") or 0
        if e2e.sample(page, "etcd_server_is_leader") == 1:
            leader = i
    return {"buckets": buckets, "slow_applies": slow, "raft_leader": leader}


def etcd_window(before, after):
    """etcd_member_counters over a window: each disk latency's p50/p99 (bucket bounds, ms) and
    the slow applies; the member that led raft at the window's end (etcd0, etcd1, ...: as in
    cpu_cores_used)."""
    if not before or not after:
        return None
    window = {f"{name}_ms": {f"p{int(q * 100)}_le": window_quantile(before["buckets"].get(name, {}),
                                                                 series, q)
                             for q in (0.5, 0.99)}
              for name, series in sorted(after["buckets"].items())}
    window["slow_applies"] = int(after["slow_applies"] - before["slow_applies"])
    window["raft_leader"] = None if after["raft_leader"] is None else f"etcd{after['raft_leader']}"
    return window


def steady_phase(ws, etcd, args, pipelines, job):
    """At `pipelines` x args.tasks: whether any round failed, how long one takes (the
    simulator's rounds after the warm-up), the durable completions per second over the window
    (the leader's own counter, read at the window's two ends: the simulator's ramp-up is not in
    it) with the etcd txns behind them (committed a second, sent again), where a round's time
    went as the leader saw it (p50/p99 of its trigger delay, fan-out, store commit, fan-in and
    checkpoint duration, as the bucket bounds they fall under), the etcd members' own disk
    latencies (WAL fsync, backend commit) and slow applies, and where the machine's CPU went
    during the window (the leader, the standby keeping its copy warm, the simulator, etcd's
    members)."""
    daemons = start_pair(ws, etcd, args, job, pipelines)
    log(f"{job}: {pipelines}x{args.tasks} @ {args.interval_ms} ms, "
        f"{args.warmup_s:.0f} s warm-up + {args.window_s:.0f} s")
    before = {p["pipeline_id"]: p for p in daemons[0].pipelines()}
    out = ws.path(f"sim-{job}.json")
    with open(out, "wb") as f:
        sim = subprocess.Popen(
            sim_command(ws, daemons, job, pipelines, args) +
            ["--warmup", f"{int(args.warmup_s)}s",
             "--duration", f"{int(args.warmup_s + args.window_s)}s"],
            stdout=f, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            preexec_fn=(lambda: os.nice(args.sim_nice)) if args.sim_nice else None)
    time.sleep(args.warmup_s)
    pids = {"leader": daemons[0].proc.pid, "standby": daemons[1].proc.pid, "simulator": sim.pid}
    pids.update({f"etcd{i}": p.pid for i, p in enumerate(etcd.procs)})
    counters_before = leader_counters(daemons[0])
    etcd_before = etcd_member_counters(etcd)
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    window_start = time.monotonic()
    time.sleep(max(args.window_s - 1, 1))
    cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    counters_after = leader_counters(daemons[0])
    etcd_after = etcd_member_counters(etcd)
    elapsed = time.monotonic() - window_start
    sim.wait(timeout=args.window_s + 180)
    after = daemons[0].pipelines()
    stop_pair(daemons)
    with open(out) as f:
        report = json.loads(f.read().strip().splitlines()[-1])
    failed = sum(p["failed_count"] - before[p["pipeline_id"]]["failed_count"] for p in after)
    cpu_share = {name: round((cpu[name] - cpu_before[name]) / elapsed, 2)
                 for name in pids if cpu[name] is not None and cpu_before[name] is not None}
    rate = txns = resent = spans = None
    if counters_before and counters_after:
        rate = round((counters_after["completed"] - counters_before["completed"]) / elapsed, 1)
        txns = round((counters_after["txns"] - counters_before["txns"]) / elapsed, 1)
        resent = counters_after["resent"] - counters_before["resent"]
        # Where a round's time goes, as the leader saw it: each span's p50/p99 over the window
        # (bucket bounds, ms).
        spans = {name[len("ckptd_"):-len("_seconds")]:
                  {f"p{int(q * 100)}_le": window_quantile(counters_before["spans"].get(name, {}),
                                                          buckets, q)
                   for q in (0.5, 0.99)}
                  for name, buckets in sorted(counters_after["spans"].items())}
    return {"pipelines": pipelines, "checkpoint_ms": report["duration_ms"],
            "durable_completions_per_s": rate, "offered_per_s": pipelines * 1000 / args.interval_ms,
            "etcd_transactions_per_s": txns, "etcd_transactions_resent": resent,
            "leader_spans_ms": spans, "etcd_members": etcd_window(etcd_before, etcd_after),
            "failed": failed, "aborts_seen_by_workers": report["aborts"],
            "cpu_cores_used": cpu_share}


def check_events(path, pipelines):
    """Per pipeline, from the workers' event log: ids never reused (triggers strictly rising),
    every `complete` was triggered, no task stopped."""
    triggers, completes, stopped = {}, {}, 0
    for event, _, pipeline, checkpoint_id, kind in e2e.read_events(path):
        if event == "trigger":
            triggers.setdefault(pipeline, []).append(checkpoint_id)
        elif event == "complete":
            completes.setdefault(pipeline, set()).add(checkpoint_id)
        elif event == "state" and kind in ("STOPPED", "FAILED"):
            stopped += 1
    reused = sum(1 for ids in triggers.values() if ids != sorted(set(ids)))
    untriggered = sum(len(c - set(triggers.get(p, []))) for p, c in completes.items())
    return {"pipelines_seen": len(triggers), "pipelines_with_reused_ids": reused,
            "completes_never_triggered": untriggered, "tasks_stopped": stopped,
            "ok": len(triggers) == pipelines and reused == 0 and untriggered == 0 and stopped == 0}


def check_etcd_dump(etcd, job, path):
    """A final dump of etcd against the workers' event log, per pipeline: the stored id counter
    is at or above every id a worker was sent (none can be handed out again), and the newest
    stored checkpoint at or above the newest `complete` a worker heard (the last one they were
    told of is durable; the takeovers' checks cover the ones before)."""
    prefix = f"/ckptd-{job}"
    events = e2e.read_events(path)
    sent = e2e.newest_id_by_pipeline(events, "trigger")
    heard = e2e.newest_id_by_pipeline(events, "complete")
    lines = etcd.get_prefix(f"{prefix}/counters/{job}/")
    counters = {key.rsplit("/", 1)[1]: int(value) for key, value in zip(lines[::2], lines[1::2])}
    stored = {p: max(ids) for p, ids in etcd.checkpoint_ids(prefix, job).items()}
    below_sent = sorted(p for p, i in sent.items() if counters.get(p, 0) < i)
    lost = sorted(p for p, i in heard.items() if stored.get(p, 0) < i)
    return {"etcd_counters_below_an_id_sent": len(below_sent),
            "etcd_checkpoints_behind_a_complete_heard": len(lost),
            "etcd_examples": (below_sent + lost)[:5]}


def failover_phase(ws, etcd, args):
    daemons = start_pair(ws, etcd, args, "failover", args.pipelines)
    events = ws.path("failover-events.log")
    sim = ws.start("ckpt-worker-sim",
                   *sim_command(ws, daemons, "failover", args.pipelines, args)[1:],
                   "--event-log", events, log="sim-failover.log")
    leader, standby = daemons
    ready_s, all_s, lost, loads = [], [], 0, []
    for k in range(args.kills):
        e2e.wait_until(lambda: all(p["state"] == "RUNNING" and p["completed_count"] > 0
                                   for p in leader.pipelines() or [{"state": ""}]),
                       120, "every pipeline to run before the kill")
        last_before = {p["pipeline_id"]: p["last_completed_checkpoint_id"]
                       for p in leader.pipelines()}
        killed_ms = time.time() * 1000
        killed = time.monotonic()
        leader.proc.kill()
        leader.proc.wait()
        # What the workers had been told was complete when the old leader died: what the
        # simulator has written down by now (a `complete` still in its buffer is checked by the
        # final dump), read once the takeover is timed.
        heard_upto = os.path.getsize(events)
        e2e.wait_until(standby.ready, 120, "the standby to take over")
        ready_s.append(time.monotonic() - killed)
        # Nothing durable lost: before any new round completes, the new leader knows at least
        # what the old one had completed, as its admin API said and as the workers heard.
        heard_before = e2e.newest_id_by_pipeline(e2e.read_events(events, heard_upto),
                                                 "complete")
        lost += sum(1 for p in standby.pipelines() or []
                    if p["last_completed_checkpoint_id"] < max(
                        last_before.get(p["pipeline_id"], 0),
                        heard_before.get(p["pipeline_id"], 0)))
        load = standby.last_load()
        if load:
            loads.append(load)

        def all_completed():
            listed = standby.pipelines()
            return listed is not None and len(listed) == args.pipelines and all(
                p["last_completed_at_ms"] > killed_ms for p in listed)
        e2e.wait_until(all_completed, 120, "every pipeline to complete after the kill")
        all_s.append(time.monotonic() - killed)
        log(f"kill {k + 1}: ready after {ready_s[-1]:.2f} s, every pipeline completed "
            f"after {all_s[-1]:.2f} s")
        leader.start()  # back, as the next standby
        e2e.wait_until(lambda: leader.role() == "standby", 60, "the killed daemon to stand by")
        leader, standby = standby, leader
    sim_alive = sim.poll() is None
    e2e.stop(sim, timeout=60)
    stop_pair(daemons)
    proof = check_events(events, args.pipelines)
    proof.update(check_etcd_dump(etcd, "failover", events))
    slow = sum(1 for r in ready_s if r > args.ttl_ms / 1000 + 2)
    proof["simulator_kept_running"] = sim_alive
    proof["pipelines_behind_the_old_leader"] = lost
    proof["takeovers_over_ttl_plus_2s"] = slow
    proof["ok"] = (proof["ok"] and sim_alive and lost == 0 and slow == 0 and
                   proof["etcd_counters_below_an_id_sent"] == 0 and
                   proof["etcd_checkpoints_behind_a_complete_heard"] == 0)
    return {
        "pipelines": args.pipelines, "kills": args.kills, "election_ttl_ms": args.ttl_ms,
        "ready_s_each": [round(r, 2) for r in ready_s],
        "all_pipelines_completed_s_each": [round(a, 2) for a in all_s],
        "ready_s": {"p50": round(statistics.median(ready_s), 2),
                    "p99": round(percentile(ready_s, 0.99), 2), "max": round(max(ready_s), 2)},
        "all_pipelines_completed_s": {"p50": round(statistics.median(all_s), 2),
                                      "p99": round(percentile(all_s, 0.99), 2),
                                      "max": round(max(all_s), 2)},
        "takeover_load_ms": {source: sorted(ms for src, ms in loads if src == source)
                             for source in sorted({src for src, _ in loads})},
        "proof": proof,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--pipelines", type=int, default=1000, help="failover phase")
    parser.add_argument("--steady-pipelines", type=int, default=5000)
    parser.add_argument("--capacity-pipelines", type=int, default=8000,
                        help="more rounds than the machine completes: the durable completions "
                             "per second it does (0: skip)")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--ttl-ms", type=int, default=5000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--warmup-s", type=float, default=10)
    parser.add_argument("--window-s", type=float, default=30)
    parser.add_argument("--skip-store", action="store_true")
    parser.add_argument("--store-inflight", type=int, default=2000,
                        help="the store alone: pipelines with a commit in flight")
    parser.add_argument("--skip-steady", action="store_true")
    parser.add_argument("--skip-failover", action="store_true")
    parser.add_argument("--max-txn-ops", type=int, default=128,
                        help="etcd's --max-txn-ops on every member and store.etcd.max_txn_ops "
                             "(128: etcd's default)")
    parser.add_argument("--writer-nice", type=int, default=-10,
                        help="store.writer_nice of both daemons (-10: the daemon's default; 0 "
                             "leaves the writer at the daemon's priority)")
    parser.add_argument("--etcd-arg", action="append", default=[], metavar="FLAG",
                        help="one more flag for every etcd member (repeatable), e.g. "
                             "--etcd-arg=--log-level=warn")
    parser.add_argument("--etcd-gogc", type=int, default=0, metavar="PERCENT",
                        help="GOGC of every etcd member (0: what this environment's GOGC says, "
                             "else Go's default, 100)")
    parser.add_argument("--etcd-nice", type=int, default=0, metavar="INCREMENT",
                        help="nice increment of every etcd member and all its threads (negative: "
                             "ahead of the daemons and the simulator, as on machines of its own)")
    parser.add_argument("--sim-nice", type=int, default=0, metavar="INCREMENT",
                        help="nice increment of the steady phase's simulator (positive: behind the "
                             "daemons and etcd, as workers on machines of their own would be)")
    parser.add_argument("--check-perf-load", metavar="LOAD", default="",
                        help="also run `etcdctl check perf --load LOAD` (s, m, l or xl; about a "
                             "minute) last: etcd's throughput of single-put txns from many "
                             "clients at once [empty: skip]")
    parser.add_argument("--keep-etcd-logs", metavar="DIR",
                        help="copy the members' logs here before the cluster is removed")
    args = parser.parse_args()

    ws = e2e.Workspace(args.build_dir)
    etcd = None
    try:
        gogc = {"GOGC": str(args.etcd_gogc)} if args.etcd_gogc > 0 else {}
        etcd = etcd_util.EtcdCluster(args.members,
                                     ["--max-txn-ops", str(args.max_txn_ops), *args.etcd_arg],
                                     extra_env=gogc, nice=args.etcd_nice)
        floor = etcd_sequential_puts(etcd.endpoints[0], 2000)
        log(f"etcd sequential puts: {floor:.0f}/s")
        result = {"bench": "ha", "etcd_members": args.members, "max_txn_ops": args.max_txn_ops,
                  "writer_nice": args.writer_nice,
                  "etcd_gogc": str(args.etcd_gogc or os.environ.get("GOGC", "100")),
                  "etcd_args": args.etcd_arg, "etcd_nice": args.etcd_nice,
                  "sim_nice": args.sim_nice,
                  "etcd_sequential_puts_per_s": round(floor)}
        if not args.skip_steady:
            result["steady"] = steady_phase(ws, etcd, args, args.steady_pipelines, "steady")
            log(f"steady: {result['steady']}")
        if args.capacity_pipelines > 0:
            result["capacity"] = steady_phase(ws, etcd, args, args.capacity_pipelines, "capacity")
            log(f"capacity: {result['capacity']}")
        if not args.skip_failover:
            result["failover"] = failover_phase(ws, etcd, args)
        if not args.skip_store:
            result["store_alone"] = store_phase(args, etcd, args.store_inflight)
            log(f"store alone: {result['store_alone']}")
        if args.check_perf_load:
            # Last, as the store alone: a minute of 1,000 clients' writes leaves etcd slower
            # for what follows (capacity 4,721/s after it against 5,700-7,000/s before).
            writes = etcd_check_perf(etcd.endpoints, args.check_perf_load)
            result["etcd_check_perf"] = {"load": args.check_perf_load, "writes_per_s": writes}
            log(f"etcdctl check perf --load {args.check_perf_load}: {writes} writes/s")
        proved = args.skip_failover or result["failover"]["proof"]["ok"]
        result["status"] = "ok" if proved else "failed"
        print(json.dumps(result))
        return 0 if proved else 1
    finally:
        ws.close()
        if etcd:
            if args.keep_etcd_logs:
                os.makedirs(args.keep_etcd_logs, exist_ok=True)
                for name in sorted(os.listdir(etcd.base_dir)):
                    if name.endswith(".log"):
                        shutil.copy(os.path.join(etcd.base_dir, name), args.keep_etcd_logs)
            etcd.close()


if __name__ == "__main__":
    sys.exit(main())
