"""What one client can make the daemon hold at the gRPC port, tried with a raw HTTP/2 client
(raw_h2.py) that opens calls and never reads: AdminService calls in flight per client (2,000
ListPipelines on one connection once held close to a gigabyte, and kept it after the connection
closed), a worker stream whose lease lapsed while a write to it was stuck (it kept its slot for
ever), connections in all and per client, idle connections, and streams that never say hello."""
import os
import socket
import time
import unittest

import e2e_util as e2e
from raw_h2 import RawGrpc, hello

BUILD_DIR = None

RESOURCE_EXHAUSTED = 8


class EdgeBoundsTest(unittest.TestCase):
    def setUp(self):
        self.ws = e2e.Workspace(BUILD_DIR)
        # A sanitizer's allocator keeps what is freed (ASan's quarantine): memory is checked only
        # in a plain build; what the daemon answers is checked in every build.
        self.sanitized = e2e.is_sanitized_build(self.ws.binary("ckptd"))

    def tearDown(self):
        if os.environ.get("CKPT_E2E_SHOW_LOG"):
            print(self.ws.read_log("ckptd.log")[-6000:])
        self.ws.close()

    def limit_refusals(self, limit):
        return self.ws.metric(f'ckptd_limit_refusals_total{{limit="{limit}"}}') or 0

    def test_callers_that_never_read_hold_bounded_memory_given_back_when_they_go(self):
        daemon = self.ws.start_daemon(self.ws.write_config(
            e2e.declared_pipelines("job", 1000, interval_ms=600000)))
        e2e.wait_until(lambda: (self.ws.metric('ckptd_pipelines{state="WAITING_FOR_TASKS"}')
                                or 0) == 1000, 30, "the pipelines")
        start_kb = e2e.rss_kb(daemon.pid)
        client = RawGrpc("127.0.0.1", self.ws.port, stream_window=0)
        calls = []
        for _ in range(2000):
            calls.append(client.call("/ckpt.v1.AdminService/ListPipelines", end_stream=False))
            client.pump(0)
        client.pump(3.0)
        refused = [sid for sid in calls
                   if (client.status(sid) or (0,))[0] == RESOURCE_EXHAUSTED]
        self.assertGreaterEqual(len(refused), 2000 - 64, "beyond 64 in flight, each is refused")
        self.assertIn("max_admin_calls_per_peer", client.status(refused[0])[1])
        self.assertEqual(client.data_bytes, 0, "no byte of a reply was read")
        peak_kb = e2e.rss_kb(daemon.pid)
        if not self.sanitized:
            self.assertLess(peak_kb - start_kb, 256 * 1024,
                            f"RSS grew {(peak_kb - start_kb) // 1024} MiB")
        self.assertGreaterEqual(self.limit_refusals("max_admin_calls_per_peer"), len(refused))
        # Other clients are served meanwhile.
        self.assertEqual(e2e.http_status(self.ws.metrics_url("/healthz")), 200)
        client.close()
        if not self.sanitized:
            e2e.wait_until(lambda: e2e.rss_kb(daemon.pid) - start_kb < 64 * 1024, 10,
                           "RSS back within 64 MiB of where it started")
        if os.environ.get("CKPT_E2E_PRINT_RSS"):
            print(f"RSS: start {start_kb // 1024} MiB, peak {peak_kb // 1024} MiB, after close "
                  f"{e2e.rss_kb(daemon.pid) // 1024} MiB")

    def test_a_lapsed_lease_ends_a_stream_at_once_whatever_write_is_stuck(self):
        self.ws.start_daemon(self.ws.write_config(
            "lease_ttl_ms: 1500\nheartbeat_interval_ms: 500\n"
            "pipelines:\n  - {job_id: job, pipeline_id: p0, parallelism: 1}\n"))
        frozen = RawGrpc("127.0.0.1", self.ws.port, stream_window=0)
        sid = frozen.call("/ckpt.v1.WorkerService/Connect", hello("job", "p0", ["0"]),
                          end_stream=False)
        frozen.pump(0.5)
        self.assertEqual(self.ws.metric("ckptd_worker_sessions"), 1, "registered")
        # Its welcome cannot be written (the window is 0) and it sends nothing more: its lease
        # lapses, and the stream ends then, not when the transport gives up.
        began = time.monotonic()
        e2e.wait_until(lambda: self.ws.metric("ckptd_worker_sessions") == 0, 10,
                       "the frozen stream to end and free its slot")
        self.assertLess(time.monotonic() - began, 6)
        frozen.pump(1.0)
        self.assertIsNotNone(frozen.status(sid), "the stream was ended (reset or status)")
        frozen.close()

    def test_connections_over_the_caps_are_closed_at_accept_and_idle_ones_later(self):
        self.ws.start_daemon(self.ws.write_config(
            "limits:\n  max_connections_per_peer: 5\n  connection_idle_timeout_ms: 1500\n"))
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"

        def connect():
            s = socket.create_connection(("127.0.0.1", self.ws.port), timeout=5)
            s.sendall(preface)
            return s

        def closed_soon(s, within):
            s.settimeout(within)
            try:
                while True:
                    data = s.recv(4096)
                    if not data:
                        return True
            except socket.timeout:
                return False
            except OSError:
                return True

        held = [connect() for _ in range(5)]
        time.sleep(0.2)
        extra = [connect() for _ in range(3)]
        for s in extra:
            self.assertTrue(closed_soon(s, 3), "a connection over the per-peer cap is closed")
        self.assertEqual(self.limit_refusals("max_connections_per_peer"), 3)
        self.assertEqual(e2e.http_status(self.ws.metrics_url("/healthz")), 200)
        # Connections that carry no call are closed after the idle timeout.
        for s in held:
            self.assertTrue(closed_soon(s, 10), "an idle connection is closed")
        # Their slots are free again.
        def room():
            with connect() as s:
                return not closed_soon(s, 0.2)
        e2e.wait_until(room, 10, "room for a new connection")
        for s in held + extra:
            s.close()

    def test_streams_without_hello_are_capped_per_peer(self):
        self.ws.start_daemon(self.ws.write_config(
            "hello_timeout_ms: 60000\nlimits:\n  max_pending_streams_per_peer: 5\n"
            "pipelines:\n  - {job_id: job, pipeline_id: p0, parallelism: 1}\n"))
        client = RawGrpc("127.0.0.1", self.ws.port)
        silent = [client.call("/ckpt.v1.WorkerService/Connect", None, end_stream=False)
                  for _ in range(8)]
        client.pump(2.0)
        refused = [sid for sid in silent if (client.status(sid) or (0,))[0] == RESOURCE_EXHAUSTED]
        self.assertEqual(len(refused), 3, client.ended)
        self.assertIn("max_pending_streams_per_peer", client.status(refused[0])[1])
        self.assertEqual(self.limit_refusals("max_pending_streams_per_peer"), 3)
        client.close()


if __name__ == "__main__":
    e2e.main(globals())
