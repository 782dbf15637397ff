#!/usr/bin/env python3
"""A backlog episode (docs/PROTOCOL.md, "Adaptive interval"): ckptd with P pipelines at an
interval I and max_interval_ms M, and ckpt-worker-sim reporting a backlog from A seconds after its
start for D seconds. The trigger times are read back from the store: the gaps between a pipeline's
triggers before, during and after the episode (median and p99 over every pipeline), how long after
the backlog began the first stretched gap ended (every pipeline's), and how long after it ended
the pipelines were back at the interval.

  backlog_bench.py --build-dir B --work-dir W        100 pipelines at 1 s, max 5 s, 6 s + 10 s

Prints one JSON object on stdout; progress on stderr. Standard library only.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from e2e_bench import free_port


def log(msg):
    print(f"  [backlog] {msg}", file=sys.stderr, flush=True)


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run(args):
    work = tempfile.mkdtemp(prefix="backlog-", dir=args.work_dir)
    port = free_port()
    config = os.path.join(work, "ckptd.yaml")
    with open(config, "w") as f:
        f.write(f"listen: 127.0.0.1:{port}\nmetrics_listen: \"\"\ndata_dir: {work}/data\n"
                f"start_spread_ms: 0\nlog:\n  level: warn\npipelines:\n")
        for i in range(args.pipelines):
            f.write(f"  - {{job_id: job, pipeline_id: p{i}, parallelism: 2, interval_ms: "
                    f"{args.interval_ms}, max_interval_ms: {args.max_interval_ms}, "
                    f"timeout_ms: 30000, retained: 100000}}\n")
    daemon = subprocess.Popen([os.path.join(args.build_dir, "server", "ckptd"), "--config", config],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "ckptd.log"),
                                                                     "w"))
    sim = None
    try:
        time.sleep(1)
        started = time.time()
        sim = subprocess.Popen(
            [os.path.join(args.build_dir, "client", "ckpt-worker-sim"), "--server",
             f"127.0.0.1:{port}", "--job", "job", "--pipelines", str(args.pipelines),
             "--tasks-per-pipeline", "2", "--backlog-after", f"{args.after_s}s",
             "--backlog-for", f"{args.for_s}s"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        backlog_from = started + args.after_s
        backlog_to = backlog_from + args.for_s
        total = args.after_s + args.for_s + args.tail_s
        log(f"{args.pipelines} pipelines at {args.interval_ms} ms, max {args.max_interval_ms} ms; "
            f"backlog from {args.after_s} s for {args.for_s} s; {total} s in all")
        time.sleep(total)
    finally:
        for proc in (sim, daemon):
            if proc and proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    db = sqlite3.connect(os.path.join(work, "data", "ckptd.db"))
    rows = db.execute("SELECT pipeline_id, triggered_at_ms FROM checkpoints ORDER BY pipeline_id, "
                      "checkpoint_id").fetchall()
    triggers = {}
    for pipeline, at in rows:
        triggers.setdefault(pipeline, []).append(at / 1000.0)
    before, during, after = [], [], []
    stretched_after, back_after = [], []
    for times in triggers.values():
        gaps = list(zip(times, times[1:]))
        for a, b in gaps:
            gap_ms = (b - a) * 1000
            if b < backlog_from:
                before.append(gap_ms)
            elif a > backlog_from + args.max_interval_ms / 1000 + args.interval_ms / 1000 and \
                    b < backlog_to:
                during.append(gap_ms)
            elif a > backlog_to + args.max_interval_ms / 1000 + args.interval_ms / 1000:
                after.append(gap_ms)
        # The first gap at max_interval_ms that began after the backlog did, and the first gap
        # back at the interval after it ended: when each ended, from the episode's edges.
        long_gap = next((b for a, b in gaps
                         if a >= backlog_from and (b - a) * 1000 >= 0.9 * args.max_interval_ms),
                        None)
        if long_gap is not None:
            stretched_after.append(long_gap - backlog_from)
        short_gap = next((b for a, b in gaps
                          if a >= backlog_to and (b - a) * 1000 <= 1.5 * args.interval_ms), None)
        if short_gap is not None:
            back_after.append(short_gap - backlog_to)
    out = {
        "bench": "backlog", "pipelines": args.pipelines, "interval_ms": args.interval_ms,
        "max_interval_ms": args.max_interval_ms, "backlog_after_s": args.after_s,
        "backlog_for_s": args.for_s,
        "gap_before_p50_ms": statistics.median(before) if before else None,
        "gap_during_p50_ms": statistics.median(during) if during else None,
        "gap_during_p99_ms": percentile(during, 0.99),
        "gap_after_p50_ms": statistics.median(after) if after else None,
        "pipelines_stretched": len(stretched_after),
        "stretched_within_max_s": max(stretched_after) if stretched_after else None,
        "pipelines_back": len(back_after),
        "back_within_max_s": max(back_after) if back_after else None,
    }
    ok = (len(stretched_after) == args.pipelines and len(back_after) == args.pipelines and
          out["gap_during_p50_ms"] is not None and
          out["gap_during_p50_ms"] >= 0.9 * args.max_interval_ms and
          out["gap_after_p50_ms"] is not None and
          out["gap_after_p50_ms"] <= 1.5 * args.interval_ms)
    out["status"] = "ok" if ok else "failed"
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--work-dir", default=tempfile.gettempdir())
    p.add_argument("--pipelines", type=int, default=100)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--max-interval-ms", type=int, default=5000)
    p.add_argument("--after-s", type=int, default=6)
    p.add_argument("--for-s", type=int, default=16)
    p.add_argument("--tail-s", type=int, default=12)
    run(p.parse_args())


if __name__ == "__main__":
    main()
