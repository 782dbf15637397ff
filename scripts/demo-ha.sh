#!/usr/bin/env bash
# High availability, end to end on one machine: a three-member etcd cluster on loopback, two ckptd
# daemons sharing its prefix (A leads, B stands by), simulated workers that know both, then a
# kill -9 of the leader: B takes over, the workers follow with their tasks, checkpoints go on.
# Usage: scripts/demo-ha.sh [TTL_MS]   (the election lease, default 2000: etcd's floor)
# Everything lives in a temp dir that is removed at the end; every process is stopped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
ttl_ms=${1:-2000}
[ "$ttl_ms" -ge 2000 ] 2>/dev/null || { echo "usage: scripts/demo-ha.sh [TTL_MS >= 2000]" >&2; exit 2; }

"$root/scripts/setup.sh"
echo "== build"
"$root/scripts/build.sh" "$build_dir" >/dev/null
ckptd=$build_dir/server/ckptd
sim=$build_dir/client/ckpt-worker-sim
ctl=$build_dir/client/ckptctl

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out waiting for $what" >&2; exit 1; fi
    sleep 0.1
  done
}
role_is() { curl -sf "http://127.0.0.1:$1/metrics" | grep -qx "ckptd_role{role=\"$2\"} 1"; }
ready() { curl -sf "http://127.0.0.1:$1/readyz"; }

echo "== etcd: three members on loopback"
cluster= endpoints=
declare -a client_ports peer_ports
for i in 0 1 2; do
  client_ports[$i]=$(free_port)
  peer_ports[$i]=$(free_port)
  cluster+="${cluster:+,}m$i=http://127.0.0.1:${peer_ports[$i]}"
  endpoints+="${endpoints:+, }http://127.0.0.1:${client_ports[$i]}"
done
for i in 0 1 2; do
  etcd --name "m$i" --data-dir "$work/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:${client_ports[$i]}" \
    --advertise-client-urls "http://127.0.0.1:${client_ports[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${peer_ports[$i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${peer_ports[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --log-level error \
    --auto-compaction-mode periodic --auto-compaction-retention 5m \
    >"$work/etcd-$i.log" 2>&1 &
  pids+=($!)
done
wait_for 30 "etcd's quorum" env ETCDCTL_API=3 etcdctl --endpoints "${endpoints// /}" put /demo-probe 1

start_daemon() {  # start_daemon NAME: writes NAME.yaml, starts it, sets port_NAME / metrics_NAME
  local name=$1 port metrics
  port=$(free_port)
  metrics=$(free_port)
  cat >"$work/$name.yaml" <<EOF
listen: 127.0.0.1:$port
metrics_listen: 127.0.0.1:$metrics
data_dir: $work/$name-data
advertise: 127.0.0.1:$port
store:
  backend: etcd
  etcd: {endpoints: [$endpoints], prefix: /ckptd-demo, election_ttl_ms: $ttl_ms}
pipelines:
  - {job_id: demo, pipeline_id: p0, parallelism: 2, interval_ms: 500}
  - {job_id: demo, pipeline_id: p1, parallelism: 2, interval_ms: 500}
EOF
  "$ckptd" --config "$work/$name.yaml" >>"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "pid_$name=$! port_$name=$port metrics_$name=$metrics"
}

echo "== ckptd A (leads) and ckptd B (stands by), election lease ${ttl_ms} ms"
start_daemon a
wait_for 30 "A to lead" role_is "$metrics_a" leader
start_daemon b
wait_for 30 "B to stand by" role_is "$metrics_b" standby
servers=127.0.0.1:$port_a,127.0.0.1:$port_b

echo "== simulated workers: job demo, 2 pipelines x 2 tasks, --server $servers"
"$sim" --server "$servers" --job demo --pipelines 2 --tasks-per-pipeline 2 --ack-delay-ms 20 \
  --event-log "$work/events.log" --json >"$work/sim.json" 2>"$work/sim.log" &
sim_pid=$!
pids+=($sim_pid)
wait_for 30 "checkpoints to complete" grep -q '^complete' "$work/events.log"
sleep 2

echo "== ckptctl status, asked of each daemon"
"$ctl" --server "127.0.0.1:$port_a" status
"$ctl" --server "127.0.0.1:$port_b" status
echo "== ckptctl checkpoint list demo p0 --limit 3 (--server A,B: goes to the leader)"
"$ctl" --server "$servers" checkpoint list demo p0 --limit 3

echo "== kill -9 of the leader A"
start_ns=$(date +%s%N)
kill -9 "$pid_a"
last_before=$(awk '$1 == "complete" {id = $4} END {print id}' "$work/events.log")
echo "last checkpoint completed under A: $last_before"
wait_for $((ttl_ms / 1000 + 30)) "B to take over" ready "$metrics_b"
took_ms=$((($(date +%s%N) - start_ns) / 1000000))
echo "B leads and is ready ${took_ms} ms after the kill (lease ${ttl_ms} ms)"
wait_for 30 "checkpoints to complete on B" \
  awk -v last="$last_before" '$1 == "complete" && $4 > last {found = 1} END {exit !found}' \
  "$work/events.log"
sleep 2

echo "== after the takeover"
"$ctl" --server "127.0.0.1:$port_b" status
"$ctl" --server "$servers" checkpoint list demo p0 --limit 3
kill -TERM "$sim_pid"
wait "$sim_pid" || true
echo "== what the workers saw (they kept running: no task was restarted)"
cat "$work/sim.json"
