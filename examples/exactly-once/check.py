#!/usr/bin/python3
"""The exactly-once example's sink, set up and checked.

  check.py init   --pg DSN
      creates the sink table (dropping an old one).
  check.py wait   --pg DSN --ckptctl BIN --server S --tasks T --entries N --timeout SECONDS
                  [--job eo] [--pipeline p0] [--no-commit-phase]
      waits until every entry was read and its round committed: the newest COMMITTED checkpoint
      (without a commit phase: a completed checkpoint, then one more, since the workers commit
      a round in on_complete before they ack the next) has every task at the last entry of its
      stream. Prints progress lines; exits 1 at the timeout.
  check.py verify --pg DSN --entries N [--worker-kills K] [--daemon-kills K]
      counts the committed rows: entries 1..N exactly once each. Prints the verdict line;
      exits 1 unless there are no duplicates and none missing.
"""
import argparse
import json
import subprocess
import sys
import time

import eo_common as eo

PROGRESS_EVERY_S = 5.0
POLL_S = 0.2


def last_entry_of(task, tasks, entries):
    """The highest entry id of stream eo:<task> once the producer appended 1..entries."""
    t = int(task)
    if t >= entries:
        return 0
    return entries - ((entries - 1 - t) % tasks)


def committed_counts(cur):
    cur.execute("SELECT count(*), count(DISTINCT entry_id) FROM eo_sink")
    return cur.fetchone()


def checkpoints(ckptctl, server, job, pipeline):
    """The pipeline's recent checkpoints, newest first, as `ckptctl checkpoint list` gives them;
    None (and why) when the daemon does not answer."""
    r = subprocess.run([ckptctl, "--server", server, "-o", "json", "checkpoint", "list", job,
                        pipeline, "--limit", "5"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return sorted(json.loads(r.stdout), key=lambda c: -int(c["checkpoint_id"])), ""


def positions_of(checkpoint):
    return {task: int(json.loads(s["uri"])["position"])
            for task, s in checkpoint.get("state", {}).items()}


def done_reading(checkpoint, ends):
    positions = positions_of(checkpoint)
    return all(positions.get(task) == end for task, end in ends.items())


def wait(args):
    ends = {str(t): last_entry_of(str(t), args.tasks, args.entries) for t in range(args.tasks)}
    cur = eo.connect_pg(args.pg).cursor()
    deadline = time.monotonic() + args.timeout
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    while True:
        listed, why = checkpoints(args.ckptctl, args.server, args.job, args.pipeline)
        newest = None
        if listed is not None:
            completed = [c for c in listed if c["status"] == "COMPLETED"]
            if args.no_commit_phase:
                # The workers committed a round in on_complete before they acked a later one.
                if len(completed) >= 2 and done_reading(completed[1], ends):
                    return 0
            else:
                committed = [c for c in completed if c["commit_status"] == "COMMITTED"]
                if committed and done_reading(committed[0], ends):
                    return 0
                completed = committed
            newest = completed[0] if completed else None
        now = time.monotonic()
        if now >= deadline or now >= next_progress:
            rows, distinct = committed_counts(cur)
            where = (f"newest {'completed' if args.no_commit_phase else 'COMMITTED'} "
                     f"checkpoint {newest['checkpoint_id']} at positions "
                     + " ".join(f"{t}={p}/{ends[t]}"
                                for t, p in sorted(positions_of(newest).items()))
                     if newest else (why or "no checkpoint completed yet"))
            print(f"waiting for every entry to be committed: {distinct} of {args.entries} in "
                  f"PostgreSQL ({rows} rows); {where}", flush=True)
            next_progress = now + PROGRESS_EVERY_S
            if now >= deadline:
                print(f"timed out after {args.timeout:.0f}s: the workers did not read and commit "
                      "every entry", file=sys.stderr)
                return 1
        time.sleep(POLL_S)


def verify(args):
    cur = eo.connect_pg(args.pg).cursor()
    cur.execute("""
        SELECT count(*) FILTER (WHERE entry_id BETWEEN 1 AND %(n)s),
               count(DISTINCT entry_id) FILTER (WHERE entry_id BETWEEN 1 AND %(n)s),
               count(*) FILTER (WHERE entry_id NOT BETWEEN 1 AND %(n)s),
               count(*) FILTER (WHERE payload <> 'entry ' || entry_id
                                   OR task <> ((entry_id - 1) %% %(tasks)s)::text)
        FROM eo_sink""", {"n": args.entries, "tasks": args.tasks})
    rows, distinct, strangers, garbled = cur.fetchone()
    duplicates = rows - distinct
    missing = args.entries - distinct
    cur.execute("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'eo-%'")
    (still_prepared,) = cur.fetchone()
    kills = args.worker_kills + args.daemon_kills
    ok = duplicates == 0 and missing == 0 and strangers == 0 and garbled == 0
    if duplicates:
        cur.execute("""
            SELECT entry_id, array_agg(checkpoint_id ORDER BY checkpoint_id) FROM eo_sink
            GROUP BY entry_id HAVING count(*) > 1 ORDER BY entry_id LIMIT 5""")
        print("duplicates, e.g. (entry, the checkpoints that committed it): " +
              ", ".join(f"{e} {c}" for e, c in cur.fetchall()))
    if missing:
        cur.execute("""
            SELECT g FROM generate_series(1, %s) g
            WHERE NOT EXISTS (SELECT 1 FROM eo_sink WHERE entry_id = g) ORDER BY g LIMIT 10""",
                    (args.entries,))
        print("missing, e.g.: " + ", ".join(str(g) for (g,) in cur.fetchall()))
    if strangers or garbled:
        print(f"{strangers} rows with an entry id outside 1..{args.entries}, {garbled} rows whose "
              "payload or task does not match their entry id")
    if still_prepared:
        print(f"{still_prepared} prepared transactions left of rounds that did not complete "
              "(the workers' next round rolls them back)")
    print(f"{'exactly-once' if ok else 'NOT exactly-once'}: {args.entries} entries, "
          f"{duplicates} duplicates, {missing} missing, {kills} kills "
          f"({args.worker_kills} worker, {args.daemon_kills} daemon)", flush=True)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    init_p = sub.add_parser("init")
    init_p.add_argument("--pg", required=True)
    wait_p = sub.add_parser("wait")
    verify_p = sub.add_parser("verify")
    for p in (wait_p, verify_p):
        p.add_argument("--pg", required=True)
        p.add_argument("--entries", type=int, required=True)
        p.add_argument("--tasks", type=int, required=True)
    wait_p.add_argument("--ckptctl", required=True)
    wait_p.add_argument("--server", required=True)
    wait_p.add_argument("--job", default="eo")
    wait_p.add_argument("--pipeline", default="p0")
    wait_p.add_argument("--timeout", type=float, required=True)
    wait_p.add_argument("--no-commit-phase", action="store_true")
    verify_p.add_argument("--worker-kills", type=int, default=0)
    verify_p.add_argument("--daemon-kills", type=int, default=0)
    args = parser.parse_args()
    if args.command == "init":
        eo.connect_pg(args.pg).cursor().execute(eo.SCHEMA)
        return 0
    return wait(args) if args.command == "wait" else verify(args)


if __name__ == "__main__":
    sys.exit(main())
