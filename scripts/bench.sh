#!/usr/bin/env bash
# Runs ckptd's benchmarks beside the performance anchors, in one invocation and one benchmark at a
# time, and writes bench/results/<date>.{json,md,png}; docs/PERFORMANCE.md explains them.
# Not part of CI. About 43-48 minutes on 2 cores (20 of them the HA benchmarks on etcd), plus a first
# Release build.
#
#   scripts/bench.sh
#   CKPT_ANCHORS_DIR=DIR       the anchors (default: ../shared/anchors beside the repo)
#   CKPT_BENCH_SKIP_ANCHORS=1  ckptd's benchmarks only (the report then has no ratios)
#   CKPT_BENCH_BUILD_DIR=DIR   the Release tree (default: build-bench)
#   CKPT_BENCH_DATE=NAME       the results' file name (default: today, UTC)
#   CKPT_BENCH_PAIRS=N         scheduler pairs beside bare Asio at 100,000 (default 10; 0 skips)
#   CKPT_BENCH_HA_RUNS=N       runs of the one-member HA steady state (default 10)
#   CKPT_BENCH_OLD_TREE=DIR    an older commit's tree with its build-bench/: rounds one and two's
#                              rows beside it, in pairs (bench/regression_pairs.py; unset: skipped)
#   CKPT_BENCH_REGRESSION_PAIRS=N  those pairs (default 3)
#   CKPT_BENCH_INGEST_PAIRS=N  ack ingest pairs beside bare gRPC (default 3; 0 skips)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${CKPT_BENCH_BUILD_DIR:-$root/build-bench}
anchors_dir=${CKPT_ANCHORS_DIR:-$root/../shared/anchors}
anchors_dir=$(cd "$anchors_dir" 2>/dev/null && pwd || echo "$anchors_dir")
date=${CKPT_BENCH_DATE:-$(date -u +%Y-%m-%d)}
results=$root/bench/results
work=$build/bench-work
ckptd_jsonl=$work/ckptd.jsonl
anchors_jsonl=$work/anchors.jsonl
log=$work/bench.log
python=/usr/bin/python3  # Debian's, which sees Debian's matplotlib
started=$(date +%s)

step() { echo "[bench] $*"; }

# ---- packages and build --------------------------------------------------------------------------
bash "$root/scripts/setup.sh"
# Beyond the build's packages: the plot's, and what the anchors build with (their README).
extra=()
"$python" -c 'import matplotlib' 2>/dev/null || extra+=(python3-matplotlib)
command -v javac >/dev/null || extra+=(openjdk-17-jdk-headless)
dpkg-query -W -f='${Status}' libboost-system-dev 2>/dev/null | grep -q "install ok installed" ||
  extra+=(libboost-system-dev)
if [ ${#extra[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    step "installing ${extra[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${extra[@]}" >/dev/null
  else
    step "missing ${extra[*]} (apt-get install them): without them no plot or no anchors"
  fi
fi
step "building Release with CKPT_BENCH=ON in $(basename "$build")"
export CCACHE_BASEDIR=$root
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BENCH=ON \
  -DCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target ckptd ckpt-worker-sim ckptctl \
  ckpt-bench-scheduler ckpt-bench-store ckpt-bench-restart ckpt-bench-fanout-anchor \
  ckpt-bench-sim-stand-in >/dev/null
rm -rf "$work"
mkdir -p "$work" "$results"
: > "$ckptd_jsonl"

# ---- anchors -------------------------------------------------------------------------------------
# The full anchor suite takes about 5 minutes; this slice keeps every configuration the targets
# compare with (the Java designs at 1k/5k/10k pipelines, wake floor, bare Asio, bare gRPC) and
# drops the Java ablation and the 10/100-pipeline rows. It writes the anchors' results/partial.*.
if [ -n "${CKPT_BENCH_SKIP_ANCHORS:-}" ]; then
  step "anchors skipped (CKPT_BENCH_SKIP_ANCHORS): no ratios in this report"
elif [ ! -x "$anchors_dir/run-anchors.sh" ]; then
  step "no anchors at $anchors_dir (set CKPT_ANCHORS_DIR): ckptd only, no ratios in this report"
else
  # The anchors build and write results inside their own directory, which may be read-only (a
  # shared checkout): they run from a copy in the build tree, whose builds are kept between runs.
  anchors_run=$build/anchors
  mkdir -p "$anchors_run"
  chmod -R u+w "$anchors_run"
  cp -R "$anchors_dir"/. "$anchors_run"/
  chmod -R u+w "$anchors_run"
  step "anchors (about 5 minutes; progress in $anchors_run/results/partial.log)"
  if "$anchors_run/run-anchors.sh" --java-modes "shared perpipeline" \
      --java-pipes "1000 5000 10000" > "$work/anchors.txt" 2>>"$log"; then
    cp "$anchors_run/results/partial.jsonl" "$anchors_jsonl"
  else
    step "the anchors failed (see $log): ckptd only, no ratios in this report"
  fi
fi

# ---- ckptd ---------------------------------------------------------------------------------------
# run_bench <timeout_s> <json fields for a failure line> <command...>: keeps the last JSON line.
run_bench() {
  local limit=$1 fields=$2 out line
  shift 2
  out=$(timeout -s KILL "$limit" "$@" 2>>"$log") || true
  line=$(printf '%s\n' "$out" | grep '^{' | tail -1 || true)
  [ -n "$line" ] || line="{$fields,\"status\":\"failed\"}"
  echo "$line" >> "$ckptd_jsonl"
  echo "    $line" | cut -c1-150
  sleep 1
}

step "scheduler, in process (each pipeline count in its own process)"
# RSS is read after the warm-up: 12 s lets each pipeline's history fill up to `retained` (10, at
# 1 s), as it is in a daemon that has run for a while.
for p in 0 1000 10000 100000; do
  run_bench 120 "\"bench\":\"scheduler\",\"pipelines\":$p" \
    "$build/bench/ckpt-bench-scheduler" --pipelines "$p" --warmup-s 12 --measure-s 5
done
step "scheduler: 100,000 pipelines with the web view's pages loaded (5 a second) beside them"
run_bench 120 '"bench":"scheduler_web","pipelines":100000' \
  "$build/bench/ckpt-bench-scheduler" --pipelines 100000 --warmup-s 2 --measure-s 10 --web-rps 5
# Fleet control, the spread: 100,000 pipelines whose sessions all register at once (as after a
# restart or a takeover, every worker reconnecting), first triggers set by the start slot (the
# daemon's way) and, beside it, by the key's hash; the most first triggers in any tenth of the
# interval, as a share (the daemon's rule: at most 0.2).
step "scheduler: the start spread of 100,000 pipelines registering at once (slot, then hash)"
for phases in spread hash; do
  run_bench 120 "\"bench\":\"scheduler\",\"pipelines\":100000,\"phases\":\"$phases\"" \
    "$build/bench/ckpt-bench-scheduler" --pipelines 100000 --phases "$phases" --warmup-s 3 \
    --measure-s 3
done
# Fleet control, admission: 10,000 pipelines at 1 s whose rounds each stay in flight 80 ms (800
# would fly at once), under max_concurrent_rounds 500: the most in flight at once (never above
# 500), how many pipelines still checkpointed in the window (all), and the admission wait's p99.
step "scheduler: 10,000 pipelines at 1 s under admission max_concurrent_rounds 500"
run_bench 120 '"bench":"scheduler","pipelines":10000,"interval_ms":1000,"admission_max_concurrent_rounds":500' \
  "$build/bench/ckpt-bench-scheduler" --pipelines 10000 --admission-rounds 500 --ack-delay-ms 80 \
  --warmup-s 3 --measure-s 5
# Fleet control, the adaptive interval: a backlog episode on a real daemon (100 pipelines at 1 s,
# max_interval_ms 5 s, the simulator behind from 6 s for 16 s): the gaps between triggers before,
# during and after it, and how soon every pipeline stretched and came back.
step "end to end: a backlog episode (the interval stretches to max_interval_ms and comes back)"
run_bench 120 '"bench":"backlog","pipelines":100' \
  "$python" "$root/bench/backlog_bench.py" --build-dir "$build" --work-dir "$work"
# Target 4 of the second performance round: how often the tail holds, not one figure. Ten pairs
# (ckptd, then the bare Asio pattern) alone and ten beside a spinning process, about 7 minutes.
# CKPT_BENCH_PAIRS sets the count (0 skips it); it needs the anchors' asio_timers.
pairs=${CKPT_BENCH_PAIRS:-10}
asio_timers=$build/anchors/limits/build/asio_timers
if [ "$pairs" -gt 0 ] && [ ! -x "$asio_timers" ]; then
  step "no $asio_timers (the anchors did not build): the scheduler pairs are skipped"
elif [ "$pairs" -gt 0 ]; then
  step "scheduler: 100,000 pipelines, $pairs pairs beside the bare Asio pattern, alone and under load"
  # Each run has 180 s of its own (about 20 s when it is well); the JSON comes at the end.
  run_bench $((pairs * 2 * 190 + 60)) '"bench":"scheduler_pairs","pipelines":100000' \
    "$python" "$root/bench/scheduler_pairs.py" --bench "$build/bench/ckpt-bench-scheduler" \
    --asio "$asio_timers" --pairs "$pairs"
fi
step "scheduler: 100,000 idle pipelines (no worker connected), for memory"
run_bench 60 '"bench":"scheduler","pipelines":100000,"sessions":false' \
  "$build/bench/ckpt-bench-scheduler" --pipelines 100000 --sessions 0 --warmup-s 1 --measure-s 1

step "store: one transaction per checkpoint, group commit, 5,000/s offered with and without pacing"
store_bench=("$build/bench/ckpt-bench-store" --dir "$work/store" --measure-s 3)
run_bench 60 '"bench":"store","mode":"single","batch_spacing_us":0' \
  "${store_bench[@]}" --inflight 1 --batch-spacing-us 0
run_bench 60 '"bench":"store","mode":"group"' \
  "${store_bench[@]}" --inflight 1000
run_bench 60 '"bench":"store","mode":"paced","batch_spacing_us":2000' \
  "${store_bench[@]}" --inflight 5000 --rate 5000
run_bench 60 '"bench":"store","mode":"paced","batch_spacing_us":0' \
  "${store_bench[@]}" --inflight 5000 --rate 5000 --batch-spacing-us 0

step "restart with 100,000 stored pipelines"
run_bench 180 '"bench":"restart","pipelines":100000' \
  "$build/bench/ckpt-bench-restart" --dir "$work/restart" --pipelines 100000

# Thousands of pipelines from one simulator: over 8 TCP connections, as a fleet of workers would
# use many (over one, the simulator's single HTTP/2 connection adds tens of ms per round).
# 20,000 x 2 at 1 s is past what the daemon completes on 2 cores; it is there for the simulator's
# cost per round (target 6 of the second performance round), and the same 20,000 at 2 s for the
# daemon (the same 10,000 rounds a second as 10,000 x 2 at 1 s).
step "end to end: ckptd + ckpt-worker-sim, 2 tasks per pipeline, 1 s interval (and 20,000 at 2 s)"
for p in 1000 5000 10000 20000; do
  run_bench 180 "\"bench\":\"e2e\",\"label\":\"scale\",\"pipelines\":$p,\"tasks\":2" \
    "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
    --pipelines "$p" --tasks 2 --warmup-s 5 --window-s 10 --sim-channels 8
done
run_bench 180 '"bench":"e2e","label":"scale-2s","pipelines":20000,"tasks":2' \
  "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
  --pipelines 20000 --tasks 2 --interval-ms 2000 --warmup-s 6 --window-s 12 --sim-channels 8 \
  --label scale-2s
# The transports side by side (docs/PROTOCOL.md, "Worker sessions"): the runs above go over
# Session (the simulator's default, one call per connection); these run 10,000 and 20,000 x 2 at
# 1 s over each transport back to back (targets 1 and 2 of the third performance round).
step "end to end: Session and Connect side by side, 10,000 and 20,000 x 2 at 1 s"
for p in 10000 20000; do
  for transport in session connect; do
    run_bench 180 "\"bench\":\"e2e\",\"label\":\"transport-$transport\",\"pipelines\":$p,\"tasks\":2" \
      "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
      --pipelines "$p" --tasks 2 --warmup-s 5 --window-s 10 --sim-channels 8 \
      --transport "$transport" --label "transport-$transport"
  done
done
# The commit phase's cost (docs/PROTOCOL.md "Commit phase"): 5,000 x 2 at 1 s without and with
# one, back to back, two pairs; the simulator sends `committed` as each complete asks for it.
step "end to end: 5,000 x 2 at 1 s without and with a commit phase, 2 pairs"
for pair in 1 2; do
  for commit_timeout_ms in 0 10000; do
    label=commit-off
    [ "$commit_timeout_ms" -eq 0 ] || label=commit-on
    run_bench 180 "\"bench\":\"e2e\",\"label\":\"$label\",\"pipelines\":5000,\"tasks\":2" \
      "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
      --pipelines 5000 --tasks 2 --warmup-s 5 --window-s 10 --sim-channels 8 \
      --commit-timeout-ms "$commit_timeout_ms" --label "$label"
  done
done
# The simulator alone, driven by a stand-in daemon (no coordinator, no store) at the 20,000
# rounds a second that ckptd does not complete on these 2 cores: its own cost a round (target 6).
# Over 2 connections and over the 8 the runs above use (fewer, fuller reads: less a round).
step "the simulator alone: 20,000 x 2 at 1 s from a stand-in daemon, over 2 and 8 connections"
for ch in 2 8; do
  run_bench 120 "\"bench\":\"sim\",\"pipelines\":20000,\"sim_channels\":$ch" \
    "$python" "$root/bench/sim_bench.py" --build-dir "$build" --pipelines 20000 --tasks 2 \
    --sim-channels "$ch"
done
# Alignment groups (docs/ALIGNMENT.md): 1,000 groups of 5 pipelines at 1 s, and the same 5,000
# pipelines alone: the trigger skew between a group's members, and what a group round costs beside
# five rounds of pipelines on their own (daemon CPU at the same completions per second).
step "end to end: 1,000 alignment groups of 5 at 1 s, and the same 5,000 pipelines alone"
for cfg in "groups 5" "alone 0"; do
  set -- $cfg
  run_bench 180 "\"bench\":\"e2e\",\"label\":\"$1\",\"pipelines\":5000,\"tasks\":1" \
    "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
    --pipelines 5000 --tasks 1 --group-size "$2" --warmup-s 5 --window-s 10 --sim-channels 8 \
    --label "$1"
done
step "end to end: ack ingest at saturation (many tasks per pipeline, 10 ms interval)"
for cfg in "16 500" "64 250"; do
  set -- $cfg
  run_bench 120 "\"bench\":\"e2e\",\"label\":\"ingest\",\"pipelines\":$1,\"tasks\":$2" \
    "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
    --pipelines "$1" --tasks "$2" --interval-ms 10 --warmup-s 3 --window-s 5 --label ingest
done
# The larger of the two over Connect, right after: Session's ingest against Connect's a core.
run_bench 120 '"bench":"e2e","label":"ingest-connect","pipelines":64,"tasks":250' \
  "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
  --pipelines 64 --tasks 250 --interval-ms 10 --warmup-s 3 --window-s 5 --label ingest-connect \
  --transport connect
# The same ingest beside bare gRPC at the same minute, pair by pair (about 1 minute a pair): the
# anchors ran some twenty minutes earlier, and the machine's speed moves by more than the target's
# margin in that time. The target's ratio is the pairs' median (report.py).
ingest_pairs=${CKPT_BENCH_INGEST_PAIRS:-3}
grpc_anchor=$build/anchors/limits/build
if [ "$ingest_pairs" -gt 0 ] && [ ! -x "$grpc_anchor/grpc_ack_server" ]; then
  step "no $grpc_anchor/grpc_ack_server (the anchors did not build): the ingest pairs are skipped"
elif [ "$ingest_pairs" -gt 0 ]; then
  step "end to end: ack ingest, $ingest_pairs pairs beside bare gRPC"
  run_bench $((ingest_pairs * 120 + 30)) '"bench":"ingest_pairs"' \
    "$python" "$root/bench/ingest_pairs.py" --build-dir "$build" --anchors-build "$grpc_anchor" \
    --work-dir "$work" --pairs "$ingest_pairs"
fi
# Wide pipelines: one of 2,000 tasks over 200 worker streams, and 100 of 200 tasks over 20 each;
# the daemon's own share of a round (fan-out, fan-in) from its histograms.
step "end to end: wide pipelines (1 x 2,000 tasks over 200 streams, 100 x 200 over 20 each)"
for cfg in "1 2000 200" "100 200 20"; do
  set -- $cfg
  run_bench 120 "\"bench\":\"e2e\",\"label\":\"wide\",\"pipelines\":$1,\"tasks\":$2" \
    "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
    --pipelines "$1" --tasks "$2" --streams "$3" --warmup-s 4 --window-s 10 --sim-channels 8 \
    --label wide
done
# The anchor: bare gRPC writing one pipeline's triggers and completes to the same streams.
for cfg in "2000 200" "200 20"; do
  set -- $cfg
  run_bench 120 "\"bench\":\"fanout-anchor\",\"tasks\":$1,\"streams\":$2" \
    "$build/bench/ckpt-bench-fanout-anchor" --tasks "$1" --streams "$2" --interval-ms 100 \
    --rounds 120 --warmup-rounds 20
done
# The price of TLS (mTLS with auth) on ack ingest: the first configuration again, over TLS, next to
# its plaintext run above.
run_bench 120 '"bench":"e2e","label":"ingest-tls","pipelines":16,"tasks":500' \
  "$python" "$root/bench/e2e_bench.py" --build-dir "$build" --work-dir "$work" \
  --pipelines 16 --tasks 500 --interval-ms 10 --warmup-s 3 --window-s 5 --label ingest-tls --tls

# High availability on a 3-member etcd: durable completions beside etcd's own sequential puts,
# steady 5,000 x 2 at 1 s, capacity at 8,000 x 2, and 10 kill -9 of the leader at 1,000 x 2
# (docs/PERFORMANCE.md); last, etcdctl check perf --load xl: etcd's own throughput of single-put
# txns from 1,000 clients, beside which the capacity shows what group commit buys.
step "high availability on etcd (bench/ha_bench.py, about 9 minutes)"
if command -v etcd >/dev/null; then
  run_bench 1300 '"bench":"ha"' "$python" "$root/bench/ha_bench.py" --build-dir "$build" \
    --check-perf-load xl
  # The same cluster shape with larger transactions: members at --max-txn-ops 1024 and
  # store.etcd.max_txn_ops raised to match (no failover: the lease is the same).
  step "high availability on etcd, members at --max-txn-ops 1024 (about 4 minutes)"
  run_bench 900 '"bench":"ha","max_txn_ops":1024' "$python" "$root/bench/ha_bench.py" \
    --build-dir "$build" --skip-failover --max-txn-ops 1024
  # The steady state on one member: etcd's consensus no longer three processes on the same two
  # cores as the daemon, the standby and the simulator (in production the members have machines
  # of their own), so what is left is the daemon's share (about 1 minute).
  # Run after run (CKPT_BENCH_HA_RUNS, 10): how often the tail holds, not one figure (target 4 of
  # the third performance round: in at least 9 of 10).
  ha_runs=${CKPT_BENCH_HA_RUNS:-10}
  step "high availability on etcd, one member: the steady state, $ha_runs runs (about 45 s each)"
  for run in $(seq 1 "$ha_runs"); do
    run_bench 300 '"bench":"ha","etcd_members":1' "$python" "$root/bench/ha_bench.py" \
      --build-dir "$build" --members 1 --skip-failover --skip-store --capacity-pipelines 0
  done
else
  step "etcd is not installed (scripts/setup.sh installs it): HA benchmark skipped"
fi

# Nothing earlier regresses (target 7 of the third performance round): rounds one and two's rows, an
# older build beside this one pair by pair (bench/regression_pairs.py, about 6 minutes a pair). Only
# with CKPT_BENCH_OLD_TREE: a tree of the older commit with its Release build in build-bench/.
if [ -n "${CKPT_BENCH_OLD_TREE:-}" ]; then
  regression_pairs=${CKPT_BENCH_REGRESSION_PAIRS:-3}
  step "nothing earlier regresses: $regression_pairs pairs beside $CKPT_BENCH_OLD_TREE"
  run_bench $((regression_pairs * 900)) '"bench":"regression_pairs"' \
    "$python" "$root/bench/regression_pairs.py" --old-tree "$CKPT_BENCH_OLD_TREE" \
    --new-tree "$root" --pairs "$regression_pairs" --work-dir "$work"
fi

# ---- report --------------------------------------------------------------------------------------
"$python" "$root/bench/report.py" --anchors "$anchors_jsonl" --ckptd "$ckptd_jsonl" \
  --date "$date" --out-dir "$results"
step "done in $(( $(date +%s) - started )) s; logs in $log"
