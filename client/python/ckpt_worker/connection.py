"""How a worker reaches the daemon: the server list, TLS, the bearer token (docs/SECURITY.md)."""
import ipaddress
import os
import sys

import grpc

# A wide pipeline's welcome (its restore point) can pass gRPC's 4 MiB default.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_CREDENTIAL_FILE_BYTES = 1024 * 1024


def _is_port(text):
    """ASCII digits of 1..65535 (str.isdigit alone also takes other scripts' digits)."""
    return (0 < len(text) <= 5 and text.isascii() and text.isdigit()
            and 1 <= int(text) <= 65535)


def parse_servers(server):
    """"host:port" or "host:port,host:port" (the daemons of an HA group) -> a list."""
    servers = [s.strip() for s in server.split(",")]
    for s in servers:
        host, sep, port = s.rpartition(":")
        if not s or not sep or not host or not _is_port(port):
            raise ValueError(f"server address {s!r} is not HOST:PORT (in {server!r})")
    if len(set(servers)) != len(servers):
        raise ValueError(f"a server address is named twice in {server!r}")
    return servers


def is_loopback(target):
    host = target.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_file(option, path):
    """The bytes of a credential file, or ValueError naming the option and the file."""
    try:
        if not os.path.isfile(path):
            raise ValueError(f"{option}: {path} is not a regular file")
        if os.path.getsize(path) > MAX_CREDENTIAL_FILE_BYTES:
            raise ValueError(f"{option}: {path} is larger than 1 MiB")
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{option}: cannot read {path}: {e.strerror}") from None


class TokenSource:
    """The bearer token, re-read when its file changed (replace it by a rename)."""

    def __init__(self, path):
        self.path = path
        self.token = None
        self.stamp = None
        if path:
            self.refresh()
            if self.token is None:
                raise ValueError(f"token_file: {path} holds no valid token")

    def refresh(self):
        if not self.path:
            return
        try:
            st = os.stat(self.path)
        except OSError as e:
            if self.token is None:
                raise ValueError(f"token_file: cannot read {self.path}: {e.strerror}") from None
            return  # keep the last good one
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self.stamp:
            return
        self.stamp = stamp  # one warning per change of the file, not one per connect
        try:
            token = read_file("token_file", self.path).decode(errors="replace").rstrip("\r\n\t ")
        except ValueError as e:
            if self.token is None:
                raise  # at construction: the file's own error
            token, why = None, str(e)
        else:
            why = f"token_file: {self.path} holds no valid token"
        if token and all(33 <= ord(c) < 127 for c in token):
            self.token = token
        elif self.token is not None:
            print(f"ckpt_worker: {why}; sending the last good one", file=sys.stderr)

    def metadata(self):
        self.refresh()
        return (("authorization", "Bearer " + self.token),) if self.token else ()


class Channels:
    """One gRPC channel per daemon address, made on first use."""

    def __init__(self, ca_file=None, cert_file=None, key_file=None, tls_server_name=None):
        if bool(cert_file) != bool(key_file):
            raise ValueError("cert_file and key_file go together")
        self._arguments = (ca_file, cert_file, key_file, tls_server_name)
        self.tls = bool(ca_file or cert_file or key_file)
        if tls_server_name and not self.tls:
            raise ValueError("tls_server_name needs TLS (ca_file, or cert_file and key_file)")
        self.credentials = None
        if self.tls:
            self.credentials = grpc.ssl_channel_credentials(
                root_certificates=read_file("ca_file", ca_file) if ca_file else None,
                private_key=read_file("key_file", key_file) if key_file else None,
                certificate_chain=read_file("cert_file", cert_file) if cert_file else None)
        self.options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
        if tls_server_name:
            self.options.append(("grpc.ssl_target_name_override", tls_server_name))
        self.channels = {}

    def identity(self):
        """What the channels' credentials come from (for sharing a Session call)."""
        return self._arguments

    def copy(self):
        """Channels with the same credentials, none open yet."""
        return Channels(*self._arguments)

    def get(self, target):
        channel = self.channels.get(target)
        if channel is None:
            if self.tls:
                channel = grpc.secure_channel(target, self.credentials, options=self.options)
            else:
                channel = grpc.insecure_channel(target, options=self.options)
            self.channels[target] = channel
        return channel

    def drop(self, target):
        """Forgets the channel to `target`: the next get() makes a new one. After a daemon went
        away a cached channel keeps failing with its last connect error while its own reconnect
        backoff runs (seconds), although the daemon may be back in a fraction of one."""
        channel = self.channels.pop(target, None)
        if channel is not None:
            channel.close()

    def close(self):
        for channel in self.channels.values():
            channel.close()
        self.channels.clear()
