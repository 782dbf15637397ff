"""The Debian packages, installed into this machine for real: made with `scripts/package.sh
--no-build` from the tree under test (which it must not rebuild), installed with `apt-get install
./ckptd_*.deb ./libckpt-dev_*.deb`, then checked: each holds its own files and copyright; the service
user exists, `ckptd --check-config /etc/ckptd/ckptd.yaml` passes, `systemd-analyze verify` passes
on the installed unit, the installed daemon runs as that user on /var/lib/ckptd, and the
package removes cleanly again. Everything it installed or created is removed at the end.

Needs root and apt-get; skipped otherwise, and skipped if a ckptd package is already installed
(the test never touches an operator's installation)."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

import e2e_util as e2e

BUILD_DIR = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def skip_reason():
    if os.geteuid() != 0:
        return "needs root to install a package"
    for tool in ("apt-get", "dpkg-deb", "cpack", "systemd-analyze"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    for package in ("ckptd", "libckpt-dev"):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True,
                           text=True)
        if r.stdout.strip():
            return f"a {package} package is (or was) installed here; not touching it"
    if os.path.exists("/var/lib/ckptd"):
        return "/var/lib/ckptd exists here (someone's checkpoint history); not touching it"
    if subprocess.run(["id", "ckptd"], capture_output=True).returncode == 0:
        return "a user ckptd exists here; not touching it"
    return None


SKIP = skip_reason()


def run(*argv, **kw):
    kw.setdefault("timeout", 600)
    return subprocess.run(list(argv), capture_output=True, text=True, **kw)


@unittest.skipIf(SKIP, SKIP or "")
class PackageTest(unittest.TestCase):
    def setUp(self):
        # What is packaged is a plain build: a sanitizer tree builds no SDK library to package,
        # and nobody ships its binaries.
        if e2e.is_sanitized_build(os.path.join(BUILD_DIR, "server", "ckptd")):
            self.skipTest("a sanitizer build is not packaged")
        self.out = tempfile.mkdtemp(prefix="ckptd-pkg-")
        self.installed = False
        self.daemon = None

    def tearDown(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        if self.installed:
            run("apt-get", "purge", "-y", "-qq", "ckptd", "libckpt-dev", env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        # Purge keeps history and the user by design; this test's own are removed here.
        shutil.rmtree("/var/lib/ckptd", ignore_errors=True)
        run("deluser", "--system", "--quiet", "ckptd")
        run("delgroup", "--system", "--quiet", "ckptd")
        shutil.rmtree(self.out, ignore_errors=True)

    def test_install_check_config_verify_run_and_remove(self):
        ckptd_binary = os.path.join(BUILD_DIR, "server", "ckptd")
        built_at = os.stat(ckptd_binary).st_mtime_ns
        built = run(os.path.join(ROOT, "scripts", "package.sh"), "--no-build", BUILD_DIR, self.out)
        self.assertEqual(built.returncode, 0, built.stdout + built.stderr)
        self.assertEqual(os.stat(ckptd_binary).st_mtime_ns, built_at, "--no-build rebuilt the tree")
        debs = built.stdout.strip().splitlines()[-2:]
        self.assertEqual([os.path.basename(d).split("_")[0] for d in debs], ["ckptd", "libckpt-dev"],
                         built.stdout)
        self.assertTrue(all(d.endswith(".deb") for d in debs), debs)

        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        inst = run("apt-get", "install", "-y", "-qq", "--no-install-recommends", *debs, env=env)
        self.installed = inst.returncode == 0
        self.assertEqual(inst.returncode, 0, inst.stdout + inst.stderr)
        print(f"\ninstalled {' and '.join(map(os.path.basename, debs))}", flush=True)

        owner = {}
        for package in ("ckptd", "libckpt-dev"):
            for path in run("dpkg-query", "-L", package).stdout.split():
                owner[path] = package
        for path, package in (("/usr/bin/ckptd", "ckptd"), ("/usr/share/doc/ckptd/copyright", "ckptd"),
                              ("/usr/include/ckpt/worker.h", "libckpt-dev"),
                              ("/usr/share/ckpt/proto/ckpt/v1/worker.proto", "libckpt-dev"),
                              ("/usr/share/doc/libckpt-dev/copyright", "libckpt-dev")):
            self.assertEqual(owner.get(path), package, path)
        self.assertTrue(any(p.endswith("/libckpt.so") for p, k in owner.items() if k == "libckpt-dev"))
        self.assertTrue(any(p.endswith("/cmake/ckpt/ckptConfig.cmake") for p in owner))
        pc = run("pkg-config", "--modversion", "ckpt")
        self.assertEqual(pc.returncode, 0, pc.stderr)
        self.build_a_program_on_the_installed_sdk()

        self.assertEqual(run("id", "ckptd").returncode, 0, "the package creates the service user")
        for path in ("/usr/bin/ckptd", "/usr/bin/ckptctl", "/usr/bin/ckpt-worker-sim",
                     "/usr/lib/systemd/system/ckptd.service", "/usr/share/man/man8/ckptd.8.gz"):
            self.assertTrue(os.path.exists(path), path)
        conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "ckptd").stdout
        self.assertIn("/etc/ckptd/ckptd.yaml", conffiles, "operator edits must survive upgrades")

        check = run("/usr/bin/ckptd", "--check-config", "/etc/ckptd/ckptd.yaml")
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        print("ckptd --check-config /etc/ckptd/ckptd.yaml: " + (check.stdout + check.stderr).strip())
        with open("/etc/ckptd/ckptd.yaml") as f:
            self.assertIn("\ndata_dir: /var/lib/ckptd\n", f.read())

        verify = run("systemd-analyze", "verify", "/usr/lib/systemd/system/ckptd.service")
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertEqual((verify.stdout + verify.stderr).strip(), "",
                         "systemd-analyze verify warns about the unit")
        print("systemd-analyze verify ckptd.service: exit 0, no output")

        self.run_installed_daemon_as_its_user()

        removed = run("apt-get", "remove", "-y", "-qq", "ckptd", "libckpt-dev", env=env)
        self.assertEqual(removed.returncode, 0, removed.stdout + removed.stderr)
        self.assertFalse(os.path.exists("/usr/bin/ckptd"))
        self.assertTrue(os.path.exists("/var/lib/ckptd/ckptd.db"),
                        "removing the package keeps the checkpoint history")

    def build_a_program_on_the_installed_sdk(self):
        """tests/package_consumer against /usr, where the package put the SDK (multiarch
        libdir): find_package finds it with no prefix given, and the program links libckpt.so."""
        build = os.path.join(self.out, "consumer")
        conf = run("cmake", "-S", os.path.join(ROOT, "tests", "package_consumer"), "-B", build,
                   "-G", "Ninja")
        self.assertEqual(conf.returncode, 0, conf.stdout + conf.stderr)
        made = run("cmake", "--build", build)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        ldd = [line for line in run("ldd", os.path.join(build, "consumer_shared")).stdout.splitlines()
               if "libckpt" in line]
        # /lib is /usr/lib on a merged-/usr system, as ld.so may say.
        self.assertRegex("".join(ldd), r"libckpt\.so\.[0-9.]+ => (/usr)?/lib/")
        print("tests/package_consumer built on the installed libckpt-dev", flush=True)

    def run_installed_daemon_as_its_user(self):
        """The packaged config with free ports (others may be taken here), run as `ckptd`."""
        port, metrics_port = e2e.free_port(), e2e.free_port()
        with open("/etc/ckptd/ckptd.yaml") as f:
            text = f.read()
        text = text.replace("\nlisten: 127.0.0.1:7070\n", f"\nlisten: 127.0.0.1:{port}\n")
        text = text.replace("\nmetrics_listen: 127.0.0.1:9464\n",
                            f"\nmetrics_listen: 127.0.0.1:{metrics_port}\n")
        config = os.path.join(self.out, "ckptd.yaml")
        with open(config, "w") as f:
            f.write(text)
        os.chmod(self.out, 0o755)
        os.chmod(config, 0o644)
        log_path = os.path.join(self.out, "ckptd.log")
        with open(log_path, "wb") as log:  # the child keeps its own descriptor
            self.daemon = subprocess.Popen(["setpriv", "--reuid=ckptd", "--regid=ckptd",
                                            "--init-groups", "/usr/bin/ckptd", "--config", config],
                                           stdout=log, stderr=subprocess.STDOUT)

        def log_text():
            with open(log_path, errors="replace") as f:
                return f.read()

        def listening():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0
        e2e.wait_until(lambda: listening() or self.daemon.poll() is not None, 30,
                       "the installed ckptd to listen")
        self.assertIsNone(self.daemon.poll(), log_text())
        self.assertEqual(e2e.stop(self.daemon, signal.SIGTERM), 0, log_text())
        st = os.stat("/var/lib/ckptd/ckptd.db")
        self.assertEqual(run("id", "-u", "ckptd").stdout.strip(), str(st.st_uid),
                         "the store belongs to the service user")


if __name__ == "__main__":
    e2e.main(globals())
