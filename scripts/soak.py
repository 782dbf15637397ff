#!/usr/bin/env python3
"""Soak: one ckptd serving thousands of pipelines for minutes, with churn, sampled every few
seconds. Not part of CI (scripts/soak.sh builds Release and runs this).

Load: `--pipelines` pipelines x `--tasks` tasks of job `soak` from ckpt-worker-sim (created with a
1 s interval), and every `--churn` seconds:
  - the simulator is killed with SIGKILL and started again: every stream drops and all of them
    reconnect at once (a reconnect storm), so sessions must be released and re-made;
  - a batch of short-lived pipelines of job `churn` is created, served, and deleted again;
  - a savepoint of the whole `soak` job is taken with ckptctl.
Sampled: the daemon's RSS and threads (/proc), its CPU, worker sessions, pipelines and completed
checkpoints (ckptctl status). Checked at the end, exit 1 if not:
  - RSS flat after warm-up: the last samples' RSS within --max-growth of the samples just after
    warm-up (median of a few of each, so one sample taken mid-storm does not decide);
  - no session leak: once the last churn settled, sessions == pipelines served;
  - threads bounded (gRPC's pools may grow to their caps; no growth in the last third);
  - every savepoint succeeded; checkpoints kept completing.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Soak:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="ckptd-soak-")
        self.port = free_port()
        self.server = f"127.0.0.1:{self.port}"
        self.bin = lambda sub, name: os.path.join(args.build_dir, sub, name)
        self.daemon = None
        self.sim = None
        self.samples = []
        self.savepoints = []  # (ok, seconds)
        self.churned = 0

    def ctl(self, *argv, timeout=120):
        return subprocess.run([self.bin("client", "ckptctl"), "--server", self.server, *argv],
                              capture_output=True, text=True, timeout=timeout)

    def start_daemon(self):
        config = os.path.join(self.dir, "ckptd.yaml")
        with open(config, "w") as f:
            f.write(f"listen: {self.server}\nmetrics_listen: 127.0.0.1:{free_port()}\n"
                    f"data_dir: {self.dir}/data\nlease_ttl_ms: 5000\n")
        log = open(os.path.join(self.dir, "ckptd.log"), "ab")
        self.daemon = subprocess.Popen([self.bin("server", "ckptd"), "--config", config],
                                       stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                sys.exit(f"ckptd exited at start; see {self.dir}/ckptd.log")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        sys.exit("ckptd did not listen within 30 s")

    def start_sim(self, job, pipelines, create, log_name):
        argv = [self.bin("client", "ckpt-worker-sim"), "--server", self.server, "--job", job,
                "--pipelines", str(pipelines), "--tasks-per-pipeline", str(self.args.tasks),
                "--channels", "4", "--connect-timeout", "60s"]
        if create:
            argv += ["--create", "--interval", "1s", "--timeout", "10s"]
        log = open(os.path.join(self.dir, log_name), "ab")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def status(self):
        r = self.ctl("status", "-o", "json", timeout=60)
        if r.returncode != 0:
            return None
        data = json.loads(r.stdout)
        return data.get("daemon", data)

    def sample(self, t0, phase):
        st = proc_status(self.daemon.pid)
        s = self.status() or {}
        row = {
            "t_s": round(time.monotonic() - t0, 1),
            "rss_mb": round(st["VmRSS"] / 1024, 1),
            "threads": st["Threads"],
            "cpu_s": round(cpu_seconds(self.daemon.pid), 1),
            "sessions": s.get("worker_sessions", -1),
            "pipelines": s.get("pipelines", -1),
            "completed": s.get("checkpoints_completed", -1),
            "phase": phase,
        }
        self.samples.append(row)
        print(f"{row['t_s']:7.1f}s  rss {row['rss_mb']:7.1f} MB  threads {row['threads']:3d}  "
              f"cpu {row['cpu_s']:7.1f} s  sessions {row['sessions']:6d}  pipelines "
              f"{row['pipelines']:6d}  completed {row['completed']:9d}  {phase}", flush=True)

    def churn(self):
        """One round of churn; returns a phase label for the next sample."""
        self.churned += 1
        # Reconnect storm: every stream of the main simulator drops at once and comes back.
        self.sim.send_signal(signal.SIGKILL)
        self.sim.wait()
        self.sim = self.start_sim("soak", self.args.pipelines, False, "sim.log")
        # Short-lived pipelines: created, served for a few rounds, deleted.
        n = self.args.churn_pipelines
        extra = self.start_sim("churn", n, True, "churn-sim.log")
        time.sleep(5)
        extra.send_signal(signal.SIGTERM)
        extra.wait(timeout=60)
        for i in range(n):
            r = self.ctl("pipeline", "delete", "churn", f"p{i}")
            if r.returncode != 0:
                sys.exit(f"deleting churn/p{i} failed: {r.stderr.strip()}")
        # A savepoint of every pipeline of the job, while it runs.
        t = time.monotonic()
        r = self.ctl("savepoint", "--job", "soak", "--timeout", "2m", "-o", "json", timeout=180)
        self.savepoints.append((r.returncode == 0, round(time.monotonic() - t, 2)))
        return f"churn {self.churned} (savepoint {'ok' if r.returncode == 0 else 'FAILED'} in " \
               f"{self.savepoints[-1][1]} s)"

    def run(self):
        a = self.args
        self.start_daemon()
        self.sim = self.start_sim("soak", a.pipelines, True, "sim.log")
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        next_churn = t0 + a.churn
        phase = "start"
        while time.monotonic() < end:
            if self.daemon.poll() is not None:
                sys.exit(f"ckptd died (exit {self.daemon.returncode}); see {self.dir}/ckptd.log")
            self.sample(t0, phase)
            phase = ""
            # The last churn ends at least two sampling periods before the end, to see it settle.
            if time.monotonic() >= next_churn and time.monotonic() < end - 3 * a.sample:
                phase = self.churn()
                next_churn = time.monotonic() + a.churn
            time.sleep(a.sample)
        self.sample(t0, "end")
        return self.verdict(t0)

    def verdict(self, t0):
        a = self.args
        warm = [s for s in self.samples if s["t_s"] >= a.warmup]
        problems = []
        if len(warm) < 6:
            problems.append("too few samples after warm-up for a verdict; run longer")
            early = late = warm
        else:
            early, late = warm[:3], warm[-3:]
        rss_early = statistics.median(s["rss_mb"] for s in early) if early else 0
        rss_late = statistics.median(s["rss_mb"] for s in late) if late else 0
        growth = (rss_late - rss_early) / rss_early if rss_early else 0
        if growth > a.max_growth:
            problems.append(f"RSS grew {growth:.1%} after warm-up (limit {a.max_growth:.0%})")
        # gRPC's own pools (default-executor, timer threads) grow on bursts up to fixed caps
        # (2 x cores), whatever the pipeline count; a leak would keep growing with every churn.
        threads = {s["threads"] for s in self.samples[1:]}
        if len(warm) >= 6:
            cut = 2 * len(warm) // 3
            settled = max(s["threads"] for s in warm[:cut])
            final = max(s["threads"] for s in warm[cut:])
            if final > settled:
                problems.append(f"threads still growing: {settled} -> {final}")
        last = self.samples[-1]
        if last["sessions"] != a.pipelines:
            problems.append(f"{last['sessions']} worker sessions at the end for {a.pipelines} "
                            "served pipelines")
        if last["pipelines"] != a.pipelines:
            problems.append(f"{last['pipelines']} pipelines at the end, {a.pipelines} expected")
        failed_sp = [s for s in self.savepoints if not s[0]]
        if failed_sp:
            problems.append(f"{len(failed_sp)} of {len(self.savepoints)} savepoints failed")
        if len(self.samples) >= 2 and last["completed"] <= self.samples[-2]["completed"]:
            problems.append("checkpoints stopped completing at the end")
        summary = {
            "pipelines": a.pipelines, "tasks": a.tasks, "minutes": a.minutes,
            "churn_rounds": self.churned, "rss_mb_after_warmup": rss_early,
            "rss_mb_end": rss_late, "rss_growth": round(growth, 4),
            "rss_mb_max": max(s["rss_mb"] for s in self.samples),
            "threads": sorted(threads), "sessions_end": last["sessions"],
            "sessions_max": max(s["sessions"] for s in self.samples),
            "completed": last["completed"], "daemon_cpu_s": last["cpu_s"],
            "savepoints": len(self.savepoints),
            "savepoint_s_max": max((s[1] for s in self.savepoints), default=0),
            "problems": problems,
        }
        print(json.dumps(summary, indent=1))
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"summary": summary, "samples": self.samples}, f, indent=1)
        print("soak: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
        return 0 if not problems else 1

    def close(self):
        for p in (self.sim, self.daemon):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if not self.args.keep:
            subprocess.run(["rm", "-rf", self.dir])
        else:
            print(f"kept {self.dir}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", required=True, help="a Release build tree")
    p.add_argument("--pipelines", type=int, default=2000)
    p.add_argument("--tasks", type=int, default=2)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--sample", type=float, default=10, help="seconds between samples")
    # The first reconnect storms raise the allocator's high-water mark (gRPC buffers for every
    # stream at once); the verdict starts after three of them.
    p.add_argument("--warmup", type=float, default=240, help="seconds before RSS is judged")
    p.add_argument("--churn", type=float, default=60, help="seconds between churn rounds")
    p.add_argument("--churn-pipelines", type=int, default=50)
    p.add_argument("--max-growth", type=float, default=0.10,
                   help="RSS growth after warm-up that fails the soak (fraction)")
    p.add_argument("--json-out", help="write the samples and the summary here")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data)")
    soak = Soak(p.parse_args())
    try:
        return soak.run()
    finally:
        soak.close()


if __name__ == "__main__":
    sys.exit(main())
