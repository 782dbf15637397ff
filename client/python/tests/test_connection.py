"""How a worker reaches the daemon: the server list, loopback, credential files, the token."""
import contextlib
import io
import os
import re
import tempfile
import unittest

from ckpt_worker import connection


class ParseServersTest(unittest.TestCase):
    def test_one_or_several_addresses_in_order(self):
        self.assertEqual(connection.parse_servers("127.0.0.1:7070"), ["127.0.0.1:7070"])
        self.assertEqual(connection.parse_servers("a:1, b:2 ,[::1]:3"), ["a:1", "b:2", "[::1]:3"])

    def test_refuses_what_is_not_host_port(self):
        # Ports are ASCII digits of 1..65535, as the C++ SDK and ckptctl take them: not Arabic-Indic
        # or fullwidth digits (which int() would read), not 0, not above 65535.
        for server in ("", "a", "a:", ":7070", "a:70x", "a:1,,b:2", "a:1,", "a:-1",
                       "a:\u0667\u0660\u0667\u0660", "a:\uff17\uff10", "a:0", "a:65536",
                       "a:000007070"):
            with self.subTest(server=server):
                with self.assertRaisesRegex(ValueError, "is not HOST:PORT"):
                    connection.parse_servers(server)

    def test_refuses_an_address_named_twice(self):
        with self.assertRaisesRegex(ValueError, "named twice"):
            connection.parse_servers("a:1,b:2, a:1")


class IsLoopbackTest(unittest.TestCase):
    def test_loopback_addresses(self):
        for target in ("127.0.0.1:7070", "127.9.8.7:1", "localhost:7070", "[::1]:7070"):
            with self.subTest(target=target):
                self.assertTrue(connection.is_loopback(target))

    def test_anything_else_is_not(self):
        # A name is never resolved: only the address itself can say loopback.
        for target in ("10.0.0.1:7070", "[::2]:1", "localhost.example.com:1", "ckptd:7070",
                       "128.0.0.1:1", "999.0.0.1:1"):
            with self.subTest(target=target):
                self.assertFalse(connection.is_loopback(target))


class TempDirTestCase(unittest.TestCase):
    def setUp(self):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.dir = directory.name

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        return path

    def replace(self, path, content):
        """Writes a new version beside `path` and renames it over, as a rotation does."""
        self.write("next", content)
        os.replace(os.path.join(self.dir, "next"), path)


class ReadFileTest(TempDirTestCase):
    def test_reads_a_regular_file(self):
        self.assertEqual(connection.read_file("ca_file", self.write("ca.pem", "PEM")), b"PEM")

    def test_names_the_option_and_the_file(self):
        missing = os.path.join(self.dir, "missing.pem")
        big = self.write("big", b"x" * (connection.MAX_CREDENTIAL_FILE_BYTES + 1))
        for path, why in ((missing, "is not a regular file"), (self.dir, "is not a regular file"),
                          (big, "is larger than 1 MiB")):
            with self.subTest(path=path):
                with self.assertRaisesRegex(ValueError, "^key_file: " + re.escape(f"{path} {why}")):
                    connection.read_file("key_file", path)


class TokenSourceTest(TempDirTestCase):
    def test_no_file_no_token(self):
        self.assertEqual(connection.TokenSource(None).metadata(), ())

    def test_sends_the_file_s_token_without_its_line_end(self):
        source = connection.TokenSource(self.write("token", "s3cret\r\n"))
        self.assertEqual(source.metadata(), (("authorization", "Bearer s3cret"),))

    def test_refuses_a_file_without_a_valid_token(self):
        for content in ("", "\n", "two words", "caf\u00e9", "tab\tinside"):
            with self.subTest(content=content):
                path = self.write("token", content)
                with self.assertRaisesRegex(ValueError, "holds no valid token"):
                    connection.TokenSource(path)

    def test_refuses_a_missing_file(self):
        with self.assertRaisesRegex(ValueError, "token_file"):
            connection.TokenSource(os.path.join(self.dir, "missing"))

    def test_a_rotated_token_is_picked_up(self):
        path = self.write("token", "first")
        source = connection.TokenSource(path)
        self.replace(path, "second")
        self.assertEqual(source.metadata(), (("authorization", "Bearer second"),))

    def test_keeps_the_last_good_token_when_the_file_goes_bad(self):
        path = self.write("token", "good")
        source = connection.TokenSource(path)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.replace(path, "not valid")
            self.assertEqual(source.metadata(), (("authorization", "Bearer good"),))
            os.remove(path)
            self.assertEqual(source.metadata(), (("authorization", "Bearer good"),))
        self.assertIn("sending the last good one", stderr.getvalue())
        self.write("token", "better")
        self.assertEqual(source.metadata(), (("authorization", "Bearer better"),))


class ChannelsTest(TempDirTestCase):
    def test_a_certificate_needs_its_key(self):
        with self.assertRaisesRegex(ValueError, "go together"):
            connection.Channels(cert_file=self.write("cert.pem", "C"))
        with self.assertRaisesRegex(ValueError, "go together"):
            connection.Channels(key_file=self.write("key.pem", "K"))

    def test_a_dropped_channel_is_made_anew(self):
        # After a daemon went away the worker drops its channel, so that the next connect does
        # not wait out the old channel's own reconnect backoff.
        channels = connection.Channels()
        self.addCleanup(channels.close)
        first = channels.get("127.0.0.1:1")
        self.assertIs(channels.get("127.0.0.1:1"), first)
        channels.drop("127.0.0.1:1")
        channels.drop("127.0.0.1:2")  # never made: nothing to do
        self.assertIsNot(channels.get("127.0.0.1:1"), first)

    def test_a_server_name_needs_tls(self):
        with self.assertRaisesRegex(ValueError, "tls_server_name needs TLS"):
            connection.Channels(tls_server_name="ckptd.example")

    def test_an_unreadable_ca_file_is_named(self):
        with self.assertRaisesRegex(ValueError, "^ca_file: "):
            connection.Channels(ca_file=os.path.join(self.dir, "missing.pem"))

    def test_tls_with_a_ca_file_or_a_client_certificate(self):
        self.assertFalse(connection.Channels().tls)
        self.assertTrue(connection.Channels(ca_file=self.write("ca.pem", "CA")).tls)
        self.assertTrue(connection.Channels(cert_file=self.write("c.pem", "C"),
                                            key_file=self.write("k.pem", "K")).tls)

    def test_one_channel_per_target_until_closed(self):
        channels = connection.Channels()
        a = channels.get("127.0.0.1:1")
        self.assertIs(channels.get("127.0.0.1:1"), a)
        self.assertIsNot(channels.get("127.0.0.1:2"), a)
        channels.close()
        self.assertIsNot(channels.get("127.0.0.1:1"), a)
        channels.close()


if __name__ == "__main__":
    unittest.main()
