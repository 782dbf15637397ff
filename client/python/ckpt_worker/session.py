"""Many pipelines of one process on one WorkerService.Session call (docs/PROTOCOL.md, "Worker
sessions").

Every PipelineWorker of a process that reaches the same daemon with the same credentials opens
its stream as a channel of one shared Session call. A channel behaves as the Connect call a
worker would otherwise hold: iterating it yields the daemon's messages, and it ends with the
status the channel's `end` carries (or the whole call's). What the workers send while gRPC writes
a frame goes out together in the next one.

Threads: each call has one reader thread, which hands messages to the channels' queues; gRPC's
own thread pulls frames from the call's request iterator. Channel numbers are never reused on one
call: a channel dropped here may still have an `end` on its way.
"""
import queue
import threading

import grpc

from ckpt.v1 import worker_pb2, worker_pb2_grpc

# A frame holds envelopes up to this size (a larger envelope goes alone).
MAX_FRAME_BYTES = 4 * 1024 * 1024
# Channel numbers one call hands out before it takes no more (a new call is opened).
MAX_CHANNEL_NUMBER = 1 << 30


class ChannelCall(grpc.RpcError):
    """One channel, as the worker sees a Connect call: iterate it for the daemon's messages; it
    raises itself when it ends with a status other than OK (as gRPC's call object does)."""

    def __init__(self, session, number):
        super().__init__()
        self._session = session
        self.number = number
        self._arrivals = queue.Queue()
        self._end = None  # (code, details, trailers)
        self._end_lock = threading.Lock()

    def __iter__(self):
        return self

    def __next__(self):
        arrival = self._arrivals.get()
        if arrival is _END:
            self._arrivals.put(_END)  # an ended channel stays ended
            if self._end[0] == grpc.StatusCode.OK:
                raise StopIteration
            raise self
        return arrival

    def send(self, message):
        if self._session is not None and self._end is None:
            self._session.send(self.number, message)

    def cancel(self):
        """Drops the channel now: a goodbye tells the daemon, the worker sees CANCELLED."""
        if self._session is not None:
            self._session.close_channel(self.number)

    def code(self):
        return self._end[0]

    def details(self):
        return self._end[1]

    def trailing_metadata(self):
        return self._end[2]

    # ---- the session's side ----

    def deliver(self, message):
        self._arrivals.put(message)

    def finish(self, code, details, trailers=()):
        with self._end_lock:
            if self._end is not None:
                return
            self._end = (code, details, tuple(trailers or ()))
        self._arrivals.put(_END)


_END = object()
_CLOSE = object()


def _status_code(number):
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


class SessionCall:
    """One Session call and its channels."""

    def __init__(self, channel, metadata, on_ended):
        self._lock = threading.Lock()
        self._channels = {}    # number -> ChannelCall, guarded by _lock
        self._next_number = 1  # guarded by _lock
        self._closing = False  # guarded by _lock: takes no more channels
        self._end = None       # guarded by _lock: (code, details, trailers) once the call ended
        self._outgoing = queue.Queue()  # WorkerEnvelope; _CLOSE ends the requests
        self._on_ended = on_ended
        self._call = worker_pb2_grpc.WorkerServiceStub(channel).Session(
            self._frames(), metadata=metadata)
        threading.Thread(target=self._read, daemon=True, name="ckpt session").start()

    def usable(self):
        with self._lock:
            return not self._closing and self._next_number < MAX_CHANNEL_NUMBER

    def open(self, first_messages):
        """A new channel with its first messages (the hello) queued; one already ended with the
        call's status if the call ended (a daemon that is down: the worker retries as after a
        failed Connect); None when this call takes no more channels but has not ended."""
        with self._lock:
            if self._end is not None:
                ended = ChannelCall(self, 0)
                ended.finish(*self._end)
                return ended
            if self._closing or self._next_number >= MAX_CHANNEL_NUMBER:
                return None
            number = self._next_number
            self._next_number += 1
            channel = ChannelCall(self, number)
            self._channels[number] = channel
        for message in first_messages:
            self.send(number, message)
        return channel

    def send(self, number, message):
        self._outgoing.put(worker_pb2.WorkerEnvelope(channel=number, message=message))

    def close_channel(self, number):
        with self._lock:
            channel = self._channels.pop(number, None)
            last = channel is not None and not self._channels and not self._closing
            if last:
                self._closing = True
        if channel is None:
            return
        if last:
            self._call.cancel()  # the daemon sees the call end, as a cancelled Connect stream
        else:
            self.send(number, worker_pb2.WorkerMessage(goodbye=worker_pb2.Goodbye()))
        channel.finish(grpc.StatusCode.CANCELLED, "Locally cancelled by application!")

    def _frames(self):
        """What gRPC writes: everything queued since the last frame, up to the frame size; it
        waits only for the first envelope of a frame, never to fill one."""
        pending = None
        while True:
            envelope = pending if pending is not None else self._outgoing.get()
            pending = None
            if envelope is _CLOSE:
                return
            frame = worker_pb2.WorkerFrame()
            size = 0
            while True:
                n = envelope.ByteSize()
                if frame.envelopes and size + n > MAX_FRAME_BYTES:
                    pending = envelope
                    break
                frame.envelopes.append(envelope)
                size += n
                try:
                    envelope = self._outgoing.get_nowait()
                except queue.Empty:
                    break
                if envelope is _CLOSE:
                    pending = _CLOSE
                    break
            yield frame

    def _read(self):
        code, details, trailers = grpc.StatusCode.OK, "", ()
        try:
            for frame in self._call:
                for envelope in frame.envelopes:
                    self._dispatch(envelope)
            code, details = self._call.code(), self._call.details() or ""
            trailers = self._call.trailing_metadata() or ()
        except grpc.RpcError as e:
            code, details, trailers = e.code(), e.details() or "", e.trailing_metadata() or ()
        finally:
            if code == grpc.StatusCode.OK:
                # The daemon ended the call with OK: no channel is left to end (each ended with
                # its own `end`); a channel still here ends as a stream closed without a word.
                code, details = grpc.StatusCode.UNAVAILABLE, "the session ended"
            with self._lock:
                self._closing = True
                self._end = (code, details, trailers)
                channels, self._channels = self._channels, {}
            self._outgoing.put(_CLOSE)  # ends the request iterator
            for channel in channels.values():
                channel.finish(code, details, trailers)
            self._on_ended(self, code)

    def _dispatch(self, envelope):
        with self._lock:
            channel = self._channels.get(envelope.channel)
            if channel is not None and envelope.HasField("end"):
                del self._channels[envelope.channel]
                last = not self._channels and not self._closing
                if last:
                    self._closing = True
            else:
                last = False
        if channel is None:
            return  # a channel dropped here: its end was on its way
        if envelope.HasField("end"):
            if last:
                self._call.cancel()
            channel.finish(_status_code(envelope.end.code), envelope.end.message)
        else:
            channel.deliver(envelope.message)


class SessionHub:
    """The Session calls of this process, one per daemon address and credentials."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls = {}          # key -> SessionCall
        self._channels = {}       # key -> the Channels its calls use
        self._connect_only = set()  # addresses that answered UNIMPLEMENTED

    def connect_only(self, target):
        with self._lock:
            return target in self._connect_only

    def session_unsupported(self, target):
        """True the first time `target` is named."""
        with self._lock:
            new = target not in self._connect_only
            self._connect_only.add(target)
            return new

    def open_channel(self, target, channels, metadata, first_messages):
        """A channel on the shared call for `target` with `channels`' credentials (made with
        `metadata` if it is new)."""
        key = (target,) + channels.identity() + (metadata,)
        for _ in range(2):  # a call found used up (its last channel just went) is replaced once
            with self._lock:
                call = self._calls.get(key)
                if call is None or not call.usable():
                    shared = self._channels.get(key)
                    if shared is None:
                        shared = self._channels[key] = channels.copy()
                    call = SessionCall(shared.get(target), metadata,
                                       lambda ended, code, key=key: self._ended(key, ended, code))
                    self._calls[key] = call
            channel = call.open(first_messages)
            if channel is not None:
                return channel
        # Two calls in a row gave their last channel up as this one came: try again later.
        busy = ChannelCall(None, 0)
        busy.finish(grpc.StatusCode.UNAVAILABLE, "no Session call took the channel; retrying")
        return busy

    def _ended(self, key, call, code):
        with self._lock:
            if self._calls.get(key) is call:
                del self._calls[key]
            if code == grpc.StatusCode.UNAVAILABLE and key in self._channels:
                # A cached channel keeps failing with its last connect error while its own
                # backoff runs: the next call starts afresh.
                self._channels.pop(key).close()


HUB = SessionHub()
