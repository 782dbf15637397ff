#!/usr/bin/python3
"""A worker of the exactly-once example: serves some tasks of one pipeline with the ckpt_worker
SDK. Each task copies its Redis stream into PostgreSQL, one prepared transaction per checkpoint.
README.md beside this file explains the design; per task:

- between checkpoints: XREAD from the task's position, INSERT the rows into an open transaction;
- trigger N: PREPARE TRANSACTION 'eo-<task>-N' (also when nothing was read), ack with the state
  {"position": P, "gid": "eo-<task>-N"}, BEGIN the next transaction;
- commit N (on_commit, after complete N): COMMIT PREPARED 'eo-<task>-N'; a gid that is gone was
  committed already (before a crash, or by an earlier stream of this worker);
- abort N: ROLLBACK PREPARED 'eo-<task>-N' and the open transaction, and read again from where
  round N started;
- welcome: resume from the restore point's position; if its commit is pending, COMMIT PREPARED its
  gid; roll back the task's other prepared gids (those above the restore point only once they can
  no longer complete: see Engine.restore).

With --commit-in-on-complete the worker commits in on_complete instead, for a pipeline without
the daemon's commit phase (commit_timeout_ms 0): what that loses is in README.md.

Threads: the SDK's stream thread runs the handlers, which hand the work on the tasks' connections
to the engine thread (a queue keeps it in the order the daemon sent it) and commit on a connection
of their own. SIGTERM says goodbye and exits.

Usage: worker.py --server HOST:PORT[,HOST:PORT] --redis HOST:PORT --pg DSN --tasks 0,1
                 [--worker-id W] [--job eo] [--pipeline p0] [--commit-pause-ms MS]
                 [--commit-in-on-complete]
"""
import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback

import psycopg2
import psycopg2.errors
import psycopg2.extras
import redis

from ckpt_worker import PipelineWorker, TaskState

import eo_common as eo

# Entries one XREAD takes per stream, and how long it waits for new ones: the engine looks at its
# queue (a trigger, say) between reads, so this bounds how late a trigger is prepared.
READ_COUNT = 1000
READ_BLOCK_MS = 20

_log_lock = threading.Lock()
_worker_id = "worker"


def log(message):
    """One line per event, flushed: the demo script follows these lines (it kills on "commit N
    start") and counts them."""
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    with _log_lock:
        print(f"{stamp} {_worker_id} {message}", flush=True)


class TaskSink:
    """One task: its stream, its own PostgreSQL connection (a transaction belongs to one session
    until it is prepared), and where it stands. Used by the engine thread only."""

    def __init__(self, task, dsn):
        self.task = task
        self.key = eo.stream_key(task)
        self.conn = eo.connect_pg(dsn)
        self.cur = self.conn.cursor()
        self.position = 0    # the last entry read into the open transaction
        self.txn_start = 0   # the position the open transaction started reading after
        # (checkpoint id, the position its transaction started after) of the round prepared last,
        # until the next one: an abort of it reads again from there.
        self.prepared = None
        self.open = False

    def begin(self):
        self.cur.execute("BEGIN")
        self.open = True

    def rollback_open(self):
        if self.open:
            self.cur.execute("ROLLBACK")
            self.open = False

    def insert(self, rows):
        psycopg2.extras.execute_values(
            self.cur, "INSERT INTO eo_sink (entry_id, task, payload) VALUES %s", rows)

    def prepare(self, checkpoint_id):
        gid = eo.gid(self.task, checkpoint_id)
        self.cur.execute("UPDATE eo_sink SET checkpoint_id = %s "
                         "WHERE task = %s AND checkpoint_id IS NULL", (checkpoint_id, self.task))
        self.cur.execute("PREPARE TRANSACTION %s", (gid,))
        self.open = False
        self.prepared = (checkpoint_id, self.txn_start)
        return gid


class Engine:
    """Owns the tasks' connections and the reads; does what the handlers queue, in order."""

    def __init__(self, tasks, dsn, redis_address):
        self.tasks = [TaskSink(t, dsn) for t in tasks]
        self.by_key = {t.key: t for t in self.tasks}
        self.patterns = [eo.gid_pattern(t) for t in tasks]
        self.admin = eo.connect_pg(dsn)  # lists and rolls back leftover prepared transactions
        host, port = eo.parse_redis(redis_address)
        self.redis = redis.Redis(host=host, port=port, decode_responses=True)
        self.commands = queue.Queue()
        self.welcomed = False  # reading starts at the first welcome, from its restore point
        self.worker = None
        self.thread = threading.Thread(target=self._run, name="engine", daemon=True)

    def start(self, worker):
        self.worker = worker
        self.thread.start()

    def stop(self):
        self.commands.put(("stop",))
        self.thread.join()

    def _run(self):
        try:
            while True:
                if self.welcomed:
                    while True:
                        try:
                            command = self.commands.get_nowait()
                        except queue.Empty:
                            break
                        if not self._do(command):
                            return
                    self._read()
                elif not self._do(self.commands.get()):
                    return
        except Exception:
            # A sink that fails is not something to carry on from with half of a round done:
            # the process ends, and what it prepared is resolved by its next incarnation.
            traceback.print_exc()
            log("engine failed; exiting")
            sys.stdout.flush()
            os._exit(3)

    def _do(self, command):
        kind = command[0]
        if kind == "restore":
            self.restore(*command[1:])
        elif kind == "trigger":
            self.prepare(command[1])
        elif kind == "abort":
            self.abort(command[1])
        elif kind == "stop":
            for t in self.tasks:
                t.rollback_open()
            return False
        return True

    def _read(self):
        streams = {t.key: eo.entry_stream_id(t.position) for t in self.tasks}
        for key, entries in self.redis.xread(streams, count=READ_COUNT,
                                             block=READ_BLOCK_MS) or ():
            t = self.by_key[key]
            rows = [(eo.entry_of(i), t.task, fields["payload"]) for i, fields in entries]
            t.insert(rows)
            t.position = rows[-1][0]

    def _prepared_gids(self):
        cur = self.admin.cursor()
        cur.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE ANY (%s) ORDER BY gid",
                    (self.patterns,))
        return [row[0] for row in cur.fetchall()]

    def _rollback_prepared(self, gid, why):
        try:
            self.admin.cursor().execute("ROLLBACK PREPARED %s", (gid,))
            log(f"rolled back {gid} ({why})")
        except psycopg2.errors.UndefinedObject:
            pass  # resolved meanwhile

    def restore(self, checkpoint_id, positions, commit_pending):
        """The welcome's restore point: every task goes back to its position there, in a fresh
        transaction.

        Leftover prepared transactions: one at or below the restore point is rolled back, except
        the restore point's own while its commit is pending (on_commit commits it). One above it
        may still complete: a stream registered while that round was being written to the store
        is welcomed with the restore point before it, then hears `complete` for the newer round
        (and, with a commit phase, is ended "commit pending" and welcomed again with that round
        as the restore point). So those are rolled back only at the next trigger, when no round
        of the pipeline is pending or COMMITTING any more."""
        unknown = [t.task for t in self.tasks if checkpoint_id and t.task not in positions]
        if unknown:
            # Starting such a task over from 0 would repeat every entry it committed.
            raise RuntimeError(f"restore point {checkpoint_id} has no state for task(s) "
                               f"{', '.join(unknown)}")
        for t in self.tasks:
            t.rollback_open()
            t.position = t.txn_start = positions.get(t.task, 0)
            t.prepared = None
        for gid in self._prepared_gids():
            n = eo.checkpoint_of_gid(gid)
            if n < checkpoint_id:
                self._rollback_prepared(gid, f"below the restore point {checkpoint_id}")
            elif n == checkpoint_id and not commit_pending:
                # With a commit phase this cannot be: a restore point without commit_pending is
                # COMMITTED, so every task committed its gid. Without one, nothing told this
                # worker that checkpoint N's commit never happened: its rows are lost here.
                self._rollback_prepared(gid, f"LOST: checkpoint {n} completed, but its commit "
                                        "had not happened and nothing says it is pending")
        for t in self.tasks:
            t.begin()
        self.welcomed = True
        log(f"restored checkpoint {checkpoint_id}: positions " +
            " ".join(f"{t.task}={t.position}" for t in self.tasks))

    def prepare(self, checkpoint_id):
        """Trigger N: no round before N is pending or COMMITTING any more (the daemon triggers
        one round at a time, and none while one is COMMITTING), so a gid of these tasks below N
        still prepared now belongs to a round that will never complete; then each task prepares
        what it read since the last round and acks with where it got to."""
        for gid in self._prepared_gids():
            if eo.checkpoint_of_gid(gid) < checkpoint_id:
                self._rollback_prepared(gid, f"a round before {checkpoint_id} that did not "
                                        "complete")
        acked = []
        for t in self.tasks:
            gid = t.prepare(checkpoint_id)
            self.worker.ack(checkpoint_id, t.task,
                            TaskState(uri=json.dumps({"position": t.position, "gid": gid})))
            acked.append(f"{t.task}={t.position}")
            t.txn_start = t.position
            t.begin()
        log(f"prepared {checkpoint_id}: positions {' '.join(acked)}")

    def abort(self, checkpoint_id):
        """Round N will never complete: drop its transaction and everything read after it, and
        read again from where it started."""
        for t in self.tasks:
            if t.prepared is None or t.prepared[0] != checkpoint_id:
                continue
            t.rollback_open()
            self._rollback_prepared(eo.gid(t.task, checkpoint_id), f"round {checkpoint_id} "
                                    "aborted")
            t.position = t.txn_start = t.prepared[1]
            t.prepared = None
            t.begin()


class Committer:
    """COMMIT PREPARED for this worker's tasks, on the SDK's thread, on a connection of its own
    (a prepared transaction is no longer tied to the session that prepared it)."""

    def __init__(self, tasks, dsn, pause_s):
        self.tasks = tasks
        self.conn = eo.connect_pg(dsn)
        self.pause_s = pause_s

    def commit(self, checkpoint_id):
        log(f"commit {checkpoint_id} start")
        gone = []
        for task in self.tasks:
            if self.pause_s:
                time.sleep(self.pause_s)  # a slower sink: see --commit-pause-ms
            gid = eo.gid(task, checkpoint_id)
            try:
                self.conn.cursor().execute("COMMIT PREPARED %s", (gid,))
            except psycopg2.errors.UndefinedObject:
                gone.append(gid)  # committed before: the commit is asked again after a crash
        log(f"commit {checkpoint_id} done" +
            (f" ({', '.join(gone)} committed before)" if gone else ""))


def restore_positions(restore):
    """task -> the position its state in the restore point names (none for a fresh pipeline)."""
    positions = {}
    for task, state in restore.task_states.items():
        positions[task] = int(json.loads(state.uri)["position"])
    return positions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="HOST:PORT of ckptd (or A,B for HA)")
    parser.add_argument("--redis", required=True, help="HOST:PORT")
    parser.add_argument("--pg", required=True, help="a libpq connection string")
    parser.add_argument("--tasks", required=True, help="this worker's task ids: 0,1")
    parser.add_argument("--worker-id", default=f"worker-{os.getpid()}")
    parser.add_argument("--job", default="eo")
    parser.add_argument("--pipeline", default="p0")
    parser.add_argument("--commit-pause-ms", type=float, default=0,
                        help="wait this long before each COMMIT PREPARED, as a sink farther away "
                             "would (the demo widens the commit phase with it, so that some "
                             "kills land inside it)")
    parser.add_argument("--commit-in-on-complete", action="store_true",
                        help="commit in on_complete, for a pipeline without a commit phase")
    args = parser.parse_args()
    global _worker_id
    _worker_id = args.worker_id
    tasks = args.tasks.split(",")

    engine = Engine(tasks, args.pg, args.redis)
    committer = Committer(tasks, args.pg, args.commit_pause_ms / 1000.0)
    done = threading.Event()
    failed = []
    # The rounds triggered on the current stream (handlers run on one thread, one at a time).
    triggered = set()

    def on_welcome(w):
        r = w.restore
        log(f"welcome generation {w.generation}: restore checkpoint {r.checkpoint_id}"
            f"{' commit_pending' if r.commit_pending else ''}, "
            f"last completed {w.last_completed_checkpoint_id}, "
            f"last committed {w.last_committed_checkpoint_id}")
        triggered.clear()
        engine.commands.put(("restore", r.checkpoint_id, restore_positions(r), r.commit_pending))

    def on_trigger(t):
        triggered.add(t.checkpoint_id)
        engine.commands.put(("trigger", t.checkpoint_id))

    def on_abort(checkpoint_id, reason):
        log(f"abort {checkpoint_id}: {reason}")
        engine.commands.put(("abort", checkpoint_id))

    def on_complete(checkpoint_id, kind):
        # A round this stream was not triggered for: the stream registered while the round was
        # being written to the store, and was welcomed with the restore point before it.
        log(f"complete {checkpoint_id}" + ("" if checkpoint_id in triggered else
                                           " (registered while it was being stored)"))
        if args.commit_in_on_complete:
            committer.commit(checkpoint_id)

    def on_commit(checkpoint_id):
        committer.commit(checkpoint_id)

    def on_all_committed(checkpoint_id):
        log(f"all_committed {checkpoint_id}")

    def on_state(state, reason):
        log(f"pipeline {state}: {reason}")

    def on_disconnected(d):
        log(f"disconnected: {d.code.name} {d.message}" +
            (f"; again in {d.retry_in_s:.2f}s" if d.will_retry else "; giving up"))
        if not d.will_retry:
            failed.append(d)
            done.set()

    worker = PipelineWorker(
        args.server, worker_id=args.worker_id, job_id=args.job, pipeline_id=args.pipeline,
        task_ids=tasks, on_welcome=on_welcome, on_trigger=on_trigger, on_abort=on_abort,
        on_complete=on_complete, on_commit=on_commit, on_all_committed=on_all_committed,
        on_state=on_state, on_disconnected=on_disconnected, auto_commit=True,
        # A daemon restarted or a new leader is back within a second or two here: retry often.
        backoff_initial=0.05, backoff_max=1.0)
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    engine.start(worker)
    worker.start()
    log(f"serving tasks {args.tasks} of {args.job}/{args.pipeline}"
        f"{' (commits in on_complete)' if args.commit_in_on_complete else ''}")
    while not done.wait(0.5):
        pass
    if failed:
        return 1
    worker.goodbye()
    engine.stop()
    log("goodbye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
