#!/usr/bin/env python3
"""Trigger delay at 100,000 pipelines, run after run: ckptd beside the bare Asio pattern.

One figure per benchmark hides what matters most on a shared machine: how often the tail holds.
This runs N pairs, each pair ckptd's scheduler (ckpt-bench-scheduler) and then the anchors' bare
Asio ckpt pattern (asio_timers --pattern ckpt, 2 threads, strands), both at P pipelines and a 1 s
interval with the same warm-up and window; first on the machine as it is, then with a CPU hog beside both (one process spinning
for the whole of its half, pinned to the last core when `taskset` is there). Every run's p50/p99
and the pair's ratio are kept; the summary says in how many pairs ckptd's p99 was within 3x of
the anchor's p99 of the same pair. ckptd's delay is the timer's lateness, counted from when a round
could go; how long a round before held it past its due time is kept beside it (held p99, rounds
held), and is not part of the ratio.

  scheduler_pairs.py --bench B/bench/ckpt-bench-scheduler --asio A/limits/build/asio_timers

Prints one JSON object on stdout; progress on stderr. Standard library only. A run that fails or
prints no JSON is kept as failed (it counts as a miss).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def log(msg):
    print(f"  [pairs] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, timeout_s):
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=timeout_s, check=False, text=True).stdout
    except subprocess.TimeoutExpired:
        return None
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        return None
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return None


class CpuHog:
    """One process spinning on a core until stopped: the same for ckptd and for the anchor."""

    def __init__(self):
        spin = [sys.executable, "-c", "while True: pass"]
        last_core = str(max(0, (os.cpu_count() or 1) - 1))
        cmd = (["taskset", "-c", last_core] + spin) if shutil.which("taskset") else spin
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def one_pair(args):
    ckptd = run_json([args.bench, "--pipelines", str(args.pipelines), "--warmup-s",
                      str(args.warmup_s), "--measure-s", str(args.measure_s)], 180)
    time.sleep(1)
    asio = run_json([args.asio, "--timers", str(args.pipelines), "--threads", "2", "--strand",
                     "1", "--pattern", "ckpt", "--warmup-s", str(args.warmup_s), "--measure-s",
                     str(args.measure_s)], 180)
    time.sleep(1)
    row = {"ckptd_p50_us": None, "ckptd_p99_us": None, "ckptd_cpu_pct": None,
           "ckptd_held_p99_us": None, "ckptd_held_rounds": None, "anchor_p50_us": None, "anchor_p99_us": None, "anchor_cpu_pct": None,
           "ratio": None, "within_3x": False}
    if ckptd and ckptd.get("status") == "ok":
        row.update(ckptd_p50_us=ckptd["p50_us"], ckptd_p99_us=ckptd["p99_us"],
                   ckptd_cpu_pct=round(ckptd["cpu_pct"], 1),
                   ckptd_held_p99_us=ckptd.get("held_p99_us"),
                   ckptd_held_rounds=ckptd.get("held_rounds"))
    if asio and asio.get("status") == "ok":
        row.update(anchor_p50_us=asio["lat_p50_us"], anchor_p99_us=asio["lat_p99_us"],
                   anchor_cpu_pct=asio["cpu_pct"])
    if row["ckptd_p99_us"] is not None and row["anchor_p99_us"]:
        row["ratio"] = round(row["ckptd_p99_us"] / row["anchor_p99_us"], 2)
        row["within_3x"] = row["ratio"] <= 3
    return row


def series(args, loaded):
    rows = []
    hog = CpuHog() if loaded else None
    try:
        for i in range(args.pairs):
            rows.append(one_pair(args))
            log(f"{'load' if loaded else 'quiet'} pair {i + 1}/{args.pairs}: {rows[-1]}")
    finally:
        if hog:
            hog.stop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="ckpt-bench-scheduler")
    ap.add_argument("--asio", required=True, help="the anchors' asio_timers")
    ap.add_argument("--pipelines", type=int, default=100000)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--warmup-s", type=float, default=4)
    ap.add_argument("--measure-s", type=float, default=5)
    ap.add_argument("--no-load", action="store_true", help="skip the series beside a CPU hog")
    args = ap.parse_args()
    if args.pairs < 1 or args.pipelines < 1:
        ap.error("--pairs and --pipelines must be at least 1")
    for path in (args.bench, args.asio):
        if not os.access(path, os.X_OK):
            ap.error(f"not an executable: {path}")
    out = {"bench": "scheduler_pairs", "pipelines": args.pipelines, "pairs": args.pairs}
    for name, loaded in (("quiet", False), ("load", True)):
        if loaded and args.no_load:
            continue
        rows = series(args, loaded)
        out[name] = rows
        out[f"{name}_within_3x"] = sum(1 for r in rows if r["within_3x"])
    out["status"] = "ok"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
