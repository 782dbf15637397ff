"""One pipeline's stream, reconnected with backoff until stopped (docs/PROTOCOL.md): a channel of
the process's shared Session call (session.py), or a Connect call of its own (transport="connect",
or where the daemon answered Session with UNIMPLEMENTED).

Threads: each PipelineWorker has one thread that opens its streams, reads the daemon's messages
and calls the handlers, one at a time, and one that sends heartbeats. gRPC's own thread writes
what the worker queues. Handlers must not block for long: the stream is not read meanwhile. They
may call any method of their worker.
"""
import queue
import sys
import threading
import time
import traceback

import grpc

from ckpt.v1 import common_pb2, worker_pb2, worker_pb2_grpc

from . import retry
from .connection import Channels, TokenSource, is_loopback, parse_servers
from .session import HUB
from .types import (AckFigures, Counters, Disconnect, RestorePoint, TaskState, Trigger, Welcome)

_KIND_NAMES = {
    common_pb2.CHECKPOINT_KIND_CHECKPOINT: "CHECKPOINT",
    common_pb2.CHECKPOINT_KIND_SAVEPOINT: "SAVEPOINT",
    common_pb2.CHECKPOINT_KIND_SAVEPOINT_AND_STOP: "SAVEPOINT_AND_STOP",
}
# A session that stayed up this long starts the next backoff from the beginning.
_STABLE_SESSION_S = 1.0
# Every tenth heartbeat carries every task's position, not only the ones that changed.
_FULL_POSITIONS_EVERY = 10
# Ack positions defaulted from the trigger: the last few triggers are enough.
_TRIGGERS_REMEMBERED = 16
# A welcome that names no heartbeat interval: the daemon's default.
_DEFAULT_HEARTBEAT_S = 3.0
# The largest position a worker may report (the protocol's positions are int64; this leaves room
# for the daemon's next multiple of position_interval above it).
MAX_POSITION = 2 ** 60


def _current_epoch(epoch, newest):
    """Epoch 0 (a daemon with the embedded store) is never stale; others must not go back."""
    return epoch == 0 or epoch >= newest


def kind_name(kind):
    return _KIND_NAMES.get(kind, "UNSPECIFIED")


def state_name(state):
    name = common_pb2.PipelineState.Name(state) if state in common_pb2.PipelineState.values() \
        else "PIPELINE_STATE_UNSPECIFIED"
    return name[len("PIPELINE_STATE_"):]


def _restore_point(r):
    return RestorePoint(
        checkpoint_id=r.checkpoint_id, kind=kind_name(r.kind), location=r.location,
        task_states={t: TaskState(s.uri, s.size_bytes, s.checksum)
                     for t, s in r.task_states.items()},
        source_job_id=r.source_job_id, source_pipeline_id=r.source_pipeline_id,
        rescaled=r.rescaled, operator_set=r.operator_set, position=r.position,
        commit_pending=r.commit_pending)


class _Stream:
    """One Connect call, or one channel of a Session call: its outgoing queue (None half-closes)
    or channel, and what it learnt."""

    def __init__(self):
        self.outgoing = queue.Queue()
        self.call = None
        self.channel = None  # a session.ChannelCall: sends go there, not to `outgoing`
        self.welcomed_at = None  # time.monotonic() of its welcome
        self.epoch = 0
        self.heartbeat_s = None
        self.goodbye_sent = False
        self.closed = False

    def requests(self):
        while True:
            message = self.outgoing.get()
            if message is None:
                return  # half-close
            yield message

    def send(self, message):
        if not self.closed:
            if self.channel is not None:
                self.channel.send(message)
            else:
                self.outgoing.put(message)

    def queued(self):
        """What was queued before the stream had a call (the hello)."""
        messages = []
        while True:
            try:
                message = self.outgoing.get_nowait()
            except queue.Empty:
                return messages
            if message is not None:
                messages.append(message)

    def close(self):
        if not self.closed:
            self.closed = True
            self.outgoing.put(None)  # a channel has no half-close: its goodbye ends it


# What the daemon keeps of a failed restore's reason: a longer exception text is cut before it
# is sent (a huge one would not fit a frame).
_MAX_RESTORE_REASON = 1024

class PipelineWorker:
    """Serves one pipeline's tasks from this process.

    server: "host:port", or the daemons of an HA group as "host:port,host:port" (the leader is
    followed). Handlers (all optional): on_welcome(Welcome), on_trigger(Trigger),
    on_abort(checkpoint_id, reason), on_complete(checkpoint_id, kind), on_commit(checkpoint_id),
    on_all_committed(checkpoint_id), on_release([ids]), on_state(state, reason),
    on_savepoint_refused(reason), on_disconnected(Disconnect). A handler that raises is printed
    to stderr and the stream goes on.

    on_welcome is the restore handler (docs/PROTOCOL.md, "Verified restore"): with a restore
    point, its outcome is sent to the daemon (restore_result); if it raises, the restore failed,
    the daemon marks that checkpoint unrestorable and ends the stream, and the next welcome names
    an older checkpoint. A welcome with restore_withheld (the pipeline FAILED without a restore
    point it may offer) does not call on_welcome: on_state("FAILED", reason) holds the
    application back until an operator restores the pipeline.

    transport: "session" (the default) opens this worker's stream as a channel of a Session call
    that every worker of the process with the same daemon and credentials shares, what they send
    meanwhile batched into frames (docs/PROTOCOL.md, "Worker sessions"); a daemon without
    Session (UNIMPLEMENTED) gets a Connect call per worker instead. "connect": a Connect call of
    its own from the start.

    Every hello after the first asks for takeover (takeover_on_reconnect): a live stream holding
    our tasks is most likely our own previous one, not yet seen dead. ack, decline, committed and
    request_savepoint go out only on a welcomed stream; otherwise they are dropped and counted
    (after a reconnect the daemon has aborted that round and triggers a new one, and asks for a
    pending commit again with the welcome's restore.commit_pending).

    A pipeline with a commit phase (docs/PROTOCOL.md, "Commit phase"): a complete with commit
    calls on_complete, then on_commit(checkpoint_id); a welcome whose restore point has
    commit_pending calls on_welcome, then on_commit(restore.checkpoint_id), which commits what
    that state holds again (committing must be idempotent). With auto_commit, `committed` is sent
    for every task of this worker once they returned; if one of them raises, the sequence stops
    there and nothing is sent: the application did not commit, and the checkpoint stays
    COMMITTING (the daemon warns when it is overdue). With auto_commit=False, call committed()
    per task once its commit is done (an asynchronous commit). on_all_committed: every task of
    the pipeline committed, durably; what the checkpoint held back may be forgotten.
    """

    def __init__(self, server, *, worker_id, job_id, pipeline_id, task_ids,
                 on_welcome=None, on_trigger=None, on_abort=None, on_complete=None,
                 on_commit=None, on_all_committed=None, on_release=None, on_state=None,
                 on_savepoint_refused=None, on_disconnected=None, auto_commit=True,
                 takeover_on_reconnect=True, backoff_initial=0.1, backoff_max=5.0,
                 ca_file=None, cert_file=None, key_file=None, token_file=None,
                 tls_server_name=None, transport="session"):
        if not task_ids:
            raise ValueError("task_ids: a worker serves at least one task")
        if transport not in ("session", "connect"):
            raise ValueError(f"transport: 'session' or 'connect', not {transport!r}")
        self._transport = transport
        self._servers = parse_servers(server)
        self._channels = Channels(ca_file, cert_file, key_file, tls_server_name)
        if token_file and not self._channels.tls and not all(map(is_loopback, self._servers)):
            raise ValueError("token_file without TLS: a token is sent in the clear only to "
                             "a loopback address")
        self._token = TokenSource(token_file)
        self._hello = worker_pb2.Hello(worker_id=worker_id, job_id=job_id,
                                       pipeline_id=pipeline_id, task_ids=list(task_ids))
        self._tasks = frozenset(task_ids)
        self._handlers = dict(welcome=on_welcome, trigger=on_trigger, abort=on_abort,
                              complete=on_complete, commit=on_commit,
                              all_committed=on_all_committed, release=on_release,
                              state=on_state, savepoint_refused=on_savepoint_refused,
                              disconnected=on_disconnected)
        self._auto_commit = auto_commit
        self._takeover_on_reconnect = takeover_on_reconnect
        self._backoff = retry.Backoff(backoff_initial, backoff_max)
        # The standby pace (retry.StandbyPoll): the backoff capped at STANDBY_POLL_MAX_S.
        self._standby_backoff = retry.Backoff(
            backoff_initial, max(backoff_initial, min(backoff_max, retry.STANDBY_POLL_MAX_S)))
        self._standby_poll = retry.StandbyPoll(retry.STANDBY_POLL_WINDOW_S,
                                               len(self._servers) > 1)

        # Guarded by _lock: everything below, read and written from any thread.
        self._lock = threading.Lock()
        self._stream = None          # the current _Stream
        self._started = False
        self._ending = False         # goodbye or stop asked: never reconnect
        self._max_epoch = 0          # the newest leadership seen
        self._positions = {}         # task -> the highest position set
        self._changed = set()        # tasks whose position the next heartbeat carries
        self._backlog = False        # set_backlog's: every heartbeat carries it
        self._may_go_back = set()    # tasks whose first position after a welcome may be lower
        self._trigger_positions = {}  # checkpoint id -> its trigger's position
        self.counters = Counters()

        self._stop_event = threading.Event()   # wakes the backoff
        self._heartbeat_wake = threading.Event()  # a welcome or the end: the heartbeats look again
        self._stopped_event = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"ckpt {job_id}/{pipeline_id}")
        self._heartbeats = threading.Thread(target=self._heartbeat_loop, daemon=True,
                                            name=f"ckpt heartbeat {job_id}/{pipeline_id}")

    # ---- what the application calls ------------------------------------------------------------

    def start(self):
        """Connects. Only the first call has an effect."""
        with self._lock:
            if self._started or self._ending:
                return
            self._started = True
            # Under the lock: a stop() from another thread sees the threads started or not at all.
            self._thread.start()
            self._heartbeats.start()

    def ack(self, checkpoint_id, task_id, state, figures=None, position=None):
        """The task's snapshot for this round is done. `position`: where it snapshotted; left
        out, the trigger's (an ack at another position than the trigger's fails the round)."""
        if not isinstance(state, TaskState):
            raise TypeError("state must be a TaskState")
        figures = figures or AckFigures()
        with self._lock:
            if position is None:
                position = self._trigger_positions.get(checkpoint_id, 0)
        ack = worker_pb2.Ack(
            checkpoint_id=checkpoint_id, task_id=task_id,
            state=common_pb2.TaskState(uri=state.uri, size_bytes=state.size_bytes,
                                       checksum=state.checksum),
            sync_duration_ms=figures.sync_duration_ms,
            async_duration_ms=figures.async_duration_ms,
            alignment_duration_ms=figures.alignment_duration_ms,
            bytes_processed_during_alignment=figures.bytes_processed_during_alignment,
            position=position)
        self._send_on_session(worker_pb2.WorkerMessage(ack=ack))

    def decline(self, checkpoint_id, task_id, reason, expired=False, position=0):
        """The task cannot take this round (expired: it gave up waiting); it fails at once."""
        decline = worker_pb2.Decline(checkpoint_id=checkpoint_id, task_id=task_id,
                                     reason=reason, expired=expired, position=position)
        self._send_on_session(worker_pb2.WorkerMessage(decline=decline))

    def committed(self, checkpoint_id, task_id):
        """The task committed what checkpoint_id held back (a commit phase). With auto_commit
        the worker sends this itself; without, call it once the task's commit is done."""
        committed = worker_pb2.Committed(checkpoint_id=checkpoint_id, task_id=task_id)
        self._send_on_session(worker_pb2.WorkerMessage(committed=committed))

    def request_savepoint(self, target="", stop=False):
        """Asks the daemon for a savepoint of this pipeline (its answer: a trigger, or
        on_savepoint_refused)."""
        request = worker_pb2.SavepointRequest(target=target, stop=stop)
        self._send_on_session(worker_pb2.WorkerMessage(savepoint_request=request))

    def set_position(self, task_id, position):
        """The highest position (>= 0) the task has committed, sent with the next heartbeat. A
        lower one than the task's last is ignored, except the first after a welcome."""
        if task_id not in self._tasks:
            raise ValueError(f"task {task_id!r} is not one of this worker's")
        if isinstance(position, bool) or not isinstance(position, int):
            raise TypeError("a position is an int")
        if not 0 <= position <= MAX_POSITION:
            raise ValueError(f"a position is between 0 and {MAX_POSITION}")
        with self._lock:
            last = self._positions.get(task_id)
            # The first position after a welcome is sent whatever it is, the same as before
            # included: the daemon knows none of this task's until it is.
            first_since_welcome = task_id in self._may_go_back
            if last is not None and position < last and not first_since_welcome:
                return
            self._may_go_back.discard(task_id)
            if last != position or first_since_welcome:
                self._positions[task_id] = position
                self._changed.add(task_id)

    def set_backlog(self, backlog):
        """The tasks are behind, catching up on a backlog (True), or caught up (False): said at
        once and in every heartbeat. While any worker of a pipeline says so, the daemon
        checkpoints it at its max_interval_ms, when set (docs/PROTOCOL.md, "Adaptive
        interval"). Said again after a reconnect."""
        backlog = bool(backlog)
        with self._lock:
            if backlog == self._backlog:
                return
            self._backlog = backlog
            stream = self._stream
            if (stream is not None and stream.welcomed_at is not None
                    and not stream.goodbye_sent and not stream.closed):
                stream.send(worker_pb2.WorkerMessage(
                    heartbeat=worker_pb2.Heartbeat(backlog=backlog)))

    def goodbye(self, timeout=5.0):
        """Deregisters the tasks cleanly: goodbye, then half-close, then the daemon ends the
        stream (cancelled if that takes longer than `timeout`). Never reconnects afterwards.
        Blocks until the worker stopped, unless called from a handler."""
        with self._lock:
            self._ending = True
            stream = self._stream
            if stream is not None and stream.welcomed_at is not None:
                stream.goodbye_sent = True
                stream.send(worker_pb2.WorkerMessage(goodbye=worker_pb2.Goodbye()))
                stream.close()
                stream = None  # the daemon ends it
        self._stop_event.set()
        self._heartbeat_wake.set()
        if stream is not None and stream.call is not None:
            stream.call.cancel()  # not welcomed: nothing to say goodbye to
        if not self._started:
            self._stopped_event.set()
            return
        if threading.current_thread() is self._thread:
            # A handler cannot wait for its own thread: the timeout is enforced by a timer.
            timer = threading.Timer(timeout, self.stop)
            timer.daemon = True
            timer.start()
            return
        if not self._stopped_event.wait(timeout):
            self.stop()

    def stop(self):
        """Cancels the stream (the daemon sees the tasks lost) and never reconnects."""
        with self._lock:
            self._ending = True
            stream = self._stream
            started = self._started
        self._stop_event.set()
        self._heartbeat_wake.set()
        if stream is not None:
            stream.close()
            if stream.call is not None:
                stream.call.cancel()
        if not started:
            self._stopped_event.set()
            return
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def wait_until_stopped(self, timeout=None):
        """True once the worker stopped for good (goodbye, stop, or a status not retried).
        From a handler it cannot wait for its own thread: it says whether it is stopped."""
        if threading.current_thread() is self._thread:
            return self._stopped_event.is_set()
        return self._stopped_event.wait(timeout)

    def close(self):
        """Stops the worker and closes its channels."""
        self.stop()
        self._channels.close()

    def is_connected(self):
        with self._lock:
            return self._stream is not None and self._stream.welcomed_at is not None

    def is_stopped(self):
        return self._stopped_event.is_set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the stream thread ---------------------------------------------------------------------

    def _run(self):
        index = 0             # the daemon of the list tried next
        redirect = None       # the leader a standby named
        redirects = 0
        first = True
        try:
            while not self._stop_event.is_set():
                target = redirect or self._servers[index]
                redirect = None
                stream = _Stream()
                hello = worker_pb2.Hello()
                hello.CopyFrom(self._hello)
                hello.takeover = not first and self._takeover_on_reconnect
                first = False
                stream.send(worker_pb2.WorkerMessage(hello=hello))
                with self._lock:
                    if self._ending:
                        break
                    self._stream = stream
                    self.counters.attempts += 1
                code, details, trailers = self._serve(stream, target)
                if (code == grpc.StatusCode.UNIMPLEMENTED and stream.channel is not None
                        and stream.welcomed_at is None):
                    # A daemon from before Session: the same hello again at once, over Connect.
                    if HUB.session_unsupported(target):
                        print(f"ckpt_worker: {target} has no WorkerService.Session "
                              "(UNIMPLEMENTED): a Connect stream per worker there",
                              file=sys.stderr)
                    with self._lock:
                        self._stream = None
                    first = True
                    redirect = target
                    continue
                if code == grpc.StatusCode.UNAVAILABLE:
                    self._channels.drop(target)  # its next connect starts afresh
                with self._lock:
                    self._stream = None
                    self._trigger_positions.clear()
                    user_ended = self._ending
                if user_ended:
                    break
                with self._lock:
                    self.counters.disconnects += 1
                was_connected = stream.welcomed_at is not None
                stable = (was_connected and
                          time.monotonic() - stream.welcomed_at >= _STABLE_SESSION_S)
                if stable:
                    self._backoff.reset()
                    self._standby_backoff.reset()
                if was_connected:
                    redirects = 0
                trailer = dict(trailers or ())
                # A trailer (even empty) is a standby's answer: a takeover is under way. So may
                # a leader lost be.
                self._standby_poll.stream_ended(
                    was_connected, retry.LEADER_TRAILER in trailer,
                    stable and code == grpc.StatusCode.UNAVAILABLE, time.monotonic())
                leader = trailer.get(retry.LEADER_TRAILER)
                if leader and not self._may_connect_to(leader):
                    print(f"ckpt_worker: not following the leader {leader}: the bearer token "
                          "would go to it in the clear", file=sys.stderr)
                    leader = None
                if (code == grpc.StatusCode.UNAVAILABLE and leader and leader != target
                        and redirects < retry.MAX_REDIRECTS_IN_A_ROW):
                    redirects += 1
                    redirect = leader
                    with self._lock:
                        self.counters.leader_redirects += 1
                    self._call("disconnected", Disconnect(code, details, was_connected, True,
                                                          0.0, leader))
                    continue
                redirects = 0
                if code == grpc.StatusCode.UNAVAILABLE and len(self._servers) > 1:
                    index = (index + 1) % len(self._servers)
                action = retry.classify(code, details)
                if action == retry.GIVE_UP:
                    self._call("disconnected", Disconnect(code, details, was_connected, False,
                                                          0.0))
                    break
                if action == retry.RETRY and code == grpc.StatusCode.ABORTED:
                    delay = 0.0  # restored by an operator: back at once for the new restore point
                elif action == retry.RETRY and self._standby_poll.active(time.monotonic()):
                    delay = self._standby_backoff.next_delay()
                else:
                    delay = self._backoff.next_delay(slowly=action == retry.RETRY_SLOWLY)
                self._call("disconnected", Disconnect(code, details, was_connected, True, delay))
                self._stop_event.wait(delay)
        finally:
            with self._lock:
                self._ending = True
                self._stream = None
            self._stop_event.set()
            self._heartbeat_wake.set()
            self._stopped_event.set()

    def _may_connect_to(self, target):
        """A bearer token goes in the clear only to a loopback address."""
        return self._channels.tls or not self._token.path or is_loopback(target)

    def _serve(self, stream, target):
        """Runs one Connect call (or Session channel) to its end: (status code, details,
        trailing metadata)."""
        try:
            if self._transport == "session" and not HUB.connect_only(target):
                with self._lock:  # sends from here on go to the channel
                    stream.channel = HUB.open_channel(target, self._channels,
                                                      self._token.metadata(), stream.queued())
                    stream.call = stream.channel
            else:
                stub = worker_pb2_grpc.WorkerServiceStub(self._channels.get(target))
                stream.call = stub.Connect(stream.requests(), metadata=self._token.metadata())
            with self._lock:
                ending = self._ending
            if ending:
                stream.call.cancel()
            for message in stream.call:
                self._dispatch(stream, message)
            return stream.call.code(), stream.call.details() or "", \
                stream.call.trailing_metadata()
        except grpc.RpcError as e:
            return e.code(), e.details() or "", e.trailing_metadata()
        except Exception as e:  # not gRPC's: retried as a broken stream, never the thread's end
            traceback.print_exception(type(e), e, e.__traceback__)
            if stream.call is not None:
                stream.call.cancel()
            return grpc.StatusCode.UNKNOWN, f"{type(e).__name__}: {e}", ()
        finally:
            with self._lock:
                stream.close()  # ends gRPC's reader of the requests

    def _dispatch(self, stream, message):
        which = message.WhichOneof("msg")
        if which == "welcome":
            self._on_welcome(stream, message.welcome)
        elif which == "trigger":
            t = message.trigger
            with self._lock:
                stale = not _current_epoch(t.leader_epoch, self._max_epoch)
                if stale:
                    self.counters.stale_messages += 1
                else:
                    self._max_epoch = max(self._max_epoch, t.leader_epoch)  # seen, as a welcome's
                    self._trigger_positions[t.checkpoint_id] = t.position
                    while len(self._trigger_positions) > _TRIGGERS_REMEMBERED:
                        del self._trigger_positions[min(self._trigger_positions)]
            if not stale:
                self._call("trigger", Trigger(t.checkpoint_id, kind_name(t.kind), t.timestamp_ms,
                                              t.generation, t.target, t.leader_epoch,
                                              t.position))
        elif which in ("abort", "complete"):
            if self._stale_stream(stream):
                return
            if which == "abort":
                self._call("abort", message.abort.checkpoint_id, message.abort.reason)
            else:
                c = message.complete
                if self._call("complete", c.checkpoint_id, kind_name(c.kind)) and c.commit:
                    self._commit(c.checkpoint_id)
        elif which == "all_committed":
            if not self._stale_stream(stream):  # a deposed leader's word is not durable
                self._call("all_committed", message.all_committed.checkpoint_id)
        elif which == "release":
            if not self._stale_stream(stream):  # a deposed leader's release deletes nothing
                self._call("release", list(message.release.checkpoint_ids))
        elif which == "state":
            self._call("state", state_name(message.state.state), message.state.reason)
        elif which == "savepoint_refused":
            self._call("savepoint_refused", message.savepoint_refused.reason)
        # A message this SDK does not know: a newer daemon's; ignored.

    def _on_welcome(self, stream, w):
        with self._lock:
            stream.epoch = w.leader_epoch
            if not _current_epoch(w.leader_epoch, self._max_epoch):
                self.counters.stale_messages += 1  # a deposed leader's
                return
            self._max_epoch = max(self._max_epoch, w.leader_epoch)
            stream.welcomed_at = time.monotonic()
            stream.heartbeat_s = (w.heartbeat_interval_ms / 1000.0
                                  if w.heartbeat_interval_ms > 0 else _DEFAULT_HEARTBEAT_S)
            self.counters.connects += 1
            if self.counters.connects > 1:
                self.counters.reconnects += 1
            # The daemon knows no position of a task that registered anew: each reports again
            # with its next set_position, which may go back once (to where it restored). Until
            # then nothing is sent for it: a position from before a restore would push the next
            # rounds to where the task no longer is.
            self._changed = set()
            self._may_go_back = set(self._tasks)
            if self._backlog:
                # The daemon forgot the last stream's backlog with it: said again, at once.
                stream.send(worker_pb2.WorkerMessage(
                    heartbeat=worker_pb2.Heartbeat(backlog=True)))
        self._heartbeat_wake.set()  # follow this session's interval from now
        if w.restore_withheld:
            # The pipeline has state it cannot offer: the application is held back (on_welcome
            # would start it as a fresh pipeline) until an operator restores the pipeline, which
            # ends this stream; the next welcome carries the new restore point.
            self._call("state", "FAILED",
                       "the pipeline's restore point failed and none replaced it; the "
                       "application is held back until an operator restores it "
                       "(ckptctl pipeline why)")
            return
        failure = self._call_for_failure("welcome", Welcome(
            session_id=w.session_id, generation=w.generation, state=state_name(w.state),
            last_completed_checkpoint_id=w.last_completed_checkpoint_id,
            last_completed_kind=kind_name(w.last_completed_kind),
            heartbeat_interval_ms=w.heartbeat_interval_ms, lease_ttl_ms=w.lease_ttl_ms,
            leader_epoch=w.leader_epoch, restore=_restore_point(w.restore),
            retained_checkpoint_ids=list(w.retained_checkpoint_ids),
            last_committed_checkpoint_id=w.last_committed_checkpoint_id))
        if w.restore.checkpoint_id:
            # The restore handler's outcome (docs/PROTOCOL.md, "Verified restore"): an exception
            # is a failed restore, and the daemon moves the pipeline to an older checkpoint.
            self._send_on_session(worker_pb2.WorkerMessage(restore_result=worker_pb2.RestoreResult(
                checkpoint_id=w.restore.checkpoint_id, task_id=self._hello.task_ids[0],
                ok=failure is None, reason=(failure or "")[:_MAX_RESTORE_REASON])))
        # The restore point is still COMMITTING: on_welcome restored what it holds, to commit.
        if failure is None and w.restore.commit_pending:
            self._commit(w.restore.checkpoint_id)

    def _commit(self, checkpoint_id):
        """on_complete or on_welcome returned; once on_commit has too, the tasks committed."""
        if self._call("commit", checkpoint_id) and self._auto_commit:
            for task in self._hello.task_ids:
                self.committed(checkpoint_id, task)

    def _stale_stream(self, stream):
        with self._lock:
            if not _current_epoch(stream.epoch, self._max_epoch) or stream.welcomed_at is None:
                self.counters.stale_messages += 1
                return True
        return False

    def _call(self, name, *args):
        """False if the handler raised: what it was to do may not be done."""
        return self._call_for_failure(name, *args) is None

    def _call_for_failure(self, name, *args):
        """None, or what the handler raised (printed to stderr too)."""
        handler = self._handlers.get(name)
        if handler is None:
            return None
        try:
            handler(*args)
        except Exception as e:  # a handler's bug must not end the stream's thread
            traceback.print_exception(type(e), e, e.__traceback__)
            return str(e) or type(e).__name__
        return None

    # ---- sends and heartbeats ------------------------------------------------------------------

    def _send_on_session(self, message):
        with self._lock:
            stream = self._stream
            if (stream is None or stream.welcomed_at is None or stream.goodbye_sent
                    or stream.closed):
                self.counters.dropped_sends += 1
                return
            stream.send(message)

    def _heartbeat_loop(self):
        sent = 0
        while not self._stop_event.is_set():
            with self._lock:
                stream = self._stream
                interval = stream.heartbeat_s if stream and stream.welcomed_at else None
            woken = self._heartbeat_wake.wait(interval)  # None: until a welcome or the end
            self._heartbeat_wake.clear()
            if woken or interval is None:
                continue
            with self._lock:
                if self._stream is not stream or stream.goodbye_sent or stream.closed:
                    continue
                sent += 1
                tasks = self._positions if sent % _FULL_POSITIONS_EVERY == 0 else self._changed
                positions = {t: self._positions[t] for t in tasks
                             if t in self._positions and t not in self._may_go_back}
                self._changed = set()
                stream.send(worker_pb2.WorkerMessage(
                    heartbeat=worker_pb2.Heartbeat(positions=positions, backlog=self._backlog)))

