#!/usr/bin/env bash
# Exactly-once under kill -9, end to end (examples/exactly-once): Redis streams -> Python workers
# (the ckpt_worker SDK) -> PostgreSQL prepared transactions, committed in ckptd's commit phase.
# Starts Redis, PostgreSQL, ckptd and the workers on free loopback ports in a temp dir; appends
# the entries while kill -9 hits the workers and the daemon, restarting each: at random moments,
# right after a worker prepared a round, and right as a worker starts committing one (the daemon
# then dies while the checkpoint is COMMITTING, a worker halfway through its COMMIT PREPAREDs).
# Then it waits until every entry is committed and checks PostgreSQL: each entry id exactly once.
#
# Usage: scripts/demo-exactly-once.sh [options]
#   --entries N        entries to append (default 20000)
#   --kills K          kill -9s (default 24); half of them hit ckptd (etcd: one hits the leader)
#   --seconds S        bound on the whole run: past it the demo fails (default 120)
#   --no-commit-phase  the pipeline has no commit phase (commit_timeout_ms 0): the workers commit
#                      in on_complete, and nothing re-drives a commit a kill interrupted
#   --store sqlite|etcd  sqlite (default): one ckptd; etcd: one etcd member and two ckptd (HA)
#                      sharing it, the workers knowing both, and the leader killed once mid-run
#   --workers W        worker processes, the tasks dealt round robin over them (default 2)
#   --tasks T          tasks of the pipeline, one Redis stream each (default 4)
#   --rate R           entries appended per second (default: spread over about 2.5 K seconds)
#   --commit-pause-ms MS  each worker waits this long before each COMMIT PREPARED, as a sink
#                      farther away would: a wider commit phase for the kills to land in (25)
#   --seed N           for the kill schedule (default: random, printed)
#   --build-dir DIR    where ckptd, ckptctl and the Python stubs are (default build/)
#   --keep             keep the temp dir (logs, data) and say where it is
# Environment: PYTHON (default /usr/bin/python3, which needs python3-grpcio, python3-redis and
# python3-psycopg2), PG_BIN (default /usr/lib/postgresql/15/bin).
#
# The last line is the verdict, e.g.
#   exactly-once: 20000 entries, 0 duplicates, 0 missing, 24 kills (12 worker, 12 daemon)
# Exit 0 for exactly once; 1 otherwise, or when something failed (a process that exits on its own,
# the time bound); 2 for bad options. Everything it started is stopped, and the temp dir removed,
# when it ends, however it ends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
example=$root/examples/exactly-once

usage() { awk '/^# Usage:/ {on = 1} on && !/^#/ {exit} on {sub(/^# ?/, ""); print}' "$0"; }
usage_error() { echo "demo-exactly-once: $*" >&2; usage >&2; exit 2; }

entries=20000 kills=24 seconds=120 commit_phase=1 store=sqlite workers=2 tasks=4 rate=
commit_pause_ms=25 seed=$((RANDOM * 32768 + RANDOM)) build_dir=$root/build keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --entries|--kills|--seconds|--store|--workers|--tasks|--rate|--commit-pause-ms|--seed|\
    --build-dir)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      case $1 in
        --entries) entries=$2 ;; --kills) kills=$2 ;; --seconds) seconds=$2 ;;
        --store) store=$2 ;; --workers) workers=$2 ;; --tasks) tasks=$2 ;; --rate) rate=$2 ;;
        --commit-pause-ms) commit_pause_ms=$2 ;; --seed) seed=$2 ;; --build-dir) build_dir=$2 ;;
      esac
      shift 2 ;;
    --no-commit-phase) commit_phase=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown option: $1" ;;
  esac
done
for n in entries kills seconds workers tasks commit_pause_ms seed; do
  [[ ${!n} =~ ^[0-9]+$ ]] || usage_error "--${n//_/-} takes a whole number, not '${!n}'"
done
[ "$entries" -ge 1 ] || usage_error "--entries must be at least 1"
[ "$workers" -ge 1 ] && [ "$tasks" -ge "$workers" ] ||
  usage_error "--workers must be between 1 and --tasks ($tasks)"
[ "$store" = sqlite ] || [ "$store" = etcd ] || usage_error "--store is sqlite or etcd"
[ -z "$rate" ] || [[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] ||
  usage_error "--rate takes a whole number >= 1"
# A kill and the recovery after it take a few seconds (more for ckptd, whose workers must
# reconnect): the entries spread over about as long, so that the kills land while they flow.
[ -n "$rate" ] || rate=$(( entries * 2 / (5 * (kills > 4 ? kills : 4)) + 1 ))
RANDOM=$seed

python=${PYTHON:-/usr/bin/python3}
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
ckptd=$build_dir/server/ckptd
ctl=$build_dir/client/ckptctl
export PYTHONPATH=$root/client/python:$build_dir/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1  # no bytecode left in the source tree

missing() { echo "demo-exactly-once: $*" >&2; exit 1; }
[ -x "$ckptd" ] && [ -x "$ctl" ] ||
  missing "no ckptd or ckptctl in $build_dir: build first (scripts/build.sh), or pass --build-dir"
[ -f "$build_dir/python/ckpt/v1/worker_pb2.py" ] ||
  missing "no Python stubs in $build_dir/python: cmake --build $build_dir --target ckpt_python_sdk"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  missing "redis-server is not installed (Debian: apt-get install redis-server)"
[ -x "$pg_bin/initdb" ] && [ -x "$pg_bin/pg_ctl" ] ||
  missing "PostgreSQL is not in $pg_bin (Debian: apt-get install postgresql-15; or set PG_BIN)"
command -v curl >/dev/null || missing "curl is not installed"
"$python" -c 'import grpc, google.protobuf, redis, psycopg2' 2>/dev/null ||
  missing "$python lacks grpc, protobuf, redis or psycopg2 (Debian: apt-get install" \
    "python3-grpcio python3-protobuf python3-redis python3-psycopg2)"
if [ "$store" = etcd ]; then
  command -v etcd >/dev/null ||
    missing "etcd is not installed (Debian: apt-get install etcd-server etcd-client)"
fi
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 ||
    missing "PostgreSQL will not run as root, and there is no user postgres"
  as_pg=(runuser -u postgres --)  # PostgreSQL refuses to run as root
else
  as_pg=()
fi

# ---- processes, and the cleanup that stops them all -------------------------------------------

work=$(mktemp -d "${TMPDIR:-/tmp}/eo-demo.XXXXXX")
daemon_pid=() worker_pid=() redis_pid='' etcd_pid='' producer_pid='' tail_pid='' pg_started=0
redis_port='' pg_port='' etcd_client_port='' etcd_peer_port=''  # set by free_port
cleanup() {
  local status=$? pid
  trap - EXIT INT TERM
  for pid in $tail_pid $producer_pid "${worker_pid[@]}" "${daemon_pid[@]}"; do
    { kill -9 "$pid"; wait "$pid"; } 2>/dev/null || true
  done
  if [ "$pg_started" = 1 ]; then
    (cd "$work/pg" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" stop -m immediate -w \
      >/dev/null 2>&1) || true
  fi
  for pid in $etcd_pid $redis_pid; do { kill -9 "$pid"; wait "$pid"; } 2>/dev/null || true; done
  if [ "$keep" = 1 ]; then
    echo "kept $work (logs: w*.log, ckptd-*.log, pg/postgres.log, redis.log)"
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "demo-exactly-once: interrupted" >&2; exit 130' INT
trap 'echo "demo-exactly-once: terminated" >&2; exit 143' TERM

start_us=${EPOCHREALTIME/./}
elapsed() {
  local us=$(( ${EPOCHREALTIME/./} - start_us ))
  printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
say() { printf '[%6ss] %s\n' "$(elapsed)" "$*"; }
deadline=$((SECONDS + seconds))

fail() {
  local f
  echo "demo-exactly-once: FAILED: $*" >&2
  for f in "$work"/ckptd-*.log "$work"/w*.log "$work/producer.log"; do
    [ -s "$f" ] || continue
    echo "--- last lines of $(basename "$f")" >&2
    tail -n 8 "$f" >&2
  done
  exit 1
}

# Every process the demo did not kill must still be running.
check_alive() {
  local i
  for i in "${!worker_pid[@]}"; do
    kill -0 "${worker_pid[$i]}" 2>/dev/null || fail "worker w$i exited on its own (w$i.log)"
  done
  for i in "${!daemon_pid[@]}"; do
    kill -0 "${daemon_pid[$i]}" 2>/dev/null || fail "ckptd $i exited on its own (ckptd-$i.log)"
  done
  kill -0 "$redis_pid" 2>/dev/null || fail "redis-server exited (redis.log)"
}

# wait_until WHAT COMMAND...: runs COMMAND every 0.1 s until it succeeds, with a progress line
# every 5 s; fails at the run's deadline.
wait_until() {
  local what=$1 next=$((SECONDS + 5))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out after ${seconds}s waiting for $what"
    if [ $SECONDS -ge $next ]; then say "still waiting for $what"; next=$((SECONDS + 5)); fi
    check_alive
    sleep 0.1
  done
}

# wait_line SECONDS REGEX FILE...: returns as soon as a line matching REGEX is appended to one of
# the FILEs (1 if none is within SECONDS); the line is in $line.
wait_line() {
  local limit=$1 re=$2 fd rc=1
  shift 2
  exec {fd}< <(exec timeout "$limit" tail -q -n0 -F "$@" 2>/dev/null)
  tail_pid=$!
  line=
  while IFS= read -r -u "$fd" line; do
    if [[ $line =~ $re ]]; then rc=0; break; fi
  done
  kill "$tail_pid" 2>/dev/null || true
  exec {fd}<&-
  tail_pid=
  return $rc
}

picked_ports=" "
# free_port VAR: a loopback port free now, below the ephemeral range (where any outgoing
# connection may take it before the process we start binds it), not picked before in this run.
free_port() {
  local port
  while :; do
    port=$("$python" - <<'EOF'
import random, socket
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    low = int(f.read().split()[0])
for _ in range(100):
    port = random.randrange(20000, max(low, 21000))
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
EOF
)
    [ -n "$port" ] || fail "no free loopback port"
    case $picked_ports in *" $port "*) continue ;; esac
    picked_ports+="$port "
    printf -v "$1" '%s' "$port"
    return
  done
}

# ---- Redis and PostgreSQL ---------------------------------------------------------------------

say "seed $seed; $entries entries at $rate/s over $tasks tasks in $workers workers, $kills kills," \
  "store $store, commit phase $([ $commit_phase = 1 ] && echo on || echo OFF), temp dir $work"

free_port redis_port
mkdir "$work/redis"
# Redis is never killed here; append-only anyway, so that nothing depends on that.
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly yes \
  --dir "$work/redis" >"$work/redis.log" 2>&1 &
redis_pid=$!
redis_up() { kill -0 "$redis_pid" 2>/dev/null || fail "redis-server did not start (redis.log)"
             [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]; }
wait_until "Redis to answer" redis_up

free_port pg_port
mkdir "$work/pg"
if [ ${#as_pg[@]} -gt 0 ]; then chown postgres: "$work/pg"; chmod 711 "$work"; fi
# Trust on loopback: a demo's database, reachable only from this machine, no password to manage.
(cd "$work/pg" && "${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg/data" -U postgres -A trust \
  --no-sync >"$work/pg/initdb.log" 2>&1) || fail "initdb failed: $(tail -n 5 "$work/pg/initdb.log")"
pg_started=1
# max_prepared_transactions: each task has one prepared transaction per round, and a killed
# worker may leave one more per task until its next round resolves it.
(cd "$work/pg" && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/postgres.log" \
  -w -t 60 start -o "-c listen_addresses=127.0.0.1 -c port=$pg_port \
  -c unix_socket_directories=$work/pg -c max_prepared_transactions=$((4 * tasks))" \
  >/dev/null) || fail "PostgreSQL did not start: $(tail -n 5 "$work/pg/postgres.log")"
pg_dsn="host=127.0.0.1 port=$pg_port user=postgres dbname=postgres"
"$python" "$example/check.py" init --pg "$pg_dsn"

# ---- ckptd --------------------------------------------------------------------------------------

if [ "$store" = etcd ]; then
  free_port etcd_client_port
  free_port etcd_peer_port
  etcd --name m0 --data-dir "$work/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "m0=http://127.0.0.1:$etcd_peer_port" --initial-cluster-state new \
    --log-level error >"$work/etcd.log" 2>&1 &
  etcd_pid=$!
  etcd_up() { kill -0 "$etcd_pid" 2>/dev/null || fail "etcd did not start (etcd.log)"
              curl -sf "http://127.0.0.1:$etcd_client_port/health" | grep -q '"health":"true"'; }
  wait_until "etcd to answer" etcd_up
  daemons=2
else
  daemons=1
fi
daemon_port=() metrics_port=()
servers=
for ((i = 0; i < daemons; i++)); do
  free_port "daemon_port[$i]"
  free_port "metrics_port[$i]"
  servers+=${servers:+,}127.0.0.1:${daemon_port[$i]}
  {
    echo "listen: 127.0.0.1:${daemon_port[$i]}"
    echo "metrics_listen: 127.0.0.1:${metrics_port[$i]}"
    echo "data_dir: $work/ckptd-$i-data"
    echo "lease_ttl_ms: 3000"
    echo "heartbeat_interval_ms: 500"
    if [ "$store" = etcd ]; then
      echo "advertise: 127.0.0.1:${daemon_port[$i]}"
      echo "store:"
      echo "  backend: etcd"
      echo "  etcd: {endpoints: [http://127.0.0.1:$etcd_client_port], prefix: /eo-demo," \
        "election_ttl_ms: 2000, dial_timeout_ms: 1000}"
    fi
    # One pipeline, a task per stream. A failed round is not the demo's failure (a kill fails
    # rounds), hence tolerable_failures; commit_timeout_ms > 0 turns the commit phase on.
    echo "pipelines:"
    echo "  - {job_id: eo, pipeline_id: p0, parallelism: $tasks, interval_ms: 200," \
      "timeout_ms: 10000, tolerable_failures: 1000," \
      "commit_timeout_ms: $([ $commit_phase = 1 ] && echo 10000 || echo 0)}"
  } >"$work/ckptd-$i.yaml"
done

start_daemon() {  # start_daemon I
  "$ckptd" --config "$work/ckptd-$1.yaml" >>"$work/ckptd-$1.log" 2>&1 &
  daemon_pid[$1]=$!
}
metric_role() {  # metric_role I ROLE: daemon I says it is ROLE (leader, standby, single)
  curl -sf "http://127.0.0.1:${metrics_port[$1]}/metrics" 2>/dev/null |
    grep -qx "ckptd_role{role=\"$2\"} 1"
}
ready() { curl -sf "http://127.0.0.1:${metrics_port[$1]}/readyz" >/dev/null 2>&1; }
leader() {  # sets leader_index to the daemon that leads and is ready
  local i
  for ((i = 0; i < daemons; i++)); do
    if metric_role "$i" leader && ready "$i"; then leader_index=$i; return 0; fi
  done
  return 1
}

start_daemon 0
wait_until "ckptd to be ready" ready 0
if [ "$store" = etcd ]; then
  wait_until "ckptd 0 to lead" leader
  start_daemon 1
  wait_until "ckptd 1 to stand by" metric_role 1 standby
fi

# ---- workers and producer -----------------------------------------------------------------------

worker_flags=(--server "$servers" --redis "127.0.0.1:$redis_port" --pg "$pg_dsn"
              --commit-pause-ms "$commit_pause_ms")
[ "$commit_phase" = 1 ] || worker_flags+=(--commit-in-on-complete)
start_worker() {  # start_worker I: tasks I, I+W, I+2W...
  local mine='' t
  for ((t = $1; t < tasks; t += workers)); do mine+=${mine:+,}$t; done
  "$python" "$example/worker.py" "${worker_flags[@]}" --tasks "$mine" --worker-id "w$1" \
    >>"$work/w$1.log" 2>&1 &
  worker_pid[$1]=$!
}
newest_complete() { awk '$3 == "complete" && $4 > m {m = $4} END {print m + 0}' "$work"/w*.log; }
completed_after() { [ "$(newest_complete)" -gt "$1" ]; }

for ((i = 0; i < workers; i++)); do start_worker "$i"; done
wait_until "the first checkpoint" completed_after 0
"$python" "$example/producer.py" --redis "127.0.0.1:$redis_port" --tasks "$tasks" \
  --entries "$entries" --rate "$rate" >"$work/producer.log" 2>&1 &
producer_pid=$!
say "running: ckptd at $servers, $workers workers, the producer appending"

# ---- the kills -----------------------------------------------------------------------------------

# The plan: which kill hits a daemon. SQLite: half of them, in random order. etcd: the leader
# once, mid-run (a takeover takes the election lease, 2 s); the rest hit workers.
plan=()
for ((k = 0; k < kills; k++)); do plan[k]=worker; done
if [ "$store" = etcd ]; then
  [ "$kills" -eq 0 ] || plan[kills / 2]=daemon
else
  for ((k = 0; k < kills / 2; k++)); do plan[k]=daemon; done
  for ((k = kills - 1; k > 0; k--)); do  # Fisher-Yates
    j=$((RANDOM % (k + 1))); v=${plan[k]}; plan[k]=${plan[j]}; plan[j]=$v
  done
fi

# The moments, in turn for each kind of victim: any moment; right after a worker prepared a round
# (the round is pending, or its acks are with the store); right as a worker starts a commit (the
# daemon is COMMITTING it: a daemon killed then welcomes the workers back with commit_pending, a
# worker killed then leaves some of its gids prepared).
moments=(random prepared commit)
worker_kills=0 daemon_kills=0
for ((k = 1; k <= kills; k++)); do
  # Each kill finds the pipeline going: a checkpoint completed since the last restart.
  wait_until "a checkpoint to complete" completed_after "$(newest_complete)"
  sleep "$(printf '0.%03d' $((RANDOM % 500)))"  # a random moment
  check_alive
  if [ "${plan[k - 1]}" = daemon ]; then
    victim=d moment=${moments[daemon_kills % 3]}
    if [ "$store" = etcd ]; then leader_index=; wait_until "a leader" leader; victim_i=$leader_index
    else victim_i=0; fi
    pid=${daemon_pid[$victim_i]} name="ckptd $victim_i"
    [ "$store" = sqlite ] || name+=" (the leader)"
    watch=("$work"/w*.log)
  else
    victim=w victim_i=$((RANDOM % workers)) moment=${moments[worker_kills % 3]}
    pid=${worker_pid[$victim_i]} name="worker w$victim_i"
    watch=("$work/w$victim_i.log")
    if [ "$moment" = prepared ] && [ "$workers" -gt 1 ]; then
      # Another worker's "prepared": this one's ack for that round may still be to come.
      watch=()
      for ((i = 0; i < workers; i++)); do [ $i = "$victim_i" ] || watch+=("$work/w$i.log"); done
    fi
  fi
  case $moment in
    random) at="at a random moment" ;;
    *)
      pattern=" prepared [0-9]+:"
      [ "$moment" = prepared ] || pattern=" commit [0-9]+ start$"
      if wait_line 10 "$pattern" "${watch[@]}"; then
        at="at '${line#* }'"
      else
        at="at a random moment (no '$moment' line within 10 s)"
      fi ;;
  esac
  { kill -9 "$pid"; wait "$pid"; } 2>/dev/null || true
  if [ $victim = d ]; then
    daemon_kills=$((daemon_kills + 1))
    say "kill $k/$kills: kill -9 $name $at"
    start_daemon "$victim_i"
    if [ "$store" = etcd ]; then
      # Whichever wins the election (the lease of the dead one lapses first), the other stands by.
      leader_index=
      wait_until "a daemon to take over" leader
      wait_until "the other daemon to stand by" metric_role $((1 - leader_index)) standby
      say "ckptd $leader_index leads now"
    else
      wait_until "ckptd to be ready again" ready 0
    fi
  else
    worker_kills=$((worker_kills + 1))
    say "kill $k/$kills: kill -9 $name $at"
    start_worker "$victim_i"
  fi
done

# ---- the end: every entry in, every round committed, then the check -----------------------------

producer_done() { ! kill -0 "$producer_pid" 2>/dev/null; }
wait_until "the producer to append every entry" producer_done
wait "$producer_pid" || fail "the producer failed (producer.log)"
producer_pid=
say "all $entries entries appended; waiting until the workers have read and committed them"
check_alive
wait_flags=(--timeout $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)))
[ "$commit_phase" = 1 ] || wait_flags+=(--no-commit-phase)
"$python" "$example/check.py" wait --pg "$pg_dsn" --ckptctl "$ctl" --server "$servers" \
  --tasks "$tasks" --entries "$entries" "${wait_flags[@]}" ||
  fail "not every entry was committed within ${seconds}s"
check_alive
for i in "${!worker_pid[@]}"; do kill -TERM "${worker_pid[$i]}" 2>/dev/null || true; done
for i in "${!worker_pid[@]}"; do wait "${worker_pid[$i]}" || true; done
worker_pid=()

pending=$(cat "$work"/w*.log | grep -c ' commit_pending,' || true)
lost=$(cat "$work"/w*.log | grep -c 'LOST:' || true)
say "done in $(elapsed)s: $pending welcomes found their restore point still COMMITTING and" \
  "committed it again"
[ "$lost" = 0 ] ||
  say "$lost prepared transactions of completed checkpoints were rolled back (LOST in w*.log)"
"$python" "$example/check.py" verify --pg "$pg_dsn" --tasks "$tasks" --entries "$entries" \
  --worker-kills "$worker_kills" --daemon-kills "$daemon_kills"
