"""The man pages in docs/man against the programs they describe: every page renders without a
groff warning and has an EXAMPLES section; every subcommand and long option that ckptctl, ckptd
and ckpt-worker-sim print in --help is on its page; every key of config/ckptd.yaml (commented
examples included) and every key the config parser accepts is in ckptd.yaml.5. Runs the binaries
with --help only: no daemon is started."""
import glob
import os
import re
import shutil
import subprocess
import unittest

import e2e_util as e2e

BUILD_DIR = None
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAN_DIR = os.path.join(SOURCE_DIR, "docs", "man")

# The ckptctl commands that have a page of their own; any other command (completion, say) is
# described in ckptctl.1.
CKPTCTL_GROUP_PAGES = ("status", "pipeline", "checkpoint", "group", "savepoint")

# "  -o,--output TEXT ..." or "  --server HOST:PORT ...": an option's first line in --help.
# Description lines are indented further, so a "--flag" they mention is not taken for one.
OPTION_LINE = re.compile(r"^  (?:-\w,)?(--[A-Za-z0-9][\w-]*)")
# "  pipeline     Create, ..." in a Subcommands: block.
SUBCOMMAND_LINE = re.compile(r"^  ([a-z][\w-]*)(?:\s{2,}|$)")
HEADING = re.compile(r"^([A-Z][\w ]*):$")


def parse_help(text):
    """(long options, subcommands) of one --help text."""
    options, subcommands = [], []
    block = None
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading:
            block = heading.group(1)
            continue
        if block in ("Positionals", "Examples", None):
            continue
        if block == "Subcommands":
            m = SUBCOMMAND_LINE.match(line)
            if m:
                subcommands.append(m.group(1))
            continue
        m = OPTION_LINE.match(line)  # Options:, Security: and any other option group
        if m:
            options.append(m.group(1))
    return options, subcommands


def plain_source(path):
    """The page's roff source with escapes that stand for themselves undone: \\- is -, font
    changes and zero-width escapes go, so that words and options can be searched for."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("\\-", "-").replace("\\e", "\\")
    text = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", text)
    text = re.sub(r"\\[&%c]", "", text)
    text = text.replace("\\(dq", '"').replace("\\(aq", "'")
    return text


def bold_words(path):
    """The text a page sets in bold: .B/.BR/.BI/.SS lines and \\fB...\\fR runs."""
    with open(path, encoding="utf-8") as f:
        raw = f.read().replace("\\-", "-")
    runs = []
    for line in raw.splitlines():
        m = re.match(r"^\.(B|BR|BI|IB|RB|SS|SH)\s+(.*)$", line)
        if m:
            runs.append(m.group(2))
    runs += re.findall(r"\\fB(.*?)(?=\\f[RPI]|$)", raw, re.M)
    text = "\n".join(runs)
    return re.sub(r"\\f(\[[^\]]*\]|\(..|.)|\\[&%c]", "", text)


def has_word(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def has_key(text, key):
    # A key may be written on its own or as part of a dotted path (tls.cert_file).
    return re.search(r"(?<!\w)" + re.escape(key) + r"(?!\w)", text) is not None


def yaml_keys(path):
    """Every key of config/ckptd.yaml: those in effect, those of the commented-out examples
    (a comment that is YAML: '#' followed by no space or by an indented key), and the keys of
    flow maps on such lines."""
    keys = set()
    key_at_start = re.compile(r"^\s*(?:-\s+)?([a-z][a-z0-9_]*):(?:\s|$)")
    flow_map = re.compile(r"\{([^{}]*)\}")
    flow_key = re.compile(r"(?:^|,)\s*([a-z][a-z0-9_]*):")
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            stripped = line.lstrip()
            if not stripped:
                continue
            if stripped.startswith("#"):
                after = stripped[1:]
                # Prose is "# Text"; a commented example is "#key:" or "#  key:" (deeper).
                if not (after[:1] not in (" ", "") or after.startswith("  ")):
                    continue
                yaml_part = after
            else:
                yaml_part = line.split(" #", 1)[0]
            m = key_at_start.match(yaml_part)
            if m:
                keys.add(m.group(1))
            if m or re.match(r"^\s*-\s+\{", yaml_part):
                for flow in flow_map.findall(yaml_part):
                    keys.update(flow_key.findall(flow))
    return keys


def parser_keys():
    """Every key the config parser accepts: the k...Keys[] tables of server/config."""
    keys = set()
    for path in glob.glob(os.path.join(SOURCE_DIR, "server", "config", "*.cc")):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for table in re.findall(r"std::string_view k\w*Keys\[\]\s*=\s*\{(.*?)\};", source, re.S):
            keys.update(re.findall(r'"([a-z][a-z0-9_]*)"', table))
    return keys


class ManPagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ws = e2e.Workspace(BUILD_DIR)
        cls.pages = sorted(glob.glob(os.path.join(MAN_DIR, "*.[1-8]")))

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    def page(self, name):
        path = os.path.join(MAN_DIR, name)
        self.assertTrue(os.path.exists(path), f"docs/man/{name} is missing")
        return path

    def help_of(self, binary, *args):
        r = subprocess.run([self.ws.binary(binary), *args, "--help"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, f"{binary} {' '.join(args)} --help: {r.stderr}")
        return r.stdout

    def assert_options_on_page(self, options, page, what):
        text = plain_source(page)
        missing = [o for o in options if not has_word(text, o)]
        self.assertEqual(missing, [], f"{what}: not on {os.path.basename(page)}")

    def test_the_expected_pages_exist(self):
        names = {os.path.basename(p) for p in self.pages}
        expected = {"ckptd.8", "ckptd.yaml.5", "ckptctl.1", "ckpt-worker-sim.1"}
        expected |= {f"ckptctl-{g}.1" for g in CKPTCTL_GROUP_PAGES}
        self.assertEqual(sorted(expected - names), [])

    def test_pages_render_without_warnings(self):
        e2e.need_tool(self, shutil.which("groff"), "groff (Debian package groff-base)")
        for page in self.pages:
            with self.subTest(page=os.path.basename(page)):
                r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr.strip(), "", "groff warnings")
                self.assertEqual(r.stdout, "")

    def test_pages_have_their_header_and_sections(self):
        for page in self.pages:
            name = os.path.basename(page)
            with self.subTest(page=name):
                with open(page, encoding="utf-8") as f:
                    source = f.read()
                title, section = name.rsplit(".", 1)
                th = re.search(r'^\.TH (\S+) (\d) "(\d{4}-\d\d-\d\d)" "ckptd [\d.]+" '
                               r'"ckptd Manual"$', source, re.M)
                self.assertIsNotNone(th, ".TH NAME SECTION DATE SOURCE MANUAL")
                self.assertEqual(th.group(1).replace("\\-", "-").lower(), title.lower())
                self.assertEqual(th.group(2), section)
                headings = re.findall(r"^\.SH (.*)$", source, re.M)
                for needed in ("NAME", "DESCRIPTION", "EXAMPLES", "SEE ALSO"):
                    self.assertIn(needed, headings)
                examples = source.split(".SH EXAMPLES", 1)[1].split("\n.SH ", 1)[0]
                self.assertRegex(examples, r"\.EX\n", "EXAMPLES shows no example")

    def test_see_also_names_pages_that_exist(self):
        names = {os.path.basename(p) for p in self.pages}
        for page in self.pages:
            with self.subTest(page=os.path.basename(page)):
                text = plain_source(page)
                for ref, section in re.findall(r"\b(ckpt[\w.-]*)\s*\((\d)\)", text):
                    self.assertIn(f"{ref}.{section}", names, f"{ref}({section}) has no page")

    def test_ckptctl_commands_and_options(self):
        top = self.page("ckptctl.1")
        options, groups = parse_help(self.help_of("ckptctl"))
        self.assertGreaterEqual(len(groups), len(CKPTCTL_GROUP_PAGES), "no Subcommands: parsed")
        self.assertIn("--server", options)
        self.assertIn("--ca-file", options)
        self.assert_options_on_page(options, top, "ckptctl --help")
        top_text = plain_source(top)
        for group in groups:
            self.assertTrue(has_word(top_text, group), f"command {group} is not on ckptctl.1")
        self.assertEqual(sorted(set(CKPTCTL_GROUP_PAGES) - set(groups)), [],
                         "a command with a page is gone from ckptctl --help")
        for group in groups:
            with self.subTest(group=group):
                own = os.path.join(MAN_DIR, f"ckptctl-{group}.1")
                page = own if os.path.exists(own) else top
                sub_options, subs = parse_help(self.help_of("ckptctl", group))
                self.assert_options_on_page(sub_options, page, f"ckptctl {group} --help")
                text = plain_source(page)
                headings = re.findall(r"^\.SS (.*)$", text, re.M)
                for sub in subs:
                    self.assertTrue(has_word(text, sub), f"{group} {sub} is not on the page")
                    if page == own:
                        self.assertIn(sub, headings, f"{group} {sub} has no .SS subsection")
                    leaf_options, _ = parse_help(self.help_of("ckptctl", group, sub))
                    self.assert_options_on_page(leaf_options, page,
                                                f"ckptctl {group} {sub} --help")

    def test_ckptd_options(self):
        options, _ = parse_help(self.help_of("ckptd"))
        self.assertIn("--check-config", options)
        self.assert_options_on_page(options, self.page("ckptd.8"), "ckptd --help")

    def test_worker_sim_options(self):
        options, _ = parse_help(self.help_of("ckpt-worker-sim"))
        self.assertIn("--tasks-per-pipeline", options)
        self.assertIn("--token-file", options)
        self.assert_options_on_page(options, self.page("ckpt-worker-sim.1"),
                                    "ckpt-worker-sim --help")

    def test_config_keys(self):
        page = self.page("ckptd.yaml.5")
        in_file = yaml_keys(os.path.join(SOURCE_DIR, "config", "ckptd.yaml"))
        parsed = parser_keys()
        # The parsing above must keep finding what it is there to find.
        for key in ("listen", "max_pipelines", "cert_file", "token_sha256", "endpoints",
                    "interval_ms", "checkpoint_id", "web_view"):
            self.assertIn(key, in_file | parsed)
        self.assertIn("election_ttl_ms", parsed)
        self.assertIn("per_pipeline", in_file)
        bold = bold_words(page)
        missing = sorted(k for k in in_file | parsed if not has_key(bold, k))
        self.assertEqual(missing, [], "keys not set in bold on ckptd.yaml.5")
        stray = sorted(in_file - parsed)
        self.assertEqual(stray, [], "keys of config/ckptd.yaml the parser does not know")


if __name__ == "__main__":
    e2e.main(globals())
