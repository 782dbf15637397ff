#!/usr/bin/env python3
"""Ack ingest at saturation, pair by pair: ckptd beside bare gRPC at the same minute.

The anchors run first in `scripts/bench.sh` and ckptd's ingest some twenty minutes later, and the
machine's speed moves by more than the target's margin in that time (docs/PERFORMANCE.md, the
second run of 2026-12-04: a bare gRPC row at two thirds of its usual rate made a ratio of 1.01).
This runs N pairs, each the anchors' bare gRPC ingest (grpc_ack_server with 2 io threads, then
grpc_ack_client with 8 streams over one connection, inline and asio sinks: the rows that have been
the anchor's best) and then ckptd's ingest (`e2e_bench.py`, 64 pipelines x 250 tasks at 10 ms, as
the run measures it). Each pair's ratio is ckptd's acks/s over the better of its two bare rows.

  ingest_pairs.py --build-dir build-bench --anchors-build DIR/limits/build --work-dir DIR

Prints one JSON object on stdout; progress on stderr. Standard library only. A side that fails
leaves the pair without a ratio (it counts as a miss).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from scheduler_pairs import run_json  # the last JSON line a command prints

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"  [ingest pairs] {msg}", file=sys.stderr, flush=True)


def bare_grpc(anchors_build, work_dir, warmup_s, measure_s):
    """{sink: msgs/s} from one server and one client per sink; {} when the server does not start."""
    port_file = os.path.join(work_dir, "grpc_ack_server.out")
    with open(port_file, "w") as out:
        server = subprocess.Popen([os.path.join(anchors_build, "grpc_ack_server"), "--listen",
                                   "127.0.0.1:0", "--io-threads", "2"],
                                  stdout=out, stderr=subprocess.DEVNULL)
    rates = {}
    try:
        port = None
        deadline = time.monotonic() + 10
        while port is None and time.monotonic() < deadline:  # it prints "PORT n" once it listens
            with open(port_file) as f:
                port = next((line.split()[1] for line in f if line.startswith("PORT ")), None)
            if port is None:
                time.sleep(0.1)
        if port is None:
            return rates
        for sink in ("inline", "asio"):
            row = run_json([os.path.join(anchors_build, "grpc_ack_client"), "--target",
                            f"127.0.0.1:{port}", "--test", "ingest", "--streams", "8",
                            "--channels", "1", "--sink", sink, "--rate", "1000", "--warmup-s",
                            str(warmup_s), "--measure-s", str(measure_s)], 60)
            if row and row.get("msgs_per_s"):
                rates[sink] = row["msgs_per_s"]
    finally:
        server.kill()
        server.wait()
    return rates


def ckptd_ingest(args):
    cmd = [sys.executable, os.path.join(HERE, "e2e_bench.py"), "--build-dir", args.build_dir,
           "--work-dir", args.work_dir, "--pipelines", "64", "--tasks", "250", "--interval-ms",
           "10", "--warmup-s", "3", "--window-s", "5", "--label", "ingest"]
    row = run_json(cmd, 180)
    return row if row and row.get("status", "ok") == "ok" and row.get("acks_per_s") else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True, help="the Release tree (ckptd, the simulator)")
    ap.add_argument("--anchors-build", required=True,
                    help="where the anchors' grpc_ack_server and grpc_ack_client are")
    ap.add_argument("--work-dir", required=True, help="for the daemon's files")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--warmup-s", type=float, default=1)
    ap.add_argument("--measure-s", type=float, default=3)
    args = ap.parse_args()
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    for name in ("grpc_ack_server", "grpc_ack_client"):
        if not os.access(os.path.join(args.anchors_build, name), os.X_OK):
            ap.error(f"no executable {name} in {args.anchors_build}")
    rows = []
    for i in range(args.pairs):
        bare = bare_grpc(args.anchors_build, args.work_dir, args.warmup_s, args.measure_s)
        time.sleep(1)
        ckptd = ckptd_ingest(args)
        time.sleep(1)
        best = max(bare.values()) if bare else None
        acks = ckptd["acks_per_s"] if ckptd else None
        rows.append({"grpc_inline_msgs_per_s": bare.get("inline"),
                     "grpc_asio_msgs_per_s": bare.get("asio"),
                     "ckptd_acks_per_s": round(acks) if acks else None,
                     "ckptd_cpu_pct": round(ckptd["daemon_cpu_pct"], 1) if ckptd else None,
                     "ratio": round(acks / best, 3) if acks and best else None})
        log(f"pair {i + 1}/{args.pairs}: {rows[-1]}")
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    print(json.dumps({"bench": "ingest_pairs", "pipelines": 64, "tasks": 250, "streams": 8,
                      "pairs": args.pairs, "rows": rows,
                      "median_ratio": statistics.median(ratios) if ratios else None,
                      "status": "ok" if len(ratios) == len(rows) else "partial"}))


if __name__ == "__main__":
    main()
