"""The C++ SDK as another project gets it: `cmake --install` of the build tree into a temp prefix
(every file lands under that prefix, the config and the unit naming it), then a project outside
the tree (tests/package_consumer) finds it with find_package(ckpt CONFIG), builds one program on
ckpt::sdk (libckpt.so) and one on ckpt::sdk_static (libckpt.a), and a third is compiled with
nothing but `pkg-config --cflags --libs ckpt`. Each checkpoints against a real daemon.
"""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import e2e_util as e2e

BUILD_DIR = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JOB = "outside"


def run(argv, **kw):
    kw.setdefault("timeout", 600)
    return subprocess.run(argv, capture_output=True, text=True, **kw)


class SdkInstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ckpt-sdk-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.install = run(["cmake", "--install", BUILD_DIR, "--prefix", cls.prefix])
        cls.ws = e2e.Workspace(BUILD_DIR)
        cls.daemon = cls.ws.start_daemon(cls.ws.write_config(
            e2e.declared_pipelines(JOB, 3, interval_ms=200, timeout_ms=5000)))

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)

    def libdir(self):
        found = glob.glob(os.path.join(self.prefix, "lib*", "**", "libckpt.so"), recursive=True)
        self.assertEqual(len(found), 1, found)
        return os.path.dirname(found[0])

    def checkpoint_with(self, program, pipeline, env=None):
        r = run([program, f"127.0.0.1:{self.ws.port}", JOB, pipeline], timeout=60,
                env={**os.environ, **(env or {})})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + self.ws.read_log("ckptd.log")[-3000:])
        self.assertRegex(r.stdout, r"^completed checkpoint [1-9]\d*\n$")
        print(f"{os.path.basename(program)} ({pipeline}): {r.stdout.strip()}", flush=True)

    def test_every_installed_file_is_under_the_prefix(self):
        with open(os.path.join(BUILD_DIR, "install_manifest.txt")) as f:
            installed = f.read().split()
        outside = [p for p in installed if not p.startswith(self.prefix + os.sep)]
        self.assertEqual(outside, [])
        for rel in ("bin/ckptd", "etc/ckptd/ckptd.yaml", "lib/systemd/system/ckptd.service",
                    "include/ckpt/worker.h", "include/ckpt/v1/worker.pb.h",
                    "share/ckpt/proto/ckpt/v1/worker.proto", "share/doc/libckpt-dev/copyright"):
            self.assertTrue(os.path.exists(os.path.join(self.prefix, rel)), rel)
        with open(os.path.join(self.prefix, "lib/systemd/system/ckptd.service")) as f:
            unit = f.read()
        self.assertIn(f"ExecStart={self.prefix}/bin/ckptd --config {self.prefix}/etc/ckptd/ckptd.yaml",
                      unit)

    def test_an_outside_cmake_project_builds_on_the_package_and_checkpoints(self):
        build = os.path.join(self.tmp, "consumer")
        conf = run(["cmake", "-S", os.path.join(ROOT, "tests", "package_consumer"), "-B", build,
                    "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={self.prefix}"])
        self.assertEqual(conf.returncode, 0, conf.stdout + conf.stderr)
        made = run(["cmake", "--build", build])
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        # The shared program finds libckpt.so through the RPATH CMake gave it.
        self.checkpoint_with(os.path.join(build, "consumer_shared"), "p0")
        self.checkpoint_with(os.path.join(build, "consumer_static"), "p1")
        ldd = run(["ldd", os.path.join(build, "consumer_static")]).stdout
        self.assertNotIn("libckpt", ldd)

    def test_a_program_built_with_pkg_config_alone_checkpoints(self):
        env = {**os.environ, "PKG_CONFIG_PATH": os.path.join(self.libdir(), "pkgconfig")}
        flags = run(["pkg-config", "--cflags", "--libs", "ckpt"], env=env)
        self.assertEqual(flags.returncode, 0, flags.stderr)
        self.assertIn(self.prefix, os.path.realpath(flags.stdout.split("-I", 1)[1].split()[0]))
        program = os.path.join(self.tmp, "consumer_pkgconfig")
        cxx = os.environ.get("CXX", "c++")
        made = run([cxx, "-std=c++20", os.path.join(ROOT, "tests", "package_consumer", "main.cc"),
                    "-o", program, *flags.stdout.split()])
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        self.checkpoint_with(program, "p2", env={"LD_LIBRARY_PATH": self.libdir()})


if __name__ == "__main__":
    e2e.main(globals())
