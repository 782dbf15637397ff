#!/usr/bin/env bash
# The main job, end to end: set up, build, start ckptd on its embedded SQLite store with
# config/demo.yaml, serve its pipelines with simulated workers, and show checkpoints completing.
# Usage: scripts/demo.sh [SECONDS]   (default 10). Data stays in ./ckptd-data: run it again and
# the daemon continues from the stored checkpoints.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
seconds=${1:-10}
cd "$root"

"$root/scripts/setup.sh"
echo "== build"
"$root/scripts/build.sh" "$build_dir" >/dev/null
ckptd=$build_dir/server/ckptd
sim=$build_dir/client/ckpt-worker-sim

mkdir -p ckptd-data
log=ckptd-data/ckptd.log
echo "== starting ckptd (config/demo.yaml, log in $log)"
"$ckptd" --config config/demo.yaml >>"$log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if ! kill -0 $daemon 2>/dev/null; then
    echo "ckptd exited at start:" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
  (exec 3<>/dev/tcp/127.0.0.1/7070) 2>/dev/null && break
  sleep 0.1
done

echo "== simulated workers: job demo, 4 pipelines x 2 tasks, ${seconds}s"
"$sim" --server 127.0.0.1:7070 --job demo --pipelines 4 --tasks-per-pipeline 2 \
  --ack-delay-ms 20 --duration "${seconds}s"

echo "== completed checkpoints in the store (ckptd-data/ckptd.db)"
sqlite3 -header -column ckptd-data/ckptd.db \
  "SELECT pipeline_id, COUNT(*) AS kept, MAX(checkpoint_id) AS latest_id,
          datetime(MAX(finished_at_ms) / 1000, 'unixepoch') AS latest_at_utc
   FROM checkpoints WHERE job_id = 'demo' GROUP BY pipeline_id ORDER BY pipeline_id;"

echo "== stopping ckptd (SIGTERM)"
kill -TERM $daemon
wait $daemon
trap - EXIT
tail -n 3 "$log"
