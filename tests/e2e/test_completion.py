"""`ckptctl completion bash|zsh|fish`: each script loads in its shell (zsh and fish when
installed) and completes what the CLI has: the commands of each group as `--help` lists them, a
command's flags with the global ones, a flag's fixed values (-o table|json), file names for a
file flag, and the shell names after `completion`. Needs no daemon."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import e2e_util as e2e

BUILD_DIR = None


def ctl():
    return os.path.join(BUILD_DIR, "client", "ckptctl")


def help_subcommands(*group):
    """The subcommand names `ckptctl [group] --help` lists."""
    text = subprocess.run([ctl(), *group, "--help"], capture_output=True, text=True,
                          timeout=30).stdout
    block = text.split("Subcommands:\n", 1)[1].split("\n\n", 1)[0] if "Subcommands:" in text else ""
    return [m.group(1) for m in re.finditer(r"^  (\S+)", block, re.M)]


class CompletionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ckptctl-completion-")
        cls.scripts = {}
        for shell in ("bash", "zsh", "fish"):
            r = subprocess.run([ctl(), "completion", shell], capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 0, r.stderr
            path = os.path.join(cls.tmp, f"ckptctl.{shell}")
            with open(path, "w") as f:
                f.write(r.stdout)
            cls.scripts[shell] = path
        with open(os.path.join(cls.tmp, "ca.pem"), "w") as f:
            f.write("x")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def bash(self, *words):
        """What bash completes for the command line `words` (the last one is being typed)."""
        line = " ".join("''" if w == "" else w for w in words)
        script = (f"source {self.scripts['bash']}\nCOMP_WORDS=({line})\n"
                  "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_ckptctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                           text=True, timeout=30, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return [w for w in r.stdout.splitlines() if w]

    def test_bash_completes_every_command_of_every_group(self):
        groups = help_subcommands()
        self.assertIn("pipeline", groups)
        self.assertIn("completion", groups)
        self.assertEqual(self.bash("ckptctl", ""), groups)
        for group in groups:
            self.assertEqual(self.bash("ckptctl", group, ""), help_subcommands(group)
                             if group != "completion" else ["bash", "zsh", "fish"], group)
        self.assertEqual(self.bash("ckptctl", "pip"), ["pipeline"])
        self.assertEqual(self.bash("ckptctl", "--server", "a:1", "pipeline", "cr"), ["create"])

    def test_a_script_that_cannot_be_written_is_an_error(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        with open("/dev/full", "w") as full:
            r = subprocess.run([ctl(), "completion", "bash"], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot write", r.stderr)

    def test_bash_completes_flags_their_values_and_files(self):
        create = self.bash("ckptctl", "pipeline", "create", "--")
        for flag in ("--job", "--pipeline", "--interval", "--server", "--output", "--ca-file"):
            self.assertIn(flag, create)
        self.assertEqual(len(create), len(set(create)), "a flag offered twice")
        self.assertEqual(self.bash("ckptctl", "-o", ""), ["table", "json"])
        self.assertEqual(self.bash("ckptctl", "pipeline", "list", "-o", "j"), ["json"])
        self.assertEqual(self.bash("ckptctl", "status", "--ca-file", "ca"), ["ca.pem"])
        # A flag's value is not taken for a command: "-o pipeline" is not the pipeline group.
        self.assertNotIn("create", self.bash("ckptctl", "-o", "pipeline", ""))

    def test_zsh_script_loads_and_completes(self):
        e2e.need_tool(self, shutil.which("zsh"), "zsh")
        script = f"""
compdef() {{ :; }}
compadd() {{ while [[ $1 != -- ]]; do shift; done; shift; print -r -- "values: $*"; }}
_describe() {{ print -r -- "commands: ${{(P)${{4}}}}"; }}
_files() {{ print files; }}
source {self.scripts['zsh']}
words=(ckptctl pipeline ''); CURRENT=3; _ckptctl
words=(ckptctl -o ''); CURRENT=3; _ckptctl
words=(ckptctl completion ''); CURRENT=3; _ckptctl
"""
        r = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "", "the script does not load cleanly")
        self.assertIn("commands: create:Create a pipeline", r.stdout)
        self.assertIn("values: table json", r.stdout)
        self.assertIn("values: bash zsh fish", r.stdout)

    def test_fish_script_loads_and_completes(self):
        e2e.need_tool(self, shutil.which("fish"), "fish")
        script = (f"source {self.scripts['fish']}; complete -C 'ckptctl pipeline '; "
                  "echo ---; complete -C 'ckptctl -o '")
        r = subprocess.run(["fish", "--no-config", "-c", script], capture_output=True, text=True,
                           timeout=30, env={**os.environ, "HOME": self.tmp})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "", "the script does not load cleanly")
        group, output = r.stdout.split("---\n")
        self.assertEqual(sorted(line.split("\t")[0] for line in group.splitlines()),
                         sorted(help_subcommands("pipeline")))
        self.assertEqual(sorted(line.split("\t")[0] for line in output.splitlines()),
                         ["json", "table"])


if __name__ == "__main__":
    e2e.main(globals())
