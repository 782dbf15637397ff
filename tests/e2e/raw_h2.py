"""A raw gRPC-over-HTTP/2 client (python3-h2) for what no gRPC library lets a client do: open
calls and never read their replies. With the stream window at 0 the daemon cannot send a byte of
any reply's message; only statuses (trailers-only responses) get through.

    from raw_h2 import RawGrpc
    c = RawGrpc("127.0.0.1", port, stream_window=0)
    ids = [c.call("/ckpt.v1.AdminService/ListPipelines") for _ in range(100)]
    c.pump(2.0)                          # read what arrives, never acknowledge a byte of data
    c.status(ids[0])                     # (grpc-status, grpc-message) once it ended, else None
    c.close()

Messages are built by hand (protobuf wire format): see message().
"""
import socket
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, value):
    """One protobuf field: bytes/str as length-delimited, bool/int as a varint."""
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, (bytes, bytearray)):
        return _varint(number << 3 | 2) + _varint(len(value)) + bytes(value)
    return _varint(number << 3) + _varint(int(value))


def hello(job, pipeline, tasks, worker="raw-h2"):
    """A WorkerMessage holding hello (worker.proto: hello = 1; worker_id 1, job_id 2,
    pipeline_id 3, task_ids 4)."""
    body = field(1, worker) + field(2, job) + field(3, pipeline)
    for task in tasks:
        body += field(4, task)
    return field(1, body)


class RawGrpc:
    def __init__(self, host, port, stream_window=65535, timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self.conn.update_settings({
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: stream_window,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100000,
        })
        self._flush()
        self.ended = {}        # stream id -> (grpc-status, grpc-message)
        self.data_bytes = 0    # message bytes received (never acknowledged)
        self.terminated = None  # GOAWAY's error code, once received
        self.closed = False     # the daemon closed the connection

    def _flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def call(self, path, message=b"", end_stream=True, metadata=()):
        """Opens a call and sends `message` (one gRPC frame; None: no message at all, only the
        call's headers); returns its stream id."""
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path),
                   (":authority", "ckptd"), ("content-type", "application/grpc"),
                   ("te", "trailers")] + list(metadata)
        self.conn.send_headers(sid, headers, end_stream=message is None and end_stream)
        if message is not None:
            self.conn.send_data(sid, b"\x00" + struct.pack(">I", len(message)) + message,
                                end_stream=end_stream)
        self._flush()
        return sid

    def pump(self, seconds):
        """Reads for `seconds` (0: what has arrived already; or until the daemon closes the
        connection), answering pings and settings, acknowledging no data. A client that does not
        read its replies still reads its socket (gRPC's transport does): this is that."""
        deadline = time.monotonic() + seconds
        while not self.closed:
            left = deadline - time.monotonic()
            self.sock.settimeout(max(0.0005, left))
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                if left <= 0:
                    break
                continue
            except OSError:
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            for event in self.conn.receive_data(data):
                self._handle(event)
            self._flush()

    def _handle(self, event):
        if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
            headers = dict(event.headers)
            if "grpc-status" in headers:
                self.ended[event.stream_id] = (int(headers["grpc-status"]),
                                               headers.get("grpc-message", ""))
        elif isinstance(event, h2.events.StreamReset):
            self.ended.setdefault(event.stream_id, (-1, f"reset ({event.error_code})"))
        elif isinstance(event, h2.events.DataReceived):
            self.data_bytes += len(event.data)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = event.error_code

    def status(self, sid):
        return self.ended.get(sid)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
