#!/usr/bin/env python3
"""The simulator's own cost: ckpt-worker-sim driven by ckpt-bench-sim-stand-in, not by ckptd.

End to end, the rate is what the daemon completes on the shared cores (about 10,000 rounds a
second here), so the simulator's cost at 20,000 x 2 at 1 s cannot be read there. The stand-in
speaks the worker protocol with no coordinator and no store: it triggers every stream once an
interval and completes a round once every task acked. One run: the stand-in, the simulator with
the same flags as the end-to-end runs, a warm-up, then a window over which the stand-in's round
count and both processes' CPU (/proc/<pid>/stat) are read.

  sim_bench.py --build-dir B --pipelines 20000 --tasks 2        20,000 x 2 at 1 s

Prints one JSON object on stdout; progress on stderr. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from e2e_bench import cpu_seconds


def log(msg):
    print(f"  [sim] {msg}", file=sys.stderr, flush=True)


def read_line(proc, deadline):
    """The stand-in's next JSON line (it prints one a second)."""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            return json.loads(line)
        if proc.poll() is not None:
            raise RuntimeError(f"the stand-in ended (exit {proc.returncode})")
    raise RuntimeError("the stand-in said nothing in time")


def run(args):
    stand_in_bin = os.path.join(args.build_dir, "bench", "ckpt-bench-sim-stand-in")
    sim_bin = os.path.join(args.build_dir, "client", "ckpt-worker-sim")
    stand_in = subprocess.Popen(
        [stand_in_bin, "--interval-ms", str(args.interval_ms), "--threads",
         str(args.stand_in_threads)], stdout=subprocess.PIPE, text=True)
    sim = None
    try:
        port = read_line(stand_in, time.monotonic() + 10)["port"]
        sim = subprocess.Popen(
            [sim_bin, "--server", f"127.0.0.1:{port}", "--job", "job", "--pipelines",
             str(args.pipelines), "--tasks-per-pipeline", str(args.tasks), "--json",
             "--threads", str(args.sim_threads), "--channels", str(args.sim_channels),
             # The stand-in serves Connect only (a Session would be answered UNIMPLEMENTED).
             "--transport", "connect"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        log(f"{args.pipelines} x {args.tasks} tasks at {args.interval_ms} ms; warm-up "
            f"{args.warmup_s} s, window {args.window_s} s")
        warm_until = time.monotonic() + args.warmup_s
        while time.monotonic() < warm_until:
            read_line(stand_in, time.monotonic() + 10)
        first = read_line(stand_in, time.monotonic() + 10)
        sim0, std0 = cpu_seconds(sim.pid), cpu_seconds(stand_in.pid)
        last = first
        while last["t_s"] - first["t_s"] < args.window_s - 0.5:
            last = read_line(stand_in, time.monotonic() + 10)
        sim1, std1 = cpu_seconds(sim.pid), cpu_seconds(stand_in.pid)
        if sim.poll() is not None:
            raise RuntimeError(f"the simulator ended (exit {sim.returncode}) before the window did")
    finally:
        for proc in (sim, stand_in):
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    window = last["t_s"] - first["t_s"]
    rounds_per_s = (last["rounds"] - first["rounds"]) / window
    sim_cpu = 100 * (sim1 - sim0) / window
    wanted = args.pipelines * 1000 / args.interval_ms
    return {
        "bench": "sim", "pipelines": args.pipelines, "tasks": args.tasks,
        "interval_ms": args.interval_ms, "sim_threads": args.sim_threads,
        "sim_channels": args.sim_channels, "window_s": round(window, 3),
        "streams": last["streams"], "rounds_per_s": round(rounds_per_s, 1),
        "rounds_wanted_per_s": wanted, "sim_cpu_pct": round(sim_cpu, 1),
        "sim_us_per_round": round(sim_cpu * 1e4 / rounds_per_s, 1) if rounds_per_s else None,
        # What one core would serve at this cost a round (target: the wanted rate).
        "sim_rounds_per_core_s": round(rounds_per_s * 100 / sim_cpu) if sim_cpu else None,
        "stand_in_cpu_pct": round(100 * (std1 - std0) / window, 1),
        "every_round": rounds_per_s >= 0.99 * wanted,
        "status": "ok",
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--pipelines", type=int, default=20000)
    p.add_argument("--tasks", type=int, default=2)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--warmup-s", type=float, default=8)
    p.add_argument("--window-s", type=float, default=10)
    p.add_argument("--sim-threads", type=int, default=2)
    p.add_argument("--sim-channels", type=int, default=8)
    p.add_argument("--stand-in-threads", type=int, default=4)
    print(json.dumps(run(p.parse_args())), flush=True)


if __name__ == "__main__":
    main()
