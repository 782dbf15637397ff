#!/usr/bin/env python3
"""Nothing earlier regresses: the rows of the first two performance rounds, an older build beside
this one, pair by pair.

One run of record beside another compares two days of this machine, whose speed moves by more
than most margins (docs/PERFORMANCE.md and the notebook: the same build 2.5x apart on two days).
This alternates two trees at the same minute instead: for each row, the older build and then this
one, N times, each with its own harness (the older tree's `bench/e2e_bench.py` drives the older
daemon and simulator, which may lack flags of today's). A row regresses when the median of this
build is worse than the older one's by more than --tolerance (default 10 %), in the row's own
direction (lower is better for a latency, higher for a rate). A run of this build that fails
counts as a regression; one of the older build leaves its figures without a baseline (not held).

  regression_pairs.py --old-tree OLD --new-tree . --pairs 3

Each tree must have its Release build in build-bench/ (scripts/bench.sh makes it; for an older
commit: `git worktree add OLD COMMIT` and the same cmake line as scripts/bench.sh). Prints one JSON
object on stdout (every run's figures, each row's medians, ratio and verdict); progress on stderr.
Standard library only. A run that fails counts as a regression of its row.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from scheduler_pairs import run_json  # the last JSON line a command prints


def log(msg):
    print(f"  [regression pairs] {msg}", file=sys.stderr, flush=True)


def e2e(*flags):
    # --work-dir: the daemon's data directory on the same disk as scripts/bench.sh's (not a
    # tmpfs /tmp), since the store's fsync is in every figure.
    return lambda tree: [sys.executable, os.path.join(tree, "bench", "e2e_bench.py"),
                         "--build-dir", os.path.join(tree, "build-bench"), "--work-dir", "{work}",
                         *flags]


def binary(name, *flags):
    return lambda tree: [os.path.join(tree, "build-bench", "bench", name), *flags]


def per_daemon_core(key):
    return lambda r: r[key] / r["daemon_cpu_pct"] * 100 if r.get("daemon_cpu_pct") else None


def field(key):
    return lambda r: r.get(key)


# (row, command for a tree, [(figure, how to read it from the JSON, "lower" or "higher")]).
# The rows of rounds one and two that a change of the daemon can move (docs/PERFORMANCE.md).
ROWS = [
    ("scheduler, 1,000 pipelines in process",
     binary("ckpt-bench-scheduler", "--pipelines", "1000", "--warmup-s", "4", "--measure-s", "5"),
     [("trigger delay p99 us", field("p99_us"), "lower"),
      ("OS threads", field("os_threads"), "lower")]),
    ("scheduler, 100,000 pipelines in process",
     binary("ckpt-bench-scheduler", "--pipelines", "100000", "--warmup-s", "12", "--measure-s",
            "5"),
     [("trigger delay p99 us", field("p99_us"), "lower"),
      ("OS threads", field("os_threads"), "lower"),
      ("RSS KiB", field("rss_kb"), "lower"),
      ("CPU %", field("cpu_pct"), "lower")]),
    ("store, 2,000 commits in flight",
     binary("ckpt-bench-store", "--inflight", "2000", "--dir", "{work}/store"),
     [("completions/s", field("completions_per_s"), "higher"),
      ("CPU us a completion", field("cpu_us_per_completion"), "lower")]),
    ("restart of 100,000 stored pipelines",
     binary("ckpt-bench-restart", "--dir", "{work}/restart"),
     [("all scheduled s", field("all_scheduled_s"), "lower"),
      ("RSS KiB", field("rss_kb"), "lower")]),
    ("end to end, 5,000 x 2 at 1 s",
     e2e("--pipelines", "5000", "--tasks", "2", "--warmup-s", "5", "--window-s", "10",
         "--sim-channels", "8"),
     [("checkpoint p99 ms", field("checkpoint_p99_ms"), "lower"),
      ("daemon CPU %", field("daemon_cpu_pct"), "lower")]),
    ("end to end, 10,000 x 2 at 1 s",
     e2e("--pipelines", "10000", "--tasks", "2", "--warmup-s", "5", "--window-s", "10",
         "--sim-channels", "8"),
     [("checkpoint p99 ms", field("checkpoint_p99_ms"), "lower"),
      ("completed/s", field("completed_per_s"), "higher")]),
    ("end to end, 20,000 x 2 at 2 s",
     e2e("--pipelines", "20000", "--tasks", "2", "--interval-ms", "2000", "--warmup-s", "6",
         "--window-s", "12", "--sim-channels", "8"),
     [("checkpoint p99 ms", field("checkpoint_p99_ms"), "lower"),
      ("completed/s", field("completed_per_s"), "higher")]),
    ("ack ingest, 16 x 500 at 10 ms",
     e2e("--pipelines", "16", "--tasks", "500", "--interval-ms", "10", "--warmup-s", "3",
         "--window-s", "5"),
     [("acks/s", field("acks_per_s"), "higher"),
      ("acks/s a daemon core", per_daemon_core("acks_per_s"), "higher")]),
    ("wide, 1 x 2,000 tasks over 200 streams",
     e2e("--pipelines", "1", "--tasks", "2000", "--streams", "200", "--warmup-s", "4",
         "--window-s", "10", "--sim-channels", "8"),
     [("checkpoint p99 ms", field("checkpoint_p99_ms"), "lower")]),
    ("alignment groups, 1,000 of 5 at 1 s",
     e2e("--pipelines", "5000", "--tasks", "1", "--group-size", "5", "--warmup-s", "5",
         "--window-s", "10", "--sim-channels", "8"),
     [("checkpoint p99 ms", field("checkpoint_p99_ms"), "lower"),
      ("completed/s", field("completed_per_s"), "higher")]),
]


def commit_of(tree):
    """The tree's commit (what the results name, rather than a path of this machine)."""
    try:
        return subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_row(tree, command, work, timeout_s):
    cmd = [part.replace("{work}", work) for part in command(tree)]
    result = run_json(cmd, timeout_s)
    time.sleep(1)
    if not result or result.get("status") not in ("ok", None):
        return None
    return result


def verdict(old, new, direction, tolerance):
    if not old or not new:
        return None, False
    old_median, new_median = statistics.median(old), statistics.median(new)
    if not old_median:
        return None, new_median == old_median
    ratio = new_median / old_median
    worse = ratio - 1 if direction == "lower" else 1 - ratio
    return round(ratio, 3), worse <= tolerance


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-tree", required=True, help="the older commit's tree (with build-bench)")
    ap.add_argument("--new-tree", default=".", help="this tree (with build-bench)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=0.10,
                    help="how much worse a median may be before the row regresses")
    ap.add_argument("--work-dir", default=None, help="scratch space (default: a temp dir)")
    ap.add_argument("--only", default="", help="run the rows whose name contains this")
    args = ap.parse_args()
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    trees = {"old": os.path.abspath(args.old_tree), "new": os.path.abspath(args.new_tree)}
    for tree in trees.values():
        if not os.path.isdir(os.path.join(tree, "build-bench")):
            ap.error(f"no build-bench in {tree} (scripts/bench.sh builds it)")
    # Beside scripts/bench.sh's own scratch space, on the build tree's disk.
    work = args.work_dir or tempfile.mkdtemp(prefix="regression-pairs-",
                                             dir=os.path.join(trees["new"], "build-bench"))
    rows = []
    for name, command, figures in ROWS:
        if args.only and args.only not in name:
            continue
        runs = {"old": [], "new": []}
        for pair in range(args.pairs):
            # Alternating which goes first: the second of a pair inherits the first's page cache
            # and write-back.
            for side in ("old", "new") if pair % 2 == 0 else ("new", "old"):
                result = run_row(trees[side], command, work, 240)
                runs[side].append(result)
                log(f"{name}, pair {pair + 1}/{args.pairs}, {side}: "
                    + ("failed" if result is None else
                       ", ".join(f"{f}={read(result)}" for f, read, _ in figures)))
        row = {"row": name, "figures": []}
        for figure, read, direction in figures:
            values = {side: [read(r) for r in runs[side] if r and read(r) is not None]
                      for side in runs}
            ratio, held = verdict(values["old"], values["new"], direction, args.tolerance)
            # A failed run of this build is a regression; one of the older build (whose harness
            # may lack a flag of today's) leaves the figure without a baseline instead.
            new_failed = any(r is None for r in runs["new"])
            row["figures"].append({
                "figure": figure, "better": direction, "old": values["old"], "new": values["new"],
                "old_median": statistics.median(values["old"]) if values["old"] else None,
                "new_median": statistics.median(values["new"]) if values["new"] else None,
                "ratio": ratio, "baseline": bool(values["old"]),
                "held": bool(values["old"]) and held and not new_failed})
        rows.append(row)
    held = sum(1 for r in rows for f in r["figures"] if f["held"])
    total = sum(len(r["figures"]) for r in rows)
    every = sum(len(figures) for _, _, figures in ROWS)
    print(json.dumps({"bench": "regression_pairs", "old_commit": commit_of(trees["old"]),
                      "new_commit": commit_of(trees["new"]), "pairs": args.pairs,
                      "tolerance": args.tolerance, "only": args.only, "rows": rows, "held": held,
                      "figures": total, "every_figure": every, "status": "ok"}))


if __name__ == "__main__":
    main()
