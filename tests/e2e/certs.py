"""Real X.509 certificates for the end-to-end tests, made with the `openssl` command line.

Standard library only, plus the `openssl` program (Debian 12: OpenSSL 3.0). Keys are ECDSA P-256,
unencrypted PKCS#8 PEM, mode 0600; every certificate is signed with SHA-256 by `openssl ca`
(which, unlike `openssl x509 -req`, takes explicit -startdate/-enddate, so expired and
not-yet-valid certificates need no faked clock).

    from certs import CertFactory
    certs = CertFactory(ws.dir)                     # files go straight into this directory
    srv = certs.server()                            # CN=server, DNS:localhost, IP:127.0.0.1
    ops = certs.client("ops", spiffe="spiffe://example.org/ops")
    bad = certs.client("old", cn="old", expired=True)
    alien = certs.client("alien", cn="ops", ca="other_ca")
    certs.revoke("ops")                             # and certs.crl_dir() for tls.crl_dir
    token, digest = certs.token()                   # auth: token_sha256: <digest>

Everything is made on demand and cached: asking twice for the same name returns the same
object (asking again with different arguments raises ValueError).

CertFactory(directory)
    Writes into `directory` (which must exist; the caller removes it): `<name>.crt` and
    `<name>.key` per certificate, `<ca>.crt`/`<ca>.key` per CA, `crl/` for crl_dir(), and the
    CAs' working files (openssl ca's index, serial, issued copies, CRLs) under `.ca/`.
    Names: letters, digits, '.', '_', '-'; a certificate and a CA cannot share a name.

.ca, .other_ca -> Credentials
    Two unrelated self-signed CAs ("ckptd-e2e ca", "ckptd-e2e other_ca", ten years). For a CA,
    .cert is its certificate, .key its key and .ca its own certificate again.
.authority(name) -> Credentials
    Any further CA by name (`ca` and `other_ca` are authority("ca") and authority("other_ca")).
.ca_bundle(name, *authorities) -> str
    Writes `<name>.crt`, the certificates of the given CAs concatenated (for a client_ca_file
    that trusts two CAs during a CA rotation); returns its path.

.server(name="server", dns=("localhost",), ip=("127.0.0.1",), ca="ca", days=30) -> Credentials
    A server certificate (CN=name, the given DNS and IP SANs, extendedKeyUsage serverAuth).
.client(name, cn=None, dns=None, uri=None, spiffe=None, ca="ca", days=30, expired=False,
        not_yet_valid=False, not_before=None, not_after=None) -> Credentials
    A client certificate (extendedKeyUsage clientAuth). Subject: O=ckptd-e2e, plus CN=cn when
    cn is given (cn=None means no CN at all: a certificate with no cn, dns, uri or spiffe
    carries no identity). dns and uri take a string or a list of them; spiffe is a SPIFFE id,
    written as a URI SAN ("spiffe://" is prepended when missing). Note that gRPC reports a
    SPIFFE id only when the certificate has exactly one URI SAN: spiffe together with uri
    yields a certificate with no SPIFFE id (useful to test the URI-SAN fallback).
    Validity: from one hour ago (clock skew) for `days` days; expired=True: from two days ago
    to one day ago; not_yet_valid=True: from one day ahead to two days ahead; not_before /
    not_after (datetime, naive ones are UTC) set either end explicitly.

.rotate_server(new_name, name="server", **server_args) -> Credentials
    Makes a new key and certificate (CN=new_name, SANs as server() unless given) and swaps them
    into the paths of server(name), which the daemon reads: both are first written in full to
    temporary files in the same directory, then renamed over the old files, KEY FIRST, THEN
    CERTIFICATE, back to back (microseconds apart). Each file is replaced atomically; only a
    reader whose whole read falls between the two renames sees the new key with the old
    certificate (and gRPC's file watcher would keep that pair until its next refresh). Both new
    files get a modification time at least one second later than the old ones, so gRPC's
    whole-second mtime check (taken before and after it reads the pair) sees the change. Returns
    server(name), whose .name stays `name`; the new certificate is also known as `new_name` for
    revoke().

.revoke(name) -> str
    Revokes the certificate issued under `name` (the latest one of that name) in its CA's
    database and rewrites that CA's CRL (also in crl/ once crl_dir() was called, as a new file
    with the next free suffix: a running daemon's TLS library reads each name once). Returns the
    CRL's PEM path. Each CRL's lastUpdate is a minute back but always at least one second after
    the previous CRL's of that CA: OpenSSL, holding two CRLs of one issuer (the one it read
    before and the new one), uses the one with the later lastUpdate, and with equal ones may
    keep the older. (Only a 61st CRL of one CA within a minute waits.)
.crl_dir() -> str
    The directory for tls.crl_dir / gRPC's crl_directory: the current CRL of every CA made
    so far (also of the ones made later), named `<issuer-hash>.r<n>` as OpenSSL's hashed
    directory lookup expects (`openssl crl -hash`), each written atomically. Every CA gets a CRL
    there, an empty one if nothing is revoked: gRPC enables X509_V_FLAG_CRL_CHECK_ALL and only
    ignores "unable to get CRL" (so a CA without a CRL would not be checked at all).
.crl(authority="ca") -> str
    The PEM path of a CA's current CRL (made if missing), for `openssl verify -CRLfile`.

.token() -> (token, sha256_hex)
    A fresh random bearer token and the hex SHA-256 of its UTF-8 bytes (what
    `printf %s "$TOKEN" | sha256sum` prints), for auth.principals[].token_sha256.
.token_file(token, name="token") -> str
    Writes `<name>.token` (mode 0600, no trailing newline) for --token-file; returns its path.

Credentials (frozen dataclass): .name, .cert, .key, .ca (paths; .ca is the certificate of the
    CA that signed .cert).

verify(cert, ca_file, crl_file=None, crl_dir=None, purpose=None) -> (ok, message)
    Runs `openssl verify` (with -crl_check_all when a CRL is given); message is its output,
    whose failures name the reason ("certificate has expired", "certificate revoked", ...).

One module, not split: the factory is one class over one openssl working directory per CA (its
index, serial and CRLs), and the tests import it whole; its length is the kinds of certificate it
makes and the self-check below.

Run `python3 certs.py` for a self-check: it makes every kind of certificate in a temp dir,
checks them with `openssl verify`, prints the timings and OK, and removes the dir.
"""
import dataclasses
import datetime
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time

OPENSSL = "openssl"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ORG = "ckptd-e2e"
_UTC = datetime.timezone.utc


class CertError(RuntimeError):
    """An openssl command failed; the message holds the command and its output."""


@dataclasses.dataclass(frozen=True)
class Credentials:
    name: str
    cert: str
    key: str
    ca: str


@dataclasses.dataclass
class _Issued:
    creds: Credentials
    authority: str
    copy: str       # openssl ca's own copy of the certificate (newcerts/<serial>.pem)
    args: tuple     # the arguments it was made with, to refuse a conflicting second request


def _utc(when):
    if when.tzinfo is None:
        return when.replace(tzinfo=_UTC)
    return when.astimezone(_UTC)


def _asn1_time(when):
    return _utc(when).strftime("%Y%m%d%H%M%SZ")


def _cnf_value(text):
    """`text` escaped for an OpenSSL config value ($ expands variables, # starts a comment)."""
    if any(ord(c) < 32 for c in text):
        raise ValueError(f"control character in {text!r}")
    return re.sub(r'([\\$#"\'])', r"\\\1", text)


def _subj(cn):
    """An -subj argument; '/' and '\\' in values are backslash-escaped."""
    esc = lambda v: v.replace("\\", "\\\\").replace("/", "\\/")
    return f"/O={_ORG}" + (f"/CN={esc(cn)}" if cn is not None else "")


def _list(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _write_private(path, data):
    """Writes `data` to `path`, created with mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.chmod(path, 0o600)


def _replace_atomically(path, data):
    tmp = f"{os.path.dirname(path)}/.tmp-{os.path.basename(path)}"
    with open(tmp, "w") as f:
        f.write(data)
    os.rename(tmp, path)


def verify(cert, ca_file, crl_file=None, crl_dir=None, purpose=None):
    """(ok, output) of `openssl verify` of `cert` against `ca_file` (see the module docstring)."""
    args = [OPENSSL, "verify", "-CAfile", ca_file]
    if crl_file:
        args += ["-CRLfile", crl_file]
    if crl_dir:
        args += ["-CApath", crl_dir]
    if crl_file or crl_dir:
        args.append("-crl_check_all")
    if purpose:
        args += ["-purpose", purpose]
    r = subprocess.run(args + [cert], capture_output=True, text=True,
                       env=dict(os.environ, LC_ALL="C"))
    return r.returncode == 0, (r.stdout + r.stderr).strip()


class CertFactory:
    """Makes and caches CAs, certificates, CRLs and tokens in one directory (see the module
    docstring)."""

    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self._db = os.path.join(self.dir, ".ca")
        os.makedirs(self._db, exist_ok=True)
        self._lock = threading.RLock()
        self._authorities = {}        # name -> Credentials
        self._issued = {}             # name -> _Issued (the latest certificate of that name)
        self._crl_updated = {}        # authority -> lastUpdate of its last CRL
        self._crl_dir = None
        self._crl_slots = {}          # authority -> ["<hash>.r<n>", ...] in the CRL directory
        self.openssl_runs = 0
        conf = os.path.join(self._db, "openssl.cnf")  # for commands without -config
        with open(conf, "w") as f:
            f.write("# empty: keeps the system openssl.cnf out of the tests\n")
        self._env = dict(os.environ, OPENSSL_CONF=conf, LC_ALL="C")

    # --- CAs -------------------------------------------------------------------------------

    @property
    def ca(self):
        return self.authority("ca")

    @property
    def other_ca(self):
        return self.authority("other_ca")

    def authority(self, name):
        with self._lock:
            if name in self._authorities:
                return self._authorities[name]
            self._check_name(name)
            if name in self._issued:
                raise ValueError(f"{name!r} is a certificate")
            db = os.path.join(self._db, name)
            os.makedirs(os.path.join(db, "issued"))
            open(os.path.join(db, "index.txt"), "w").close()
            for counter in ("serial", "crlnumber"):
                with open(os.path.join(db, counter), "w") as f:
                    f.write("1000\n")
            cert, key = self._path(name + ".crt"), self._path(name + ".key")
            cnf = os.path.join(db, "ca.cnf")
            with open(cnf, "w") as f:
                f.write(self._ca_config(db, cert, key))
            self._openssl("req", "-x509", "-config", cnf, "-extensions", "v3_ca",
                          "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc",
                          "-keyout", key, "-out", cert, "-days", "3650",
                          "-subj", _subj(f"{_ORG} {name}"))
            os.chmod(key, 0o600)
            creds = Credentials(name, cert, key, cert)
            self._authorities[name] = creds
            if self._crl_dir is not None:
                self._write_crl(name)
            return creds

    def ca_bundle(self, name, *authorities):
        with self._lock:
            self._check_name(name)
            if name in self._issued or name in self._authorities:
                raise ValueError(f"{name!r} is taken")
            pems = []
            for a in authorities:
                with open(self.authority(a).cert) as f:
                    pems.append(f.read())
            path = self._path(name + ".crt")
            _replace_atomically(path, "".join(pems))
            return path

    # --- certificates ----------------------------------------------------------------------

    def server(self, name="server", dns=("localhost",), ip=("127.0.0.1",), ca="ca", days=30):
        args = ("server", tuple(_list(dns)), tuple(_list(ip)), ca, days)
        with self._lock:
            known = self._cached(name, args)
            if known:
                return known
            cert, key = self._path(name + ".crt"), self._path(name + ".key")
            copy = self._issue(ca, name, cert, key, cn=name, dns=_list(dns), ip=_list(ip),
                               usage="serverAuth", start=self._now() - datetime.timedelta(hours=1),
                               end=self._now() + datetime.timedelta(days=days))
            return self._remember(name, ca, cert, key, copy, args)

    def client(self, name, cn=None, dns=None, uri=None, spiffe=None, ca="ca", days=30,
               expired=False, not_yet_valid=False, not_before=None, not_after=None):
        uris = _list(uri)
        if spiffe is not None:
            uris.append(spiffe if spiffe.startswith("spiffe://") else "spiffe://" + spiffe)
        if expired and not_yet_valid:
            raise ValueError("a certificate cannot be both expired and not yet valid")
        now = self._now()
        if expired:
            start, end = now - datetime.timedelta(days=2), now - datetime.timedelta(days=1)
        elif not_yet_valid:
            start, end = now + datetime.timedelta(days=1), now + datetime.timedelta(days=2)
        else:
            start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)
        start = _utc(not_before) if not_before is not None else start
        end = _utc(not_after) if not_after is not None else end
        args = ("client", cn, tuple(_list(dns)), tuple(uris), ca, days, expired, not_yet_valid,
                not_before, not_after)
        with self._lock:
            known = self._cached(name, args)
            if known:
                return known
            cert, key = self._path(name + ".crt"), self._path(name + ".key")
            copy = self._issue(ca, name, cert, key, cn=cn, dns=_list(dns), uri=uris,
                               usage="clientAuth", start=start, end=end)
            return self._remember(name, ca, cert, key, copy, args)

    def rotate_server(self, new_name, name="server", **server_args):
        with self._lock:
            self._check_name(new_name)
            if new_name in self._issued and new_name != name:
                raise ValueError(f"{new_name!r} is already taken")
            current = self._issued.get(name)
            if current is None:
                current = self._issued[self.server(name, **server_args).name]
            _, dns, ip, ca, days = current.args
            dns = _list(server_args.get("dns", dns))
            ip = _list(server_args.get("ip", ip))
            ca = server_args.get("ca", ca)
            days = server_args.get("days", days)
            old = current.creds
            tmp_cert = self._path(f".new-{name}.crt")
            tmp_key = self._path(f".new-{name}.key")
            copy = self._issue(ca, new_name, tmp_cert, tmp_key, cn=new_name, dns=dns, ip=ip,
                               usage="serverAuth",
                               start=self._now() - datetime.timedelta(hours=1),
                               end=self._now() + datetime.timedelta(days=days))
            for path in (tmp_key, tmp_cert):
                with open(path, "rb") as f:
                    os.fsync(f.fileno())
            # gRPC's file watcher compares whole-second mtimes before and after reading.
            stamp = max(time.time(), os.stat(old.key).st_mtime + 1, os.stat(old.cert).st_mtime + 1)
            os.utime(tmp_key, (stamp, stamp))
            os.utime(tmp_cert, (stamp, stamp))
            os.rename(tmp_key, old.key)    # key first, then the certificate, back to back
            os.rename(tmp_cert, old.cert)
            creds = Credentials(name, old.cert, old.key, self.authority(ca).cert)
            args = ("server", tuple(dns), tuple(ip), ca, days)
            self._issued[name] = _Issued(creds, ca, copy, args)
            if new_name != name:
                self._issued[new_name] = _Issued(
                    Credentials(new_name, old.cert, old.key, creds.ca), ca, copy, args)
            return creds

    # --- revocation ------------------------------------------------------------------------

    def revoke(self, name):
        with self._lock:
            issued = self._issued.get(name)
            if issued is None:
                raise KeyError(f"no certificate named {name!r}")
            cnf = os.path.join(self._db, issued.authority, "ca.cnf")
            self._openssl("ca", "-config", cnf, "-revoke", issued.copy)
            return self._write_crl(issued.authority)

    def crl(self, authority="ca"):
        with self._lock:
            self.authority(authority)
            path = os.path.join(self._db, authority, "crl.pem")
            if not os.path.exists(path):
                self._write_crl(authority)
            return path

    def crl_dir(self):
        with self._lock:
            if self._crl_dir is None:
                self._crl_dir = self._path("crl")
                os.makedirs(self._crl_dir, exist_ok=True)
                for name in self._authorities:
                    self._write_crl(name)
            return self._crl_dir

    # --- tokens ----------------------------------------------------------------------------

    @staticmethod
    def token():
        token = secrets.token_urlsafe(32)
        return token, hashlib.sha256(token.encode()).hexdigest()

    def token_file(self, token, name="token"):
        self._check_name(name)
        path = self._path(name + ".token")
        _write_private(path, token)
        return path

    # --- internals -------------------------------------------------------------------------

    @staticmethod
    def _now():
        return datetime.datetime.now(_UTC).replace(microsecond=0)

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _check_name(self, name):
        if not _NAME.match(name) or name == "crl":
            raise ValueError(f"bad name {name!r}: letters, digits, '.', '_', '-' (not 'crl')")

    def _cached(self, name, args):
        self._check_name(name)
        if name in self._authorities:
            raise ValueError(f"{name!r} is a CA")
        known = self._issued.get(name)
        if known is None:
            return None
        if known.args != args:
            raise ValueError(f"{name!r} was made with other arguments: {known.args}")
        return known.creds

    def _remember(self, name, ca, cert, key, copy, args):
        creds = Credentials(name, cert, key, self.authority(ca).cert)
        self._issued[name] = _Issued(creds, ca, copy, args)
        return creds

    def _issue(self, ca, name, cert, key, cn, usage, start, end, dns=(), ip=(), uri=()):
        """Makes a key and a certificate signed by `ca`; returns openssl ca's copy of it."""
        self.authority(ca)
        db = os.path.join(self._db, ca)
        csr = os.path.join(db, "request.csr")
        ext = os.path.join(db, "request.ext")
        sans = ([f"DNS.{i} = {_cnf_value(v)}" for i, v in enumerate(dns, 1)] +
                [f"IP.{i} = {_cnf_value(v)}" for i, v in enumerate(ip, 1)] +
                [f"URI.{i} = {_cnf_value(v)}" for i, v in enumerate(uri, 1)])
        with open(ext, "w") as f:
            f.write("[ext]\n"
                    "basicConstraints = critical,CA:FALSE\n"
                    "keyUsage = critical,digitalSignature\n"
                    f"extendedKeyUsage = {usage}\n"
                    "subjectKeyIdentifier = hash\n"
                    "authorityKeyIdentifier = keyid\n")
            if sans:
                f.write("subjectAltName = @san\n[san]\n" + "".join(s + "\n" for s in sans))
        cnf = os.path.join(db, "ca.cnf")
        self._openssl("req", "-new", "-config", cnf, "-newkey", "ec",
                      "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc",
                      "-keyout", key, "-out", csr, "-subj", _subj(cn))
        os.chmod(key, 0o600)
        with open(os.path.join(db, "serial")) as f:
            serial = f.read().strip()
        self._openssl("ca", "-batch", "-config", cnf, "-extfile", ext, "-extensions", "ext",
                      "-preserveDN", "-notext", "-startdate", _asn1_time(start),
                      "-enddate", _asn1_time(end), "-in", csr, "-out", cert)
        return os.path.join(db, "issued", serial + ".pem")

    def _write_crl(self, authority):
        db = os.path.join(self._db, authority)
        # lastUpdate: a minute back, and always after the previous CRL's (see revoke()).
        update = self._now() - datetime.timedelta(seconds=60)
        last = self._crl_updated.get(authority)
        if last is not None and update <= last:
            update = last + datetime.timedelta(seconds=1)
            while update > self._now():  # over 60 CRLs of one CA in a minute
                time.sleep(0.1)
        self._crl_updated[authority] = update
        crl = os.path.join(db, "crl.pem")
        tmp = os.path.join(db, "crl.pem.new")
        self._openssl("ca", "-config", os.path.join(db, "ca.cnf"), "-gencrl", "-out", tmp,
                      "-crl_lastupdate", _asn1_time(update),
                      "-crl_nextupdate", _asn1_time(self._now() + datetime.timedelta(days=30)))
        os.rename(tmp, crl)
        if self._crl_dir is not None:
            # Every new CRL of a CA takes the next free suffix, the older files stay: OpenSSL's
            # hashed directory reads a CA's CRL files by ascending suffix, never reads one again,
            # and uses the newest (lastUpdate) of those it holds. So a CRL rewritten in place
            # would not be seen by a running daemon; one under a new name is.
            digest = self._openssl("crl", "-hash", "-noout", "-in", crl).strip()
            taken = {slot for slots in self._crl_slots.values() for slot in slots}
            n = 0
            while f"{digest}.r{n}" in taken:  # earlier CRLs, or two CAs whose names hash alike
                n += 1
            slot = f"{digest}.r{n}"
            self._crl_slots.setdefault(authority, []).append(slot)
            with open(crl) as f:
                _replace_atomically(os.path.join(self._crl_dir, slot), f.read())
        return crl

    def _ca_config(self, db, cert, key):
        v = _cnf_value
        return f"""# openssl ca configuration of one test CA (written by certs.py)
[ca]
default_ca = this_ca
[this_ca]
database = {v(os.path.join(db, "index.txt"))}
new_certs_dir = {v(os.path.join(db, "issued"))}
serial = {v(os.path.join(db, "serial"))}
crlnumber = {v(os.path.join(db, "crlnumber"))}
certificate = {v(cert)}
private_key = {v(key)}
default_md = sha256
default_crl_days = 30
policy = any_subject
unique_subject = no
crl_extensions = crl_ext
[any_subject]
organizationName = optional
commonName = optional
[crl_ext]
authorityKeyIdentifier = keyid:always
[req]
distinguished_name = empty_dn
prompt = no
[empty_dn]
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
"""

    def _openssl(self, *args):
        self.openssl_runs += 1
        r = subprocess.run([OPENSSL, *args], capture_output=True, text=True, env=self._env,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise CertError(f"openssl {' '.join(args)} exited {r.returncode}:\n"
                            f"{r.stdout}{r.stderr}")
        return r.stdout


# --- self-check --------------------------------------------------------------------------------

def _inspect(cert):
    """Subject, SANs and validity of a certificate, as `openssl x509` prints them."""
    r = subprocess.run([OPENSSL, "x509", "-in", cert, "-noout", "-subject", "-nameopt", "RFC2253",
                        "-ext", "subjectAltName"], capture_output=True, text=True, check=True)
    return r.stdout


def _public_key(args):
    return subprocess.run([OPENSSL, *args], capture_output=True, text=True, check=True).stdout


def _self_check():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="ckptd-certs-") as d:
        started = time.monotonic()
        f = CertFactory(d)
        srv = f.server()
        ids = {
            "w-spiffe": f.client("w-spiffe", spiffe="example.org/etl"),
            "w-uri": f.client("w-uri", uri="urn:ckptd:ops", cn="ignored-cn"),
            "w-dns": f.client("w-dns", dns=["etl.example.org", "etl2.example.org"]),
            "w-cn": f.client("w-cn", cn="grafana"),
            "w-none": f.client("w-none"),
        }
        good = f.client("good", cn="good")
        old = f.client("old", cn="old", expired=True)
        future = f.client("future", cn="future", not_yet_valid=True)
        alien = f.client("alien", cn="good", ca="other_ca")
        doomed = f.client("doomed", cn="doomed")
        crl_dir = f.crl_dir()
        crl = f.revoke("doomed")
        token, digest = f.token()
        token_path = f.token_file(token)
        made = time.monotonic() - started
        runs, issued, cas = f.openssl_runs, len(f._issued), len(f._authorities)

        # The cache: the same object back; a conflicting request refused.
        expect(f.client("good", cn="good") is good, "client() is cached")
        try:
            f.client("good", cn="other")
            failures.append("a conflicting client() was accepted")
        except ValueError:
            pass

        checks_started = time.monotonic()
        for c in [f.ca, f.other_ca, srv, good, old, future, alien, doomed, *ids.values()]:
            expect(os.stat(c.key).st_mode & 0o777 == 0o600, f"{c.name}: key mode 0600")
            expect(_public_key(["x509", "-in", c.cert, "-noout", "-pubkey"]) ==
                   _public_key(["pkey", "-in", c.key, "-pubout"]), f"{c.name}: key matches")
        expect("CN=server" in _inspect(srv.cert) and "DNS:localhost" in _inspect(srv.cert) and
               "IP Address:127.0.0.1" in _inspect(srv.cert), "server subject and SANs")
        expect("URI:spiffe://example.org/etl" in _inspect(ids["w-spiffe"].cert), "SPIFFE SAN")
        expect("URI:urn:ckptd:ops" in _inspect(ids["w-uri"].cert), "URI SAN")
        expect("DNS:etl.example.org, DNS:etl2.example.org" in _inspect(ids["w-dns"].cert),
               "DNS SANs")
        expect("subject=CN=grafana,O=ckptd-e2e" in _inspect(ids["w-cn"].cert), "CN")
        none = _inspect(ids["w-none"].cert)
        expect("CN=" not in none and "Alternative" not in none, "no identity at all")

        def verified(c, ca=None, **kw):
            return verify(c.cert, ca or f.ca.cert, **kw)

        ok, out = verified(srv, purpose="sslserver")
        expect(ok, f"server verifies: {out}")
        for c in [good, doomed, *ids.values()]:
            ok, out = verified(c, purpose="sslclient")
            expect(ok, f"{c.name} verifies: {out}")
        for c, reason in [(old, "certificate has expired"),
                          (future, "certificate is not yet valid"),
                          (alien, "unable to get local issuer certificate")]:
            ok, out = verified(c, purpose="sslclient")
            expect(not ok and reason in out, f"{c.name} fails with {reason!r}: {out}")
        ok, out = verified(alien, ca=f.other_ca.cert, purpose="sslclient")
        expect(ok, f"alien verifies against other_ca: {out}")
        for kw in [{"crl_file": crl}, {"crl_dir": crl_dir}]:
            ok, out = verified(doomed, **kw)
            expect(not ok and "certificate revoked" in out, f"revoked fails ({kw}): {out}")
            ok, out = verified(good, **kw)
            expect(ok, f"unrevoked passes the CRL check ({kw}): {out}")
        hashed = sorted(os.listdir(crl_dir))
        ca_hash = f._openssl("x509", "-hash", "-noout", "-in", f.ca.cert).strip()
        expect(all(re.fullmatch(r"[0-9a-f]{8}\.r[0-9]+", h) for h in hashed) and
               len({h.split(".")[0] for h in hashed}) == 2,
               f"hashed CRL files of two CAs: {hashed}")
        # The revocation came after crl_dir(): a new suffix, the first CRL kept beside it.
        expect(f"{ca_hash}.r0" in hashed and f"{ca_hash}.r1" in hashed,
               f"each new CRL of a CA under the next suffix: {hashed}")
        expect(f._openssl("crl", "-hash", "-noout", "-in", crl).strip() == ca_hash,
               "the CRL's name is its issuer's hash")

        # Rotation: same paths, a new matching pair, later mtimes, still verifies.
        before = (os.stat(srv.key).st_mtime, os.stat(srv.cert).st_mtime, _inspect(srv.cert))
        rotated = f.rotate_server("server-2")
        expect((rotated.cert, rotated.key) == (srv.cert, srv.key), "rotation keeps the paths")
        expect("CN=server-2" in _inspect(srv.cert) and "DNS:localhost" in _inspect(srv.cert),
               "rotated certificate")
        expect(_public_key(["x509", "-in", srv.cert, "-noout", "-pubkey"]) ==
               _public_key(["pkey", "-in", srv.key, "-pubout"]), "rotated key matches")
        expect(os.stat(srv.key).st_mtime >= before[0] + 1 and
               os.stat(srv.cert).st_mtime >= before[1] + 1, "rotation moves the mtimes on")
        expect(os.stat(srv.key).st_mode & 0o777 == 0o600, "rotated key mode 0600")
        ok, out = verified(srv, purpose="sslserver")
        expect(ok, f"rotated server verifies: {out}")
        expect(not [n for n in os.listdir(d) if n.startswith(".new-")], "no temp files left")

        # CA bundle, tokens.
        bundle = f.ca_bundle("both-cas", "ca", "other_ca")
        ok, out = verify(alien.cert, bundle)
        expect(ok, f"the bundle trusts other_ca: {out}")
        expect(re.fullmatch(r"[0-9a-f]{64}", digest), "token digest is 64 hex")
        with open(token_path) as t:
            expect(t.read() == token, "token file holds the token, no newline")
        expect(os.stat(token_path).st_mode & 0o777 == 0o600, "token file mode 0600")
        if shutil.which("sha256sum"):
            out = subprocess.run(["sha256sum"], input=token, capture_output=True, text=True).stdout
            expect(out.split()[0] == digest, "sha256sum agrees with token()")
        checked = time.monotonic() - checks_started

    expect(not os.path.exists(d), "temp dir removed")
    print(f"made {cas} CAs, {issued} certificates and their CRLs with {runs} openssl runs in "
          f"{made:.2f}s; checks in {checked:.2f}s")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(_self_check())
